"""Mirror of ``rllm.environments.base``."""

from reinforge.workflows.episode import BaseEnv

__all__ = ["BaseEnv"]
