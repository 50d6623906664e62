"""The Ray backend: runner actors and vLLM replica actors in the run's placement groups.

The scheduler contract is the local one (``run(requests, on_result)``). A request
crosses to an actor as plain data (its Task as ``Task.to_dict``, rebuilt with
``Task.from_dict`` there, where the actor's own registries resolve the workflow and
reward names); results (``messages``) cross unchanged. Each runner actor holds a pool of ``WorkflowRunner`` objects over an ``openai`` engine
pointed at the policy's vLLM replicas; every call carries the driver's current
*policy state* (replica URLs, the model or LoRA name to request, the weight
version), so an actor that Ray restarts after a crash needs no other message to
serve the newest policy. Ray re-runs the call a dead actor was running
(``max_task_retries``); the workflow attempt starts over, nothing is lost.

vLLM replicas run as actors that own the server process (``VLLMServer``); a killed
replica actor takes its server with it (the supervisor sees its parent die), Ray
restarts the actor, and the engine's monitor starts a new server in it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from reinforge.core import Task
from reinforge.explorer.cluster_config import ClusterConfig
from reinforge.explorer.messages import FAILED, TaskRequest, TaskResult

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WireRequest:
    """A TaskRequest as it crosses to a runner actor: its Task as plain data, so that
    the actor resolves the workflow and reward names against its own registries."""

    task: dict[str, Any]
    others: dict[str, Any]  # the request's other fields

    @classmethod
    def of(cls, request: TaskRequest) -> WireRequest:
        others = {f.name: getattr(request, f.name) for f in fields(request) if f.name != "task"}
        return cls(request.task.to_dict(), others)

    def rebuilt(self) -> TaskRequest:
        return TaskRequest(task=Task.from_dict(self.task), **self.others)


@dataclass(frozen=True)
class PolicyState:
    """What a runner actor needs to sample from the current policy."""

    urls: tuple[str, ...]
    model: str
    version: int


def init_ray(cluster: ClusterConfig) -> Any:
    """Start (``address: local``) or join a Ray cluster; loopback only for a local one."""
    import ray

    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if cluster.address == "local":
        ray.init(
            num_cpus=cluster.num_cpus or os.cpu_count(),
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            log_to_driver=False,
            configure_logging=False,
        )
    else:
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
    return ray


class _RunnerPool:
    """The body of a runner actor (a plain class, so it is testable without Ray)."""

    def __init__(
        self,
        tokenizer_path: str,
        concurrency: int,
        runner_args: dict[str, Any],
        setup: tuple[Callable[..., Any], tuple] | None = None,
        auxiliary_specs: list[dict[str, Any]] | None = None,
    ) -> None:
        import reinforge.workflows  # noqa: F401  (registers the built-in workflows)

        if setup is not None:
            fn, args = setup
            fn(*args)
        self.tokenizer_path = tokenizer_path
        self.concurrency = concurrency
        self.runner_args = runner_args
        self.auxiliary_specs = auxiliary_specs or []
        self.auxiliary: Any = None
        self.state: PolicyState | None = None
        self.engine: Any = None
        self._free: asyncio.Queue | None = None

    def _apply(self, state: PolicyState) -> None:
        from reinforge.explorer.runner import WorkflowRunner
        from reinforge.models.engines.openai import OpenAIEngine

        if self.engine is None:
            self.engine = OpenAIEngine(
                list(state.urls), model=state.model, tokenizer_path=self.tokenizer_path, check=False
            )
            from reinforge.models.auxiliary import AuxiliaryModels

            self.auxiliary = AuxiliaryModels.from_specs(self.auxiliary_specs, self.engine)
            self._free = asyncio.Queue()
            for i in range(self.concurrency):
                self._free.put_nowait(
                    WorkflowRunner(
                        self.engine,
                        runner_id=i,
                        auxiliary_models=self.auxiliary.clients(),
                        **self.runner_args,
                    )
                )
        elif state.urls != self.state.urls:
            self.engine.set_urls(list(state.urls))
        self.engine.served_model = state.model
        self.engine._model_version = state.version
        self.state = state

    async def run(self, request: WireRequest, state: PolicyState) -> TaskResult:
        if state != self.state:
            self._apply(state)
        runner = await self._free.get()
        try:
            return await runner.run(request.rebuilt())
        finally:
            self._free.put_nowait(runner)

    def pid(self) -> int:
        return os.getpid()


class _ReplicaHost:
    """The body of a vLLM replica actor: it owns one ``VLLMServer`` process."""

    def __init__(self, server_args: dict[str, Any], bind_node_ip: bool) -> None:
        import ray

        from reinforge.models.engines.vllm.server import VLLMServer

        if bind_node_ip:  # other nodes must reach it
            server_args = {**server_args, "host": ray.util.get_node_ip_address()}
        self.server = VLLMServer(**server_args)
        self.started = False

    def start(self, model_dir: str | None, timeout: float) -> tuple[str, int]:
        """Start the server; its URL and process group (which the driver kills if this
        actor dies with it still running: Ray SIGKILLs a dead actor's children only)."""
        self.server.start(model_dir)
        self.server.wait_ready(timeout)
        self.started = True
        return self.server.url, self.server.process.pid

    def alive(self) -> bool:
        return self.started and self.server.alive()

    def stop(self) -> None:
        self.server.stop()
        self.started = False

    def pid(self) -> int:
        return os.getpid()


class RayReplica:
    """A vLLM replica actor, seen by ``VLLMEngine`` like a local ``VLLMServer``."""

    def __init__(self, actor: Any, log_path: Path) -> None:
        self.actor = actor
        self.log_path = log_path
        self.url = ""
        self.port = 0
        self.pgid = 0
        self.process = None  # the server process lives in the actor

    def start(self, model_dir: str | Path | None = None) -> None:
        self._model_dir = str(model_dir) if model_dir is not None else None

    def wait_ready(self, timeout: float, progress: Any = None) -> float:
        import ray

        started = self.actor.start.remote(self._model_dir, timeout)
        self.url, self.pgid = ray.get(started, timeout=timeout + 30)
        self.port = int(self.url.rsplit(":", 1)[1])
        return 0.0

    def alive(self) -> bool:
        import ray

        try:
            return bool(ray.get(self.actor.alive.remote(), timeout=30))
        except Exception:  # the actor is dead or restarting
            return False

    def stop(self, grace: float = 10.0) -> None:
        import ray

        with contextlib.suppress(Exception):
            ray.get(self.actor.stop.remote(), timeout=grace + 30)
        if self.pgid and self.url.startswith("http://127.0.0.1:"):  # on this machine
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pgid, signal.SIGKILL)
        self.pgid = 0


