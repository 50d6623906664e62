"""The ``cluster`` config section: where runners and engines run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reinforge.core.strict_model import StrictModel


class ClusterConfig(StrictModel):
    """``backend: local`` runs everything in this process tree; ``ray`` places the
    explorer's runners and the vLLM replicas as Ray actors. The rest of the YAML and
    the workflows do not change."""

    backend: Literal["local", "ray"] = "local"
    #: ``local`` starts a Ray instance for this run; anything else is passed to
    #: ``ray.init(address=...)`` (``auto`` joins the cluster ``ray start --head`` made)
    address: str = "local"
    #: CPUs of the Ray instance started for ``address: local`` (default: all)
    num_cpus: int | None = Field(None, ge=1)
    #: runner actors; each runs ``runner_concurrency / runner_actors`` workflows at once
    runner_actors: int = Field(2, ge=1)
    #: how the bundles of the vLLM replicas and the trainer ranks are placed (PACK: as
    #: few nodes as fit, so the ranks' collectives stay on one node where they can)
    placement_strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "PACK"
    #: how the runner actors' bundles (a placement group of their own) are placed;
    #: SPREAD puts them on as many nodes as there are actors, so the workflows' CPU
    #: work (tools, environments, reward code) uses every node of the cluster
    runner_strategy: Literal["PACK", "SPREAD", "STRICT_PACK", "STRICT_SPREAD"] = "SPREAD"
    #: CPUs reserved per runner actor and per vLLM replica actor
    runner_cpus: float = Field(0.5, gt=0)
    engine_cpus: float = Field(1.0, gt=0)
    #: times Ray restarts a dead actor (-1: always) and retries the call it was running
    max_restarts: int = Field(-1, ge=-1)
    max_task_retries: int = Field(3, ge=-1)
