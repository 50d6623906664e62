"""Mirror of ``rllm.environments``."""

from reinforge.workflows.episode import BaseEnv

__all__ = ["BaseEnv"]
