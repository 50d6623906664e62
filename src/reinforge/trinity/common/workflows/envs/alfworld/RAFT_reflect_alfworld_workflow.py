"""Mirror of ``trinity.common.workflows.envs.alfworld.RAFT_reflect_alfworld_workflow``."""

from reinforge.envs.alfworld import RAFTReflectAlfworldWorkflow
from reinforge.envs.alfworld.prompts import parse_raft as parse_response

__all__ = ["RAFTReflectAlfworldWorkflow", "parse_response"]
