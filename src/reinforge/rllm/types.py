"""Mirror of ``rllm.types``: the trajectory data types."""

from reinforge.workflows.episode import Action, Episode, Step, Trajectory

__all__ = ["Action", "Episode", "Step", "Trajectory"]
