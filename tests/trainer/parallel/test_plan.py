"""The plan of which rank trains which micro-batch: every micro-batch exactly once, the
same number of passes on every rank, tokens balanced."""

from __future__ import annotations

import pytest

from reinforge.trainer.sharding.plan import assign, slot_count


@pytest.mark.parametrize("world_size", [1, 2, 3, 4])
def test_every_micro_batch_is_assigned_to_one_rank(world_size: int) -> None:
    tokens = [50, 10, 40, 30, 20, 60, 5]
    plan = assign(tokens, world_size)
    assert sorted(i for part in plan for i in part) == list(range(len(tokens)))
    assert slot_count(plan) == -(-len(tokens) // world_size)


def test_tokens_are_balanced_within_the_slots() -> None:
    plan = assign([100, 100, 1, 1], 2)
    loads = sorted(sum([100, 100, 1, 1][i] for i in part) for part in plan)
    assert loads == [101, 101]  # not [2, 200]


def test_more_ranks_than_micro_batches_leaves_ranks_empty() -> None:
    plan = assign([7], 3)
    assert sorted(len(p) for p in plan) == [0, 0, 1]
    assert slot_count(plan) == 1


def test_one_rank_keeps_the_single_process_order() -> None:
    assert assign([3, 1, 2], 1) == [[0, 1, 2]]
    assert assign([], 2) == [[], []]
