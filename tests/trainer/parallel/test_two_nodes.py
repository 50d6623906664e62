"""Two trainer ranks on two Ray nodes that share no filesystem: a local Ray cluster of
two raylets (``ray.cluster_utils.Cluster``), each with its own CPUs and its own temp
folder. The ranks land on different nodes, train, checkpoint into the driver's run
folder, are killed, and resume from that checkpoint to the uninterrupted run's weights.

Each node's ``TMPDIR`` is a different folder, and a rank writes its checkpoint files
only into a staging folder there: the checkpoint on the driver's side is complete only
if every rank's shards traveled to it (and on resume, back to the ranks).
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.core import Experience
from reinforge.trainer.checkpoint import CheckpointManager
from reinforge.trainer.parallel.ranked_trainer import RankedTrainer, TrainerRankError
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

TOLERANCE = 1e-4  # as test_rank_checkpoints.py


def config(world_size: int) -> TrainerConfig:
    data: dict[str, Any] = {"lr": 1e-3, "micro_batch_size": 3}
    if world_size > 1:
        data["parallel"] = {
            "world_size": world_size,
            "strategy": "fsdp2",
            "timeout_s": 300,
            "threads_per_rank": 1,
        }
    return TrainerConfig.model_validate(data)


@pytest.fixture
def two_nodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[Path]]]:
    """A head node (3 CPUs: the driver's) and a second node (2 CPUs), each with its own
    temp folder; short paths, for Ray's socket names. The cluster is not recorded as
    the machine's current one (``/tmp/ray/ray_current_cluster``), where a parallel
    test's ``ray.init()`` would join it."""
    import ray
    import ray._private.utils
    from ray.cluster_utils import Cluster

    monkeypatch.setattr(ray._private.utils, "write_ray_address", lambda *_, **__: None)
    # the raylets must not kill ranks for memory that other processes on this machine use
    monkeypatch.setenv("RAY_memory_monitor_refresh_ms", "0")
    roots = [Path(tempfile.mkdtemp(prefix="rf-node")) for _ in range(2)]
    nodes = [
        {
            "num_cpus": cpus,
            "temp_dir": str(root / "ray"),
            "env_vars": {"TMPDIR": str(root)},
            "include_dashboard": False,
        }
        for cpus, root in zip((3, 2), roots, strict=True)
    ]
    cluster = Cluster(initialize_head=True, head_node_args=nodes[0])
    try:
        cluster.add_node(**nodes[1])
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
        yield ray, roots
    finally:
        ray.shutdown()
        cluster.shutdown()
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


@pytest.mark.needs("ray")
@pytest.mark.timeout(900)  # a Ray cluster and two sets of two rank processes start
def test_two_nodes_train_checkpoint_die_and_resume(
    two_nodes: tuple[Any, list[Path]],
    tiny_model_path: Path,
    rank_batch: list[Experience],
    tmp_path: Path,
) -> None:
    from reinforge.explorer.cluster_config import ClusterConfig
    from reinforge.explorer.ray_backend import Placement

    ray, roots = two_nodes

    def batch() -> list[Experience]:
        return copy.deepcopy(rank_batch)

    reference = Trainer(tiny_model_path, config(1), pad_token_id=0)
    base = {k: v.clone() for k, v in reference.weights_for_sync().items()}
    steps = []  # the uninterrupted run's weights after steps 1 and 2
    for _ in range(2):
        reference.train_step(batch())
        steps.append({k: v.clone() for k, v in reference.weights_for_sync().items()})

    # bundles of 1 (runner), 2 and 2 (ranks) CPUs on nodes of 3 and 2: one rank per node
    cluster = ClusterConfig(backend="ray", runner_actors=1, runner_cpus=1)
    placement = Placement(cluster, 0, trainer_ranks=2, trainer_cpus=2)
    checkpoints = CheckpointManager(tmp_path / "checkpoints")
    try:
        ranks = RankedTrainer(tiny_model_path, config(2), pad_token_id=0, placement=placement)
        with ranks:
            nodes = ray.get([proc.actor.node_id.remote() for proc in ranks._procs])
            assert len(set(nodes)) == 2
            # each rank stages on its own node's disk
            assert all(list(root.glob("reinforge-rank-*")) for root in roots)
            ranks.train_step(batch())
            at_save = ranks.weights_for_sync()
            assert difference(at_save, steps[0]) < TOLERANCE
            saved = checkpoints.save(1, ranks.save_checkpoint)
            for name in ("__0_0.distcp", "__1_0.distcp", ".metadata"):
                assert (saved / "optim" / name).is_file()
            assert (saved / "model" / "model.safetensors").is_file()
            assert (saved / "scheduler.pt").is_file()
            ranks.train_step(batch())  # step 2, lost: no checkpoint holds it
            ray.kill(ranks._procs[1].actor)  # rank 1 and its node's staging are gone
            with pytest.raises(TrainerRankError):
                ranks.train_step(batch())

        resumed = RankedTrainer(tiny_model_path, config(2), pad_token_id=0, placement=placement)
        with resumed:
            path, _ = checkpoints.load_latest(resumed.load_checkpoint)
            assert path == saved and resumed.global_step == 1
            assert difference(resumed.weights_for_sync(), at_save) == 0.0
            resumed.train_step(batch())
            weights = resumed.weights_for_sync()
        # closed, its ranks' hosts are gone although handles to them remain: they held
        # the bundles that ranks started next in this placement would wait for
        for proc in resumed._procs:
            assert _ends_within(ray, proc.actor, seconds=60)
    finally:
        placement.remove()
    assert difference(weights, steps[1]) < TOLERANCE
    assert difference(weights, base) > 10 * TOLERANCE  # it trained at all


def difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in b)


def _ends_within(ray: Any, actor: Any, seconds: float) -> bool:
    """Whether ``actor`` is dead within ``seconds``. ``ray.kill`` only sends the kill:
    on a loaded machine a call made right after it can still be answered, so the
    actor is asked again until it fails (a host left alive answers every time)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            ray.get(actor.node_id.remote(), timeout=max(1.0, deadline - time.monotonic()))
        except ray.exceptions.RayActorError:
            return True
        except ray.exceptions.GetTimeoutError:
            return False
        time.sleep(0.5)
    return False
