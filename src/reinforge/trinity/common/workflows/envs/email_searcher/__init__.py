"""Mirror of ``trinity.common.workflows.envs.email_searcher``."""
