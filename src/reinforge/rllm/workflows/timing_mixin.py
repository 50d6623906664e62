"""Mirror of ``rllm.workflows.timing_mixin``."""

from reinforge.workflows.episode import TimingTrackingMixin

__all__ = ["TimingTrackingMixin"]
