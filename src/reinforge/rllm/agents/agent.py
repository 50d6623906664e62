"""Mirror of ``rllm.agents.agent``."""

from reinforge.workflows.episode import Action, BaseAgent, Episode, Step, Trajectory

__all__ = ["Action", "BaseAgent", "Episode", "Step", "Trajectory"]
