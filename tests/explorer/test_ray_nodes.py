"""Rollouts on every node of a Ray cluster: a local cluster of two raylets
(``ray.cluster_utils.Cluster``, each with its own CPUs and temp folder), the run's
placement as ``cluster.backend: ray`` makes it, and runner actors that sample from a
real OpenAI-compatible server. Each rollout records the node it ran on; with the
default ``cluster.runner_strategy`` the two runner actors' rollouts come from both
nodes, though either node alone has room for both actors.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

NODE_WORKFLOW = '''
import ray
from reinforge.workflows import WORKFLOWS, Workflow


@WORKFLOWS.register_module("ray_test_node_chat", force=True)
class NodeChat(Workflow):
    """Samples one short reply and notes the Ray node that ran it."""

    def run(self):
        exp = self.model.chat([{"role": "user", "content": "hi"}], max_tokens=4)[0]
        exp.info["node"] = ray.get_runtime_context().get_node_id()
        exp.reward = 1.0
        return [exp]
'''


@pytest.fixture
def two_nodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Two raylets of 2 CPUs, each with its own temp folder (short paths, for Ray's
    socket names); their node ids. The cluster is not recorded as the machine's
    current one, where a parallel test's ``ray.init()`` would join it."""
    import ray._private.utils
    from ray.cluster_utils import Cluster

    monkeypatch.setattr(ray._private.utils, "write_ray_address", lambda *_, **__: None)
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "0")
    roots = [Path(tempfile.mkdtemp(prefix="rf-node")) for _ in range(2)]
    nodes: list[dict[str, Any]] = [
        {
            "num_cpus": 2,
            "temp_dir": str(root / "ray"),
            "env_vars": {"TMPDIR": str(root)},
            "include_dashboard": False,
        }
        for root in roots
    ]
    cluster = Cluster(initialize_head=True, head_node_args=nodes[0])
    try:
        cluster.add_node(**nodes[1])
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        yield [node["NodeID"] for node in ray.nodes() if node["Alive"]]
    finally:
        ray.shutdown()
        cluster.shutdown()
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def served(tiny_model_path: Path) -> Iterator[str]:
    engine = HFEngine(tiny_model_path, seed=0)
    with ServerThread(create_app(ModelWrapper(engine).openai_service)) as server:
        yield server.url
    engine.close()


@pytest.mark.needs("ray")
@pytest.mark.timeout(600)
def test_runner_actors_roll_out_on_both_nodes(
    two_nodes: list[str], served: str, tiny_model_path: Path, tmp_path: Path
) -> None:
    from reinforge.explorer.ray_backend import Placement, PolicyState, RayScheduler

    assert len(two_nodes) == 2
    plugin = tmp_path / "node_chat.py"
    plugin.write_text(NODE_WORKFLOW)
    load_plugins([str(plugin)], None)
    # 2 x 0.5 CPU: either node alone has room for both runner actors
    cluster = ClusterConfig(backend="ray", address="auto", runner_actors=2, runner_cpus=0.5)
    placement = Placement(cluster, 0)
    sched = None
    try:
        sched = RayScheduler(
            cluster,
            tokenizer_path=str(tiny_model_path),
            total_concurrency=4,
            runner_args={"default_max_tokens": 4},
            policy_state=lambda: PolicyState((served,), "tiny", 0),
            setup=(load_plugins, ([str(plugin)], None)),
            placement=placement,
        )
        tasks = [
            Task(workflow="ray_test_node_chat", raw_task={}, task_id=str(i), batch_id=1)
            for i in range(8)
        ]
        results = asyncio.run(
            sched.run(make_requests(tasks, taskset="t", timeout=120, max_retries=0))
        )
    finally:
        if sched is not None:
            sched.close()
        placement.remove()
    assert [r.status for r in results] == [OK] * 8, [r.error for r in results]
    nodes = {e.info["node"] for r in results for e in r.experiences}
    assert nodes == set(two_nodes)
