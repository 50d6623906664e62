"""ALFWorld (Shridhar et al. 2021): household tasks in text, played on TextWorld's PDDL
engine with ALFWorld's domain and grammar (the ``alfworld`` extra).

Four workflows, under Trinity-RFT's names: ``alfworld_workflow`` (one experience per
episode), ``step_wise_alfworld_workflow`` (one per step, with state hashes),
``RAFT_alfworld_workflow`` and ``RAFT_reflect_alfworld_workflow`` (keep the good
trajectories for SFT). The package ships seventeen small games covering the six task
types (``data/``, written by ``generate.py`` from ``scenes.py``); official games are
read from their ``game.tw-pddl`` files (``game_file``).
"""

from reinforge.envs.alfworld.env import AlfworldEnv, TextWorldAlfworldEnv, make_env
from reinforge.envs.alfworld.games import (
    AlfworldGameError,
    game_file,
    shipped_game,
    shipped_games,
)
from reinforge.envs.alfworld.raft import RAFTAlfworldWorkflow, RAFTReflectAlfworldWorkflow
from reinforge.envs.alfworld.session import AlfworldEnvError
from reinforge.envs.alfworld.workflow import AlfworldWorkflow, StepWiseAlfworldWorkflow

__all__ = [
    "AlfworldEnv",
    "AlfworldEnvError",
    "AlfworldGameError",
    "AlfworldWorkflow",
    "RAFTAlfworldWorkflow",
    "RAFTReflectAlfworldWorkflow",
    "StepWiseAlfworldWorkflow",
    "TextWorldAlfworldEnv",
    "game_file",
    "make_env",
    "shipped_game",
    "shipped_games",
]