class Placement:
    """The run's placement groups: one with a bundle per vLLM replica, then one per
    trainer rank (``placement_strategy``, PACK by default), and one with a bundle per
    runner actor (``runner_strategy``, SPREAD by default: on a cluster of several nodes
    the rollouts run on all of them instead of the node that had room first).

    Where the Ray cluster has GPUs, each replica's bundle and each trainer rank's
    reserves one (``num_gpus=1``), so Ray hands every replica and rank a GPU of its
    own (``CUDA_VISIBLE_DEVICES``) instead of all of them opening GPU 0.
    """

    def __init__(
        self,
        cluster: ClusterConfig,
        replicas: int,
        timeout: float = 120.0,
        trainer_ranks: int = 0,
        trainer_cpus: float = 1.0,
    ) -> None:
        import ray

        self.replicas = replicas
        self.runners = cluster.runner_actors
        self.gpus = 1.0 if ray.cluster_resources().get("GPU", 0) > 0 else 0.0
        gpu = {"GPU": self.gpus} if self.gpus else {}
        bundles = [{"CPU": cluster.engine_cpus, **gpu}] * replicas
        bundles += [{"CPU": trainer_cpus, **gpu}] * trainer_ranks
        self.groups: list[Any] = []
        try:
            # the GPU and rank bundles first: the runners take what CPUs are left
            self.group = self._reserve(bundles, cluster.placement_strategy, timeout)
            runners = [{"CPU": cluster.runner_cpus}] * cluster.runner_actors
            self.runner_group = self._reserve(runners, cluster.runner_strategy, timeout)
        except Exception as exc:
            self.remove()
            raise RuntimeError(
                f"Ray could not place {replicas} replica(s) x {cluster.engine_cpus} CPU and "
                f"{trainer_ranks} trainer rank(s) x {trainer_cpus} CPU"
                f"{' and 1 GPU each' if self.gpus else ''} ({cluster.placement_strategy}), "
                f"and {cluster.runner_actors} runner actor(s) x {cluster.runner_cpus} CPU "
                f"({cluster.runner_strategy}) within {timeout:g}s: {exc}; lower "
                "cluster.engine_cpus / runner_cpus or add nodes"
            ) from exc

    def _reserve(self, bundles: list[dict[str, float]], strategy: str, timeout: float) -> Any:
        """A placement group of ``bundles``, once Ray has reserved them (None for none)."""
        import ray
        from ray.util.placement_group import placement_group

        if not bundles:
            return None
        group = placement_group(bundles, strategy=strategy)
        self.groups.append(group)
        ray.get(group.ready(), timeout=timeout)
        return group

    @staticmethod
    def _bundle(group: Any, index: int) -> dict[str, Any]:
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        strategy = PlacementGroupSchedulingStrategy(group, placement_group_bundle_index=index)
        return {"scheduling_strategy": strategy}

    def replica(self, index: int) -> dict[str, Any]:
        return self._bundle(self.group, index)

    def runner(self, index: int) -> dict[str, Any]:
        return self._bundle(self.runner_group, index)

    def trainer_rank(self, index: int) -> dict[str, Any]:
        """Actor options of trainer rank ``index``: its bundle, and its GPU if any."""
        options = self._bundle(self.group, self.replicas + index)
        return {**options, "num_gpus": self.gpus} if self.gpus else options

    def remove(self) -> None:
        from ray.util.placement_group import remove_placement_group

        for group in self.groups:
            with contextlib.suppress(Exception):
                remove_placement_group(group)


