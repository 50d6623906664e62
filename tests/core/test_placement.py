"""The placement plan splits a node's GPUs between engines and trainer ranks: disjoint
unless asked, local ranks on cuda:LOCAL_RANK of the trainer's GPUs, and a clear error
when the GPUs are too few."""

from __future__ import annotations

import pytest

from reinforge.core.placement import (
    GpuPlan,
    PlacementError,
    physical_ids,
    plan_gpus,
    tensor_parallel_size,
)


def used(plan: GpuPlan) -> tuple[set[int], set[int]]:
    return {g for ids in plan.engines for g in ids}, set(plan.ranks)


@pytest.mark.parametrize("ranks", [1, 2, 8])
def test_ranks_alone_take_gpus_0_to_n(ranks: int) -> None:
    plan = plan_gpus(8, local_ranks=ranks)
    assert plan.engines == () and plan.ranks == tuple(range(ranks))
    assert [plan.rank_device(r) for r in range(ranks)] == [f"cuda:{r}" for r in range(ranks)]
    assert plan.rank_env(visible="") == {"CUDA_VISIBLE_DEVICES": ",".join(map(str, range(ranks)))}


@pytest.mark.parametrize("ranks", [1, 2, 8])
def test_engines_and_ranks_never_share_a_gpu(ranks: int) -> None:
    plan = plan_gpus(ranks + 2, engine_replicas=2, local_ranks=ranks)
    engines, trainer = used(plan)
    assert plan.engines == ((0,), (1,)) and not engines & trainer
    assert plan.ranks == tuple(range(2, 2 + ranks))
    # a rank process sees the trainer's GPUs only and opens cuda:LOCAL_RANK of them
    assert [plan.rank_device(r) for r in range(ranks)] == [f"cuda:{r}" for r in range(ranks)]
    assert plan.rank_env(visible="")["CUDA_VISIBLE_DEVICES"] == ",".join(
        str(g) for g in range(2, 2 + ranks)
    )
    assert plan.engine_env(1, visible="") == {"CUDA_VISIBLE_DEVICES": "1"}
    # the trainer inside the driver (one rank) sees every GPU: its own by index
    assert plan.rank_device(0, in_process=True) == "cuda:2"


def test_an_engine_of_two_gpus_and_one_rank() -> None:
    plan = plan_gpus(3, engine_replicas=1, gpus_per_engine=2, local_ranks=1)
    assert plan.engines == ((0, 1),) and plan.ranks == (2,)
    assert plan.engine_env(0, visible="") == {"CUDA_VISIBLE_DEVICES": "0,1"}


def test_too_few_gpus_is_an_error_that_names_the_setting() -> None:
    with pytest.raises(PlacementError, match="share_gpus: true"):
        plan_gpus(1, engine_replicas=1, local_ranks=1)
    with pytest.raises(PlacementError, match="2 are visible"):
        plan_gpus(2, local_ranks=8)
    with pytest.raises(PlacementError, match="need 3 GPUs"):
        plan_gpus(2, engine_replicas=3)


def test_shared_only_when_asked() -> None:
    plan = plan_gpus(1, engine_replicas=1, local_ranks=1, share=True)
    assert plan.engines == ((0,),) and plan.ranks == (0,) and plan.shared
    # free GPUs first, then the engines'
    plan = plan_gpus(3, engine_replicas=2, local_ranks=2, share=True)
    assert plan.ranks == (2, 0)


def test_trainer_device_settings() -> None:
    assert plan_gpus(4, engine_replicas=1, trainer_device="cpu").ranks == ()
    assert plan_gpus(4, engine_replicas=1, trainer_device="cpu").rank_device(0) == "cpu"
    assert plan_gpus(4, engine_replicas=1, local_ranks=2, trainer_device="cuda:2").ranks == (2, 3)
    with pytest.raises(PlacementError, match="which the engines use"):
        plan_gpus(4, engine_replicas=1, trainer_device="cuda:0")
    assert plan_gpus(0, local_ranks=8).rank_device(3) == "cpu"  # no GPU: auto is the CPU
    with pytest.raises(PlacementError, match="none is visible"):
        plan_gpus(0, trainer_device="cuda")


def test_children_get_the_parents_gpu_names() -> None:
    assert physical_ids([0, 2], visible="4,5,6") == ["4", "6"]
    assert physical_ids([1], visible="") == ["1"]
    plan = plan_gpus(3, engine_replicas=1, local_ranks=2)
    assert plan.rank_env(visible="GPU-a,GPU-b,GPU-c") == {"CUDA_VISIBLE_DEVICES": "GPU-b,GPU-c"}


def test_describe_and_tensor_parallel() -> None:
    lines = plan_gpus(3, engine_replicas=1, local_ranks=2).describe()
    assert lines == [
        "3 GPU(s) visible",
        "engine replica 0: GPU 0",
        "trainer local rank 0: GPU 1",
        "trainer local rank 1: GPU 2",
    ]
    assert tensor_parallel_size(["--tensor-parallel-size", "2"]) == 2
    assert tensor_parallel_size(["-tp=4", "--x"]) == 4 and tensor_parallel_size([]) == 1
