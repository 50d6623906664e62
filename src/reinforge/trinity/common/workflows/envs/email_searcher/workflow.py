"""Mirror of ``trinity.common.workflows.envs.email_searcher.workflow``."""

from reinforge.workflows.envs import EmailSearchWorkflow

__all__ = ["EmailSearchWorkflow"]