def replica_factory(
    cluster: ClusterConfig, placement: Placement | None = None
) -> Callable[..., RayReplica]:
    """Builds vLLM replicas as Ray actors (``VLLMEngine(server_factory=...)``)."""
    import ray

    host = ray.remote(_ReplicaHost)
    base = {"num_cpus": cluster.engine_cpus, "max_restarts": cluster.max_restarts}
    made = 0

    def make(**server_args: Any) -> RayReplica:
        nonlocal made
        options = placement.replica(made) if placement is not None else {}
        if placement is not None and placement.gpus:
            options = {**options, "num_gpus": placement.gpus}  # a GPU of its own
        made += 1
        actor = host.options(**base, **options).remote(server_args, cluster.address != "local")
        return RayReplica(actor, server_args["log_path"])

    return make


class RayScheduler:
    """Hands requests to runner actors, ``concurrency`` in flight per actor."""

    def __init__(
        self,
        cluster: ClusterConfig,
        *,
        tokenizer_path: str,
        total_concurrency: int,
        runner_args: dict[str, Any],
        policy_state: Callable[[], PolicyState],
        setup: tuple[Callable[..., Any], tuple] | None = None,
        placement: Placement | None = None,
        auxiliary_specs: list[dict[str, Any]] | None = None,
    ) -> None:
        import ray

        per_actor = max(1, total_concurrency // cluster.runner_actors)
        actor_cls = ray.remote(_RunnerPool)
        base = {
            "num_cpus": cluster.runner_cpus,
            "max_restarts": cluster.max_restarts,
            "max_task_retries": cluster.max_task_retries,
            "max_concurrency": per_actor + 1,
        }
        self.actors = [
            actor_cls.options(**base, **(placement.runner(i) if placement else {})).remote(
                tokenizer_path, per_actor, runner_args, setup, auxiliary_specs
            )
            for i in range(cluster.runner_actors)
        ]
        self.per_actor = per_actor
        self.policy_state = policy_state

    async def run(
        self, requests: list[TaskRequest], on_result: Callable[[TaskResult], None] | None = None
    ) -> list[TaskResult]:
        state = self.policy_state()
        results: list[TaskResult | None] = [None] * len(requests)
        queue: asyncio.Queue = asyncio.Queue()
        for item in enumerate(requests):
            queue.put_nowait(item)

        async def feed(actor: Any) -> None:
            while not queue.empty():
                index, request = queue.get_nowait()
                try:
                    result = await actor.run.remote(WireRequest.of(request), state)
                except Exception as exc:  # the actor died more often than Ray retries
                    result = TaskResult(
                        request.taskset,
                        str(request.task.batch_id),
                        str(request.task.task_id),
                        FAILED,
                        error=f"runner actor failed: {type(exc).__name__}: {exc}",
                    )
                results[index] = result
                if on_result is not None:
                    on_result(result)

        await asyncio.gather(*(feed(a) for a in self.actors for _ in range(self.per_actor)))
        return [r for r in results if r is not None]

    def close(self) -> None:
        import ray

        for actor in self.actors:
            ray.kill(actor)
