"""π_old of the importance ratio: the trainer's own log-probs for fresh rollouts.

The engine's log-probs are the same quantity computed with other numerics (a bf16
engine here is simulated by noise on the reported log-probs). For experiences sampled
by the weights being trained, a step must follow the exact on-policy policy gradient
(what TRL's GRPOTrainer computes), not one reweighted and clipped by that noise.
"""

from __future__ import annotations

import copy
import logging
import re
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM

from reinforge.algorithms import collate
from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.token_logprobs import token_logprobs
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

PAD = 2


@pytest.fixture(scope="module")
def rollouts(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """3 tasks x 4 samples, rewards with a spread, sampled by version 0."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=5) as engine:
        exps = ModelWrapper(engine).generate(["a b c", "one two", "x y"], n=4, max_tokens=6)
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 4 in (0, 3))
        assert exp.info["model_version"] == 0 and exp.logprobs is not None
    return exps


def _noisy(exps: list[Experience], scale: float = 0.3) -> list[Experience]:
    """A copy whose reported log-probs carry engine-like noise (as a bf16 engine's do)."""
    out = copy.deepcopy(exps)
    gen = torch.Generator().manual_seed(0)
    for exp in out:
        exp.logprobs = exp.logprobs + scale * torch.randn(exp.logprobs.shape, generator=gen)
    return out


def _trainer(path: Any, **extra: Any) -> Trainer:
    cfg = TrainerConfig.model_validate(
        {
            "algorithm": "grpo",
            "algorithm_args": {"kl_loss": "none"},
            "lr": 1e-3,
            "micro_batch_size": 4,
            "max_grad_norm": None,
            **extra,
        }
    )
    return Trainer(path, cfg, pad_token_id=PAD)


def _step_gradient(trainer: Trainer, exps: list[Experience]) -> tuple[torch.Tensor, dict]:
    """The summed gradient the optimiser was handed, and the step's metrics."""
    grads: list[torch.Tensor] = []
    step = trainer.optimizer.step

    def record(*args: Any, **kwargs: Any) -> Any:
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters()]))
        return step(*args, **kwargs)

    trainer.optimizer.step = record
    metrics = trainer.train_step(exps).metrics
    return grads[0].double(), metrics


def _policy_gradient(path: Any, exps: list[Experience]) -> torch.Tensor:
    """Reference: ∇ of −Σ_t A_t log π(y_t) / (response tokens), computed from scratch."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    batch = collate(exps, PAD)
    logp, _ = token_logprobs(model, batch)
    mask = batch.loss_mask
    loss = -(batch.advantages * logp)[mask].sum() / mask.sum()
    loss.backward()
    return torch.cat([p.grad.flatten() for p in model.parameters()]).double()


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a, b, dim=0))


def test_fresh_rollouts_follow_the_exact_policy_gradient(tiny_model_path, rollouts):
    noisy = _noisy(rollouts)
    grad, metrics = _step_gradient(_trainer(tiny_model_path), noisy)
    reference = _policy_gradient(tiny_model_path, noisy)  # advantages set by the step
    assert _cosine(grad, reference) > 0.99999
    torch.testing.assert_close(grad, reference, rtol=1e-4, atol=1e-7)
    assert metrics["train/policy/ratio_mean"] == 1.0
    assert metrics["train/policy/clip_frac"] == 0.0
    # the engine's noise is measured, not trained on
    assert metrics["train/sampler/approx_kl_k3"] > 0.01

    # the engine's log-probs as pi_old: the noise reweights and clips tokens
    grad_sampler, m_sampler = _step_gradient(
        _trainer(tiny_model_path, old_logprobs="sampler"), _noisy(rollouts)
    )
    assert m_sampler["train/policy/clip_frac"] > 0.05
    assert _cosine(grad_sampler, reference) < 0.999


def test_two_epochs_keep_the_first_pass_as_pi_old(tiny_model_path, rollouts):
    """Epoch 2 divides by epoch 1's log-probs: its ratio moves away from 1."""
    trainer = _trainer(tiny_model_path, update_epochs=2)
    metrics = trainer.train_step(_noisy(rollouts)).metrics
    assert metrics["train/policy/ratio_mean"] != 1.0
    assert metrics["train/policy/approx_kl_k3"] > 0  # epoch 2 saw the moved policy


def test_stale_rollouts_keep_the_sampler_log_probs(tiny_model_path, rollouts):
    trainer = _trainer(tiny_model_path)
    trainer.train_step(copy.deepcopy(rollouts))  # the trainer is at version 1 now
    stale = _noisy(rollouts)
    metrics = trainer.train_step(stale).metrics
    assert metrics["train/policy/clip_frac"] > 0.05  # the noisy pi_old was used
    assert "train/sampler/approx_kl_k3" not in metrics


def test_missing_log_probs_fresh_train_on_policy_and_say_so(tiny_model_path, rollouts, caplog):
    exps = copy.deepcopy(rollouts)
    for exp in exps[:5]:
        exp.logprobs = None
    with caplog.at_level(logging.WARNING, logger="reinforge.trainer.old_logprobs"):
        grad, metrics = _step_gradient(_trainer(tiny_model_path), exps)
    assert "5 of 12 experiences carry no sampled log-probs" in caplog.text
    assert metrics["train/policy/ratio_mean"] == 1.0
    torch.testing.assert_close(grad, _policy_gradient(tiny_model_path, exps), rtol=1e-4, atol=1e-7)


def test_missing_log_probs_stale_are_refused_by_name(tiny_model_path, rollouts):
    trainer = _trainer(tiny_model_path)
    trainer.train_step(copy.deepcopy(rollouts))
    exps = copy.deepcopy(rollouts)
    exps[2].logprobs = None
    with pytest.raises(
        ValueError, match=re.escape(f"experience {exps[2].eid} was sampled by model version 0")
    ):
        trainer.train_step(exps)


def test_sft_asks_nothing_of_log_probs(tiny_model_path, rollouts, caplog):
    """A loss without an importance ratio trains stale, log-prob-less experiences
    without a warning or a refusal."""
    trainer = _trainer(tiny_model_path, algorithm="sft", algorithm_args={})
    trainer.train_step(copy.deepcopy(rollouts))  # the trainer is at version 1 now
    exps = copy.deepcopy(rollouts)
    for exp in exps:
        exp.logprobs = None
    with caplog.at_level(logging.WARNING, logger="reinforge.trainer.old_logprobs"):
        metrics = trainer.train_step(exps).metrics
    assert "train/skipped" not in metrics and "log-probs" not in caplog.text
