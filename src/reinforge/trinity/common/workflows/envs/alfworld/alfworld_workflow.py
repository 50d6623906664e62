"""Mirror of ``trinity.common.workflows.envs.alfworld.alfworld_workflow``.

``parse_action`` (the command inside ``<action>``) and ``format_observation``
(``Observation: ...``, with a hint after ``Nothing happens.``) are the helpers that
module has.
"""

from reinforge.envs.alfworld import AlfworldWorkflow, StepWiseAlfworldWorkflow
from reinforge.envs.alfworld.prompts import observation_message, parse_action


def format_observation(observation: str) -> str:
    return observation_message(observation)


__all__ = ["AlfworldWorkflow", "StepWiseAlfworldWorkflow", "format_observation", "parse_action"]
