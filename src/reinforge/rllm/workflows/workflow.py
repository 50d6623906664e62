"""Mirror of ``rllm.workflows.workflow``."""

from reinforge.workflows.episode import TerminationEvent, TerminationReason, Workflow

__all__ = ["TerminationEvent", "TerminationReason", "Workflow"]
