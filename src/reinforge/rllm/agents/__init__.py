"""Mirror of ``rllm.agents``: ``BaseAgent`` and the trajectory data types."""

from reinforge.workflows.episode import Action, BaseAgent, Episode, Step, Trajectory

__all__ = ["Action", "BaseAgent", "Episode", "Step", "Trajectory"]
