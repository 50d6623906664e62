"""Mirror of ``rllm.workflows``: the episode ``Workflow`` and its termination types."""

from reinforge.workflows.episode import (
    TerminationEvent,
    TerminationReason,
    TimingTrackingMixin,
    Workflow,
)

__all__ = ["TerminationEvent", "TerminationReason", "TimingTrackingMixin", "Workflow"]
