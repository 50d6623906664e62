"""``trainer.share_prompts``: rows sharing a prompt run it once, with the same result.

The exactness claim is proven by comparison with the unshared path: the same
log-probs, the same gradients (so the prompt's gradient, summed over the replies
that attend to it, is neither dropped nor counted twice) and the same weights after
a trainer step, with and without activation checkpointing, eager and SDPA attention.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.algorithms import collate
from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import load_causal_lm
from reinforge.trainer.micro_batches import order_rows
from reinforge.trainer.shared_prompts import (
    SHARED_ROWS,
    TOKEN_RATIO,
    SharedPromptBatch,
    plan_layout,
    share_prompts,
)
from reinforge.trainer.token_logprobs import token_logprobs
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

PAD = 2


def _exp(prompt: list[int], reply: list[int], task: int, run: int, reward: float) -> Experience:
    exp = Experience(
        tokens=torch.tensor(prompt + reply),
        prompt_length=len(prompt),
        action_mask=torch.ones(len(reply), dtype=torch.bool),
        logprobs=torch.full((len(reply),), -1.0),
        reward=reward,
    )
    exp.eid = EID(batch=1, task=task, run=run)
    return exp


def _groups(seed: int = 0) -> list[Experience]:
    """Two groups of 4 replies (prompts of 7 and 5 tokens, replies of 1..9 tokens; one
    reply ends in a masked env token) and one single row, as GRPO batches are."""
    g = torch.Generator().manual_seed(seed)

    def ids(n: int) -> list[int]:
        return torch.randint(5, 400, (n,), generator=g).tolist()

    prompts = [ids(7), ids(5)]
    exps = []
    for task, prompt in enumerate(prompts):
        for run, length in enumerate((3, 9, 1, 6)):
            exps.append(_exp(prompt, ids(length), task, run, float(run % 2)))
    exps[1].action_mask[-1] = False  # a token the model did not generate
    exps.append(_exp(ids(6), ids(4), 2, 0, 1.0))
    return exps


@pytest.fixture
def model(tiny_model_path: Path) -> Any:
    model, _ = load_causal_lm(tiny_model_path, "cpu", torch.float32)
    return model


def _logprobs_and_grads(model: Any, batch: Any) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    logp, _ = token_logprobs(model, batch, only=batch.loss_mask)
    weights = torch.linspace(-1.0, 1.0, logp.numel()).reshape(logp.shape)
    (logp * weights * batch.loss_mask).sum().backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    return logp.detach(), grads


@pytest.mark.parametrize(("attention", "checkpointing"), [("eager", True), ("sdpa", False)])
def test_shared_prompt_gives_the_same_logprobs_and_gradients(
    model: Any, attention: str, checkpointing: bool
) -> None:
    model.set_attn_implementation(attention)
    if checkpointing:
        model.gradient_checkpointing_enable({"use_reentrant": False})
    model.train()
    batch = collate(_groups(), PAD)
    shared = share_prompts(batch)
    assert isinstance(shared, SharedPromptBatch) and shared.packed is not None
    assert shared.packed.shared_rows == 8  # both groups; the single row runs as it is
    assert shared.packed.packed_tokens < shared.packed.unshared_tokens
    assert shared.packed.input_ids.shape[0] == 3  # one packed row per prompt

    want, want_grads = _logprobs_and_grads(model, batch)
    got, got_grads = _logprobs_and_grads(model, shared)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=0)
    assert got_grads.keys() == want_grads.keys()
    # the embedding's gradient reaches the prompt tokens only through the prompt's run
    prompt_token = int(batch.input_ids[0, 0])
    embed = next(n for n in want_grads if "embed_tokens" in n)
    assert float(want_grads[embed][prompt_token].abs().max()) > 0
    for name, grad in want_grads.items():
        scale = max(float(grad.abs().max()), 1e-12)
        torch.testing.assert_close(got_grads[name], grad, atol=1e-5 * scale, rtol=0, msg=name)


def test_layout_is_skipped_where_it_does_not_pay() -> None:
    exps = _groups()
    singles = collate([exps[0], exps[4], exps[8]], PAD)  # three different prompts
    assert plan_layout(singles) is None
    assert not isinstance(share_prompts(collate(exps, PAD), enabled=False), SharedPromptBatch)
    # a 1-token prompt shared by two 9-token replies, beside a single row of 10 tokens:
    # packed, 2 rows x 19 tokens; as they are, 3 rows x 10. Packing would pad more
    reply = list(range(10, 19))
    pair = [_exp([7], reply, 0, 0, 0.0), _exp([7], reply, 0, 1, 1.0)]
    single = _exp([8, 9], reply[:8], 1, 0, 1.0)
    assert plan_layout(collate([*pair, single], PAD)) is None
    assert plan_layout(collate(pair, PAD)) is not None  # 1 x 19 < 2 x 10


def test_groups_are_kept_together_in_training_order() -> None:
    exps = _groups()
    mixed = [exps[i] for i in (0, 4, 8, 1, 5, 2, 6, 3, 7)]
    ordered = order_rows(mixed, by_prompt=True)
    keys = [int(e.eid.task) for e in ordered]
    assert keys == [1, 1, 1, 1, 0, 0, 0, 0, 2]  # larger groups first, then fewer tokens
    for task in (0, 1):
        lengths = [len(e.tokens) for e in ordered if e.eid.task == task]
        assert lengths == sorted(lengths)
    assert [len(e.tokens) for e in order_rows(mixed)] == sorted(len(e.tokens) for e in mixed)


def _trainer(path: Path, share: bool, **extra: Any) -> Trainer:
    cfg = TrainerConfig.model_validate(
        {
            "algorithm": "grpo",
            "lr": 1e-3,
            "warmup_steps": 0,
            "micro_batch_size": 4,
            "share_prompts": share,
            "attn_implementation": "eager",
            **extra,
        }
    )
    return Trainer(path, cfg, pad_token_id=PAD)


@pytest.mark.parametrize("checkpointing", [True, False])
def test_a_step_with_shared_prompts_equals_the_unshared_step(
    tiny_model_path: Path, step_gradient: Any, checkpointing: bool
) -> None:
    """GRPO with a KL term (the reference's passes share prompts too): the step's
    gradient and the weights after it, shared against unshared."""
    extra = {"gradient_checkpointing": checkpointing, "algorithm_args": {"kl_loss_coef": 0.1}}
    plain = _trainer(tiny_model_path, False, **extra)
    shared = _trainer(tiny_model_path, True, **extra)
    want, want_metrics = step_gradient(plain, copy.deepcopy(_groups()))
    got, metrics = step_gradient(shared, copy.deepcopy(_groups()))
    assert SHARED_ROWS not in {k.removeprefix("train/") for k in want_metrics}
    assert metrics[f"train/{SHARED_ROWS}"] == pytest.approx(8 / 9)
    assert metrics[f"train/{TOKEN_RATIO}"] < 0.9
    # (train/loss is a mean over micro-batches, which hold other rows in the two runs)
    assert got.keys() == want.keys()
    for name, grad in want.items():
        scale = max(float(grad.abs().max()), 1e-12)
        torch.testing.assert_close(got[name], grad, atol=1e-5 * scale, rtol=0, msg=name)
    for (name, a), b in zip(plain.model.named_parameters(), shared.model.parameters(), strict=True):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=0, msg=name)


def test_the_trainer_says_when_sharing_does_not_apply(
    tiny_model_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reinforge.trainer import shared_prompts

    monkeypatch.setattr(shared_prompts, "_told", set())  # said once per process
    trainer = _trainer(tiny_model_path, True, algorithm_args={"entropy_coef": 0.01})
    with caplog.at_level(logging.INFO, logger="reinforge.trainer.shared_prompts"):
        metrics = trainer.train_step(copy.deepcopy(_groups())).metrics
    assert metrics[f"train/{SHARED_ROWS}"] == 0.0
    assert metrics[f"train/{TOKEN_RATIO}"] == 1.0
    assert "entropy bonus" in caplog.text
