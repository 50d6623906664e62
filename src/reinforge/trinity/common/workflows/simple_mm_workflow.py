"""Mirror of ``trinity.common.workflows.simple_mm_workflow``."""

from reinforge.workflows import AsyncSimpleMMWorkflow, SimpleMMWorkflow

__all__ = ["AsyncSimpleMMWorkflow", "SimpleMMWorkflow"]
