"""Mirror of ``rllm.environments.base.base_env``."""

from reinforge.workflows.episode import BaseEnv

__all__ = ["BaseEnv"]
