"""``trainer.micro_batch_tokens``: micro-batches are also cut by padded tokens.

A micro-batch's activation memory follows its padded tokens (rows x longest row),
measured on the calculator agent in docs/benchmarks.md, "Memory of the agent demo". These tests check
that the budget is respected by every forward pass the trainer runs, that the step's
gradient does not depend on it, and that the agent examples keep the settings that
bound their memory.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.algorithms import TrainBatch, collate
from reinforge.config import load_config
from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.micro_batches import padded_tokens, split_micro_batches
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

REPO = Path(__file__).resolve().parents[2]


def _exp(length: int) -> Experience:
    return Experience(
        tokens=torch.ones(length, dtype=torch.long),
        prompt_length=1,
        action_mask=torch.ones(length - 1, dtype=torch.bool),
    )


def test_split_by_rows_alone_without_a_budget() -> None:
    exps = [_exp(n) for n in (3, 4, 5, 6, 7)]
    sizes = [len(mb) for mb in split_micro_batches(exps, 2)]
    assert sizes == [2, 2, 1]


def test_split_keeps_order_and_every_micro_batch_within_the_budget() -> None:
    exps = [_exp(n) for n in (2, 3, 3, 4, 5, 8, 8, 9, 20)]
    parts = list(split_micro_batches(exps, 4, max_tokens=16))
    assert [e for mb in parts for e in mb] == exps  # nothing lost, order kept
    for mb in parts:
        assert len(mb) <= 4
        assert len(mb) == 1 or padded_tokens(mb) <= 16
    # 2,3,3,4: 4 x 4 = 16; then the row limit; 5,8: 2 x 8 = 16 (with the next 8: 24)
    assert [[len(e.tokens) for e in mb] for mb in parts] == [[2, 3, 3, 4], [5, 8], [8], [9], [20]]


def test_a_row_longer_than_the_budget_is_a_micro_batch_of_its_own() -> None:
    exps = [_exp(3), _exp(50), _exp(3)]
    assert [len(mb) for mb in split_micro_batches(exps, 8, max_tokens=10)] == [1, 1, 1]


def test_config_rejects_a_zero_budget() -> None:
    with pytest.raises(ValueError):
        TrainerConfig.model_validate({"micro_batch_tokens": 0})


@pytest.fixture(scope="module")
def sampled(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """2 tasks x 4 samples from the tiny model, with rollout log-probs and rewards."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=5) as engine:
        exps = ModelWrapper(engine).generate(
            ["The cat sat on", "Numbers: one two"], n=4, max_tokens=6
        )
    for i, exp in enumerate(exps):
        task, run = divmod(i, 4)
        exp.eid = EID(batch=1, task=task, run=run)
        exp.reward = float(run % 2)
    return exps


def test_trainer_never_forwards_more_than_the_budget_and_the_gradient_is_the_same(
    sampled: list[Experience],
    tiny_model_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step_gradient,
) -> None:
    """Every micro-batch the trainer collates stays within ``micro_batch_tokens``
    (here about two rows), and the summed gradient equals the one-pass gradient."""
    from reinforge.trainer import step_planner as planner_module

    base = {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 8}
    whole = Trainer(tiny_model_path, TrainerConfig.model_validate(base), pad_token_id=2)
    expected, metrics = step_gradient(whole, copy.deepcopy(sampled))
    assert metrics["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=1e-3)

    longest = max(len(e.tokens) for e in sampled)
    budget = 2 * longest + 1
    shapes: list[tuple[int, int]] = []

    def recording_collate(exps: list[Experience], pad: int) -> TrainBatch:
        batch = collate(exps, pad)
        shapes.append(tuple(batch.input_ids.shape))
        return batch

    monkeypatch.setattr(planner_module, "collate", recording_collate)
    cfg = TrainerConfig.model_validate({**base, "micro_batch_tokens": budget})
    split = Trainer(tiny_model_path, cfg, pad_token_id=2)
    got, metrics = step_gradient(split, copy.deepcopy(sampled))
    assert metrics["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=1e-3)

    assert len(shapes) >= 4  # 8 rows, at most 2 per pass
    assert all(rows * width <= budget for rows, width in shapes)
    assert sum(rows for rows, _ in shapes) == len(sampled)
    assert got.keys() == expected.keys()
    for name, grad in expected.items():
        scale = max(float(grad.abs().max()), 1e-12)
        torch.testing.assert_close(got[name], grad, atol=1e-4 * scale, rtol=0, msg=name)


def _cut(exp: Experience, keep: int) -> Experience:
    """``exp`` with only its first ``keep`` response tokens (a reply that ended sooner)."""
    out = copy.deepcopy(exp)
    end = exp.prompt_length + keep
    out.tokens = exp.tokens[:end].clone()
    out.logprobs = exp.logprobs[:keep].clone()
    out.action_mask = exp.action_mask[:keep].clone()
    return out


def test_micro_batches_of_unequal_tokens_are_weighted_by_their_tokens(
    sampled: list[Experience], tiny_model_path: Path, step_gradient
) -> None:
    """Rows of unequal length, cut into micro-batches holding unequal numbers of
    response tokens: the step's gradient is still the one-pass gradient, which only a
    weight of (micro-batch tokens / step tokens) gives; a weight of 1/micro-batches or
    of rows/step rows would not (checked below: the batches differ in tokens and rows
    alike, so those weights differ from the token weights)."""
    assert all(e.response_length >= 6 for e in sampled)
    keeps = [1, 6, 2, 5, 1, 6, 3, 4]
    rows = [_cut(e, k) for e, k in zip(sampled, keeps, strict=True)]
    base = {"algorithm": "grpo", "lr": 1e-3, "micro_batch_size": 8}
    whole = Trainer(tiny_model_path, TrainerConfig.model_validate(base), pad_token_id=2)
    expected, _ = step_gradient(whole, copy.deepcopy(rows))

    cfg = TrainerConfig.model_validate({**base, "micro_batch_size": 3})
    split = Trainer(tiny_model_path, cfg, pad_token_id=2)
    parts = list(split_micro_batches(rows, 3))
    tokens = [sum(e.response_length for e in mb) for mb in parts]
    total = sum(tokens)
    token_weights = [t / total for t in tokens]
    # the weights the broken rules would give differ from these, so the test can see them
    assert token_weights != pytest.approx([1 / len(parts)] * len(parts), abs=1e-3)
    assert token_weights != pytest.approx([len(mb) / len(rows) for mb in parts], abs=1e-3)
    got, _ = step_gradient(split, copy.deepcopy(rows))

    assert got.keys() == expected.keys()
    for name, grad in expected.items():
        scale = max(float(grad.abs().max()), 1e-12)
        torch.testing.assert_close(got[name], grad, atol=1e-4 * scale, rtol=0, msg=name)


@pytest.mark.parametrize("name", ["sft.yaml", "grpo.yaml"])
def test_agent_examples_bound_their_training_memory(name: str) -> None:
    """The calculator agent trains on long multi-turn conversations: without gradient
    checkpointing and a token budget its runs peaked far above the demo's memory
    (docs/benchmarks.md, "Memory of the agent demo")."""
    trainer = load_config(REPO / "examples" / "agent" / name).trainer
    assert trainer.gradient_checkpointing
    assert trainer.micro_batch_tokens is not None and trainer.micro_batch_tokens <= 2048
