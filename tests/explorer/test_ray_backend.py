"""The Ray backend with a real local Ray: runner actors, retried calls, replica actors.

The runner actors sample from a real OpenAI-compatible server: ``reinforge serve``'s
app over the tiny hf model here (vLLM replicas in the slow test below and in
tests/examples/test_ray_example.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reinforge.core import Task
from reinforge.explorer.cluster_config import ClusterConfig
from reinforge.explorer.messages import OK
from reinforge.explorer.scheduler import make_requests
from reinforge.launcher.plugins import load_plugins
from reinforge.models import ModelWrapper
from reinforge.models.engines.hf import HFEngine
from reinforge.models.openai_api.server import ServerThread, create_app

ray = pytest.importorskip("ray")

SLOW_WORKFLOW = '''
import time
from reinforge.workflows import WORKFLOWS, Workflow


@WORKFLOWS.register_module("ray_test_slow_chat", force=True)
class SlowChat(Workflow):
    """Samples one short reply, then takes its time (so an actor can die mid-task)."""

    def run(self):
        exp = self.model.chat([{"role": "user", "content": "hi"}], max_tokens=4)[0]
        time.sleep(float(self.task.raw_task["sleep"]))
        exp.reward = 1.0
        return [exp]
'''


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    from reinforge.explorer.ray_backend import init_ray

    init_ray(ClusterConfig(backend="ray", num_cpus=2))
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def served(tiny_model_path: Path) -> Iterator[str]:
    engine = HFEngine(tiny_model_path, seed=0)
    engine.update_weights({}, version=3)  # the served weights are version 3
    with ServerThread(create_app(ModelWrapper(engine).openai_service)) as server:
        yield server.url
    engine.close()


def scheduler(tmp_path: Path, url: str, tiny_model_path: Path, version: int = 3):
    from reinforge.explorer.ray_backend import PolicyState, RayScheduler

    plugin = tmp_path / "slow.py"
    plugin.write_text(SLOW_WORKFLOW)
    load_plugins([str(plugin)], None)
    return RayScheduler(
        ClusterConfig(backend="ray", runner_actors=2, runner_cpus=0.1),
        tokenizer_path=str(tiny_model_path),
        total_concurrency=4,
        runner_args={"default_max_tokens": 8},
        policy_state=lambda: PolicyState((url,), "tiny", version),
        setup=(load_plugins, ([str(plugin)], None)),
    )


def requests(n: int, sleep: float):
    tasks = [
        Task(workflow="ray_test_slow_chat", raw_task={"sleep": sleep}, task_id=str(i), batch_id=1)
        for i in range(n)
    ]
    return make_requests(tasks, taskset="t", timeout=60, max_retries=0)


def test_runner_actors_run_every_request(
    local_ray: None, served: str, tiny_model_path: Path, tmp_path: Path
) -> None:
    # the driver believes version 7 is served; the server says which weights sampled
    sched = scheduler(tmp_path, served, tiny_model_path, version=7)
    try:
        results = asyncio.run(sched.run(requests(6, 0.0)))
    finally:
        sched.close()
    assert [r.status for r in results] == [OK] * 6
    assert sorted(r.task_id for r in results) == [str(i) for i in range(6)]
    exps = [e for r in results for e in r.experiences]
    # the version that sampled, as the server reported it (a vLLM replica reports none:
    # then the driver's version when the request was sent, tests/models/test_sampling_versions)
    assert all(e.info["model_version"] == 3 for e in exps)
    assert all(e.response_length > 0 and len(e.logprobs) == e.response_length for e in exps)


def test_a_killed_runner_actor_loses_nothing(
    local_ray: None, served: str, tiny_model_path: Path, tmp_path: Path
) -> None:
    sched = scheduler(tmp_path, served, tiny_model_path)
    victim = sched.actors[0]
    first_pid = ray.get(victim.pid.remote())

    async def run_and_kill():
        job = asyncio.ensure_future(sched.run(requests(8, 1.0)))
        await asyncio.sleep(1.5)  # tasks are in flight on both actors
        ray.kill(victim, no_restart=False)
        return await job

    try:
        results = asyncio.run(run_and_kill())
        assert ray.get(victim.pid.remote()) != first_pid  # Ray brought it back
    finally:
        sched.close()
    assert [r.status for r in results] == [OK] * 8, [r.error for r in results]
    assert sorted(r.task_id for r in results) == [str(i) for i in range(8)]


# extended: two vLLM starts (~2 min); a killed vLLM replica coming back with the newest
# weights is in the default suite (tests/models/engines/test_vllm_engine.py)
@pytest.mark.slow
@pytest.mark.vllm
@pytest.mark.extended
def test_a_killed_replica_actor_comes_back(
    local_ray: None, vllm_python: str, real_model_path: Path, tmp_path: Path, vllm_processes_under
) -> None:
    from reinforge.explorer.ray_backend import replica_factory
    from reinforge.models.engine import SamplingParams
    from reinforge.models.engines.vllm import VLLMEngine

    engine = VLLMEngine(
        real_model_path,
        python=vllm_python,
        kv_cache_gb=1,
        max_model_len=512,
        health_interval=0.5,
        work_dir=tmp_path / "vllm",
        server_factory=replica_factory(ClusterConfig(backend="ray", engine_cpus=0.5)),
    )
    try:
        prompt = engine.tokenizer.encode("Hello")
        assert engine.generate(prompt, SamplingParams(max_tokens=3))[0].token_ids
        ray.kill(engine.servers[0].actor, no_restart=False)
        deadline = time.monotonic() + 300
        while engine.restarts == 0:
            assert time.monotonic() < deadline, "the replica actor did not come back"
            time.sleep(0.5)
        assert engine.generate(prompt, SamplingParams(max_tokens=3))[0].token_ids
    finally:
        engine.close()
    deadline = time.monotonic() + 30  # the killed actor's server was killed by the driver
    while vllm_processes_under(tmp_path / "vllm"):
        assert time.monotonic() < deadline, "vLLM processes outlived the engine"
        time.sleep(0.5)
