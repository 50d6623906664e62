"""Mirror of ``trinity.common.workflows.envs.alfworld.RAFT_alfworld_workflow``."""

from reinforge.envs.alfworld import RAFTAlfworldWorkflow
from reinforge.envs.alfworld.prompts import parse_raft as parse_response

__all__ = ["RAFTAlfworldWorkflow", "parse_response"]
