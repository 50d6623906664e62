"""Workflows over text environments: FrozenLake (gymnasium), ScienceWorld (optional),
email search over a generated mailbox and WebShop over a generated catalogue."""

from reinforge.workflows.envs.email_search import EmailSearchWorkflow
from reinforge.workflows.envs.frozen_lake import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow
from reinforge.workflows.envs.sciworld import SciWorldWorkflow
from reinforge.workflows.envs.webshop import StepWiseWebShopWorkflow, WebShopWorkflow

__all__ = [
    "EmailSearchWorkflow",
    "FrozenLakeWorkflow",
    "SciWorldWorkflow",
    "StepWiseFrozenLakeWorkflow",
    "StepWiseWebShopWorkflow",
    "WebShopWorkflow",
]
