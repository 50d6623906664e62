"""Mirror of ``trinity.common.workflows.customized_toolcall_workflows`` (reinforge's
``ToolCallWorkflow`` differs from Trinity-RFT's: see docs/migrating.md)."""

from reinforge.workflows import ToolCallWorkflow

__all__ = ["ToolCallWorkflow"]
