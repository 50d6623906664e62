"""Batched token sampling: filtering semantics checked by hand, inverse-CDF draws, determinism."""

from __future__ import annotations

import math
import random

import pytest
import torch

from reinforge.models.sampling import filter_logits, filter_logits_batch, sample_batch, sample_token

NEG = float("-inf")


def _logits_for(probs: list[float]) -> torch.Tensor:
    return torch.tensor([math.log(p) for p in probs])


def test_temperature_scales_logits() -> None:
    out = filter_logits(torch.tensor([1.0, 2.0, 4.0]), temperature=2.0, top_k=-1, top_p=1.0)
    assert out.tolist() == [0.5, 1.0, 2.0]


def test_top_k_keeps_the_k_largest() -> None:
    out = filter_logits(torch.tensor([1.0, 4.0, 2.0, 3.0]), 1.0, top_k=2, top_p=1.0)
    assert out.tolist() == [NEG, 4.0, NEG, 3.0]


def test_top_k_keeps_ties_at_the_boundary() -> None:
    out = filter_logits(torch.tensor([1.0, 3.0, 3.0, 2.0]), 1.0, top_k=1, top_p=1.0)
    assert out.tolist() == [NEG, 3.0, 3.0, NEG]


@pytest.mark.parametrize("top_k", [0, -1, 4, 10])
def test_top_k_disabled_outside_range(top_k: int) -> None:
    logits = torch.tensor([1.0, 4.0, 2.0, 3.0])
    assert torch.equal(filter_logits(logits, 1.0, top_k=top_k, top_p=1.0), logits)


@pytest.mark.parametrize(
    ("top_p", "kept"),
    [
        (0.5, [0]),  # the mass before the 2nd token (0.5) already reaches 0.5
        (0.51, [0, 1]),
        (0.7, [0, 1]),  # 0.5 + 0.3 = 0.8 >= 0.7: the 3rd token is dropped
        (0.81, [0, 1, 2]),
        (1.0, [0, 1, 2, 3]),
    ],
)
def test_top_p_keeps_smallest_prefix_reaching_mass(top_p: float, kept: list[int]) -> None:
    # probabilities 0.5, 0.3, 0.15, 0.05, deliberately not in sorted order
    probs = [0.15, 0.5, 0.05, 0.3]
    rank_to_index = [1, 3, 0, 2]
    out = filter_logits(_logits_for(probs), 1.0, top_k=-1, top_p=top_p)
    finite = {i for i, v in enumerate(out.tolist()) if v != NEG}
    assert finite == {rank_to_index[r] for r in kept}


def test_top_k_applies_before_top_p() -> None:
    # after top-k=2 the survivors 0.5 and 0.3 renormalise to 0.625 / 0.375;
    # top_p=0.6 keeps only the first of them
    probs = [0.5, 0.3, 0.15, 0.05]
    out = filter_logits(_logits_for(probs), 1.0, top_k=2, top_p=0.6)
    assert [v != NEG for v in out.tolist()] == [True, False, False, False]
    out = filter_logits(_logits_for(probs), 1.0, top_k=2, top_p=0.7)
    assert [v != NEG for v in out.tolist()] == [True, True, False, False]


def test_filter_batch_rows_are_independent() -> None:
    logits = torch.stack([_logits_for([0.5, 0.3, 0.15, 0.05])] * 3)
    out = filter_logits_batch(logits, torch.tensor([1, -1, -1]), torch.tensor([1.0, 0.7, 1.0]))
    finite = (out != NEG).tolist()
    assert finite == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, True, True],
    ]


def test_inverse_cdf_buckets() -> None:
    logits = _logits_for([0.25, 0.25, 0.5])[None].repeat(5, 1)
    draws = [0.0, 0.1, 0.25, 0.3, 0.6]
    out = sample_batch(logits, [1.0] * 5, [-1] * 5, [1.0] * 5, draws)
    # right-closed buckets: a draw exactly on an edge goes to the next token
    assert out.tolist() == [0, 0, 1, 1, 2]


def test_filtered_tokens_are_never_drawn() -> None:
    logits = torch.tensor([[0.0, 5.0, 1.0, 4.0]]).repeat(4, 1)
    draws = [0.0, 0.5, 0.999999, 1.0 - 1e-16]
    out = sample_batch(logits, [1.0] * 4, [1] * 4, [1.0] * 4, draws)
    assert out.tolist() == [1, 1, 1, 1]
    # top-p that keeps two tokens: the draw picks among those two only
    out = sample_batch(logits, [1.0] * 4, [-1] * 4, [0.9] * 4, draws)
    assert set(out.tolist()) <= {1, 3}


def test_greedy_rows_take_argmax_of_raw_logits() -> None:
    logits = torch.tensor([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0]])
    out = sample_batch(logits, [0.0, 1.0], [-1, 1], [1.0, 1.0], [0.99, 0.99])
    assert out.tolist() == [1, 0]
    assert sample_batch(logits, [0.0, 0.0], [-1, -1], [1.0, 1.0], [0.5, 0.5]).tolist() == [1, 0]


def test_low_temperature_concentrates_on_mode() -> None:
    logits = torch.tensor([[1.0, 1.5, 1.2]])
    draws = [(i + 0.5) / 50 for i in range(50)]
    picks = {int(sample_batch(logits, [0.01], [-1], [1.0], [u])[0]) for u in draws}
    assert picks == {1}


def test_empirical_distribution_matches_probabilities() -> None:
    probs = [0.1, 0.2, 0.7]
    rows = 6000
    rng = random.Random(0)
    logits = _logits_for(probs)[None].repeat(rows, 1)
    out = sample_batch(
        logits, [1.0] * rows, [-1] * rows, [1.0] * rows, [rng.random() for _ in range(rows)]
    )
    freq = torch.bincount(out, minlength=3).float() / rows
    assert torch.allclose(freq, torch.tensor(probs), atol=0.02)


def test_row_result_does_not_depend_on_batch_mates() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 1000) * 3
    temps, ks, ps, draws = (
        [1.0, 0.7, 0.0, 1.3],
        [-1, 50, -1, -1],
        [1.0, 1.0, 1.0, 0.9],
        [0.3, 0.6, 0.1, 0.8],
    )
    together = sample_batch(logits, temps, ks, ps, draws).tolist()
    alone = [
        int(sample_batch(logits[i : i + 1], [temps[i]], [ks[i]], [ps[i]], [draws[i]])[0])
        for i in range(4)
    ]
    assert together == alone


def test_sample_token_is_deterministic_per_seed() -> None:
    torch.manual_seed(1)
    logits = torch.randn(5000)

    def draw(seed: int) -> list[int]:
        rng = random.Random(seed)
        return [sample_token(logits, 1.0, -1, 1.0, rng) for _ in range(20)]

    assert draw(3) == draw(3)
    assert draw(3) != draw(4)
