"""Mirror of ``rllm.workflows.simple_workflow``: ``SimpleWorkflow`` and its ``SimpleAgent``."""

from reinforge.workflows.episode.simple_workflow import SimpleAgent, SimpleWorkflow

__all__ = ["SimpleAgent", "SimpleWorkflow"]
