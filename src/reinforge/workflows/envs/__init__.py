"""Workflows over text environments: FrozenLake (gymnasium), ScienceWorld (optional),
email search over a generated mailbox, WebShop over a generated catalogue and ALFWorld
on TextWorld (optional)."""

from reinforge.workflows.envs.alfworld import (
    AlfworldWorkflow,
    RAFTAlfworldWorkflow,
    RAFTReflectAlfworldWorkflow,
    StepWiseAlfworldWorkflow,
)
from reinforge.workflows.envs.email_search import EmailSearchWorkflow
from reinforge.workflows.envs.frozen_lake import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow
from reinforge.workflows.envs.sciworld import SciWorldWorkflow
from reinforge.workflows.envs.webshop import StepWiseWebShopWorkflow, WebShopWorkflow

__all__ = [
    "AlfworldWorkflow",
    "EmailSearchWorkflow",
    "FrozenLakeWorkflow",
    "RAFTAlfworldWorkflow",
    "RAFTReflectAlfworldWorkflow",
    "SciWorldWorkflow",
    "StepWiseAlfworldWorkflow",
    "StepWiseFrozenLakeWorkflow",
    "StepWiseWebShopWorkflow",
    "WebShopWorkflow",
]
