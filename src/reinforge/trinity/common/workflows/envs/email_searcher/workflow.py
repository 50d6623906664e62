"""Mirror of ``trinity.common.workflows.envs.email_searcher.workflow``."""

from reinforge.envs.email_search.workflow import EmailSearchWorkflow

__all__ = ["EmailSearchWorkflow"]
