"""The environments wing: text environments an agent acts in, each one folder with its
workflows, its environment and its shipped data.

=================  ==============================================================
``frozen_lake``    gymnasium's FrozenLake in text (the ``gym`` extra)
``sciworld``       ScienceWorld (the ``envs`` extra and a Java runtime)
``email_search``   questions about a generated company mailbox (SQLite FTS5 tools)
``webshop``        shopping in a generated catalogue behind WebShop's interface
``alfworld``       household tasks on TextWorld's engine (the ``alfworld`` extra)
=================  ==============================================================

Nothing here is imported by ``import reinforge``, the CLI or the workflow registry
until a config names one of these workflows: each environment's workflows are
listed as entry points (``[project.entry-points."reinforge.workflows"]`` in
pyproject.toml), which ``WORKFLOWS.get`` loads on first use. A package of your own
can add environments the same way. The names below also load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reinforge.core.lazy_exports import lazy_exports

_EXPORTS = {
    "AlfworldWorkflow": "reinforge.envs.alfworld",
    "RAFTAlfworldWorkflow": "reinforge.envs.alfworld",
    "RAFTReflectAlfworldWorkflow": "reinforge.envs.alfworld",
    "StepWiseAlfworldWorkflow": "reinforge.envs.alfworld",
    "EmailSearchWorkflow": "reinforge.envs.email_search.workflow",
    "FrozenLakeWorkflow": "reinforge.envs.frozen_lake",
    "StepWiseFrozenLakeWorkflow": "reinforge.envs.frozen_lake",
    "SciWorldWorkflow": "reinforge.envs.sciworld",
    "StepWiseWebShopWorkflow": "reinforge.envs.webshop",
    "WebShopWorkflow": "reinforge.envs.webshop",
}

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

if TYPE_CHECKING:
    from reinforge.envs.alfworld import (
        AlfworldWorkflow,
        RAFTAlfworldWorkflow,
        RAFTReflectAlfworldWorkflow,
        StepWiseAlfworldWorkflow,
    )
    from reinforge.envs.email_search.workflow import EmailSearchWorkflow
    from reinforge.envs.frozen_lake import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow
    from reinforge.envs.sciworld import SciWorldWorkflow
    from reinforge.envs.webshop import StepWiseWebShopWorkflow, WebShopWorkflow

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
