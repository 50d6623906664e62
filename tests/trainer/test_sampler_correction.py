"""The sampler/trainer mismatch in a training step: measured every step, and corrected
by truncated importance sampling when ``algorithm_args.sampler_correction`` asks.

The engine's log-probs carry noise here (as a bf16 engine's or vLLM's do against an
fp32 trainer); the step's metrics and gradient are checked against numbers computed
from scratch with a fresh copy of the model.
"""

from __future__ import annotations

import copy
import math
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
CAP = 1.5


@pytest.fixture(scope="module")
def noisy_rollouts(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """3 tasks x 4 samples of version 0, rewards with a spread, whose reported log-probs
    carry engine-like noise."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=7) as engine:
        exps = ModelWrapper(engine).generate(["a b c", "one two", "x y"], n=4, max_tokens=6)
    gen = torch.Generator().manual_seed(1)
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 4 in (0, 3))
        exp.logprobs = exp.logprobs + 0.3 * torch.randn(exp.logprobs.shape, generator=gen)
    return exps


def _trainer(path: Any, **algorithm_args: Any) -> Trainer:
    cfg = TrainerConfig.model_validate(
        {
            "algorithm": "grpo",
            "algorithm_args": {"kl_loss": "none", **algorithm_args},
            "lr": 1e-3,
            "micro_batch_size": 4,
            "max_grad_norm": None,
        }
    )
    return Trainer(path, cfg, pad_token_id=PAD)


def _step(trainer: Trainer, exps: list[Experience]) -> tuple[torch.Tensor, dict[str, float]]:
    """The summed gradient the optimiser was handed, and the step's metrics."""
    grads: list[torch.Tensor] = []
    step = trainer.optimizer.step

    def record(*args: Any, **kwargs: Any) -> Any:
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters()]))
        return step(*args, **kwargs)

    trainer.optimizer.step = record
    metrics = trainer.train_step(exps).metrics
    return grads[0].double(), metrics


def _from_scratch(path: Any, exps: list[Experience], cap: float | None) -> dict[str, Any]:
    """The on-policy gradient of −Σ_t w_t A_t log π(y_t) / (trained tokens) with
    w_t = min(π/π_sampler, cap) (1 when ``cap`` is None), and the log-ratio on the
    trained tokens."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    batch = collate(exps, PAD)
    logp, _ = token_logprobs(model, batch)
    mask = batch.loss_mask
    log_ratio = (logp.detach() - batch.old_logprobs)[mask]
    weights = torch.ones_like(logp)
    if cap is not None:
        weights = torch.exp(logp.detach() - batch.old_logprobs).clamp(max=cap)
    loss = -(weights * batch.advantages * logp)[mask].sum() / mask.sum()
    loss.backward()
    grad = torch.cat([p.grad.flatten() for p in model.parameters()]).double()
    return {"grad": grad, "log_ratio": log_ratio, "weights": weights[mask]}


def test_every_step_reports_the_mismatch_on_the_trained_tokens(tiny_model_path, noisy_rollouts):
    exps = copy.deepcopy(noisy_rollouts)
    _, metrics = _step(_trainer(tiny_model_path), exps)
    log_ratio = _from_scratch(tiny_model_path, exps, None)["log_ratio"]
    # the extremes are over all micro-batches, not their mean
    assert metrics["train/sampler/log_ratio_max"] == pytest.approx(float(log_ratio.max()), abs=1e-4)
    assert metrics["train/sampler/log_ratio_min"] == pytest.approx(float(log_ratio.min()), abs=1e-4)
    assert metrics["train/sampler/abs_log_ratio_max"] == pytest.approx(
        float(log_ratio.abs().max()), abs=1e-4
    )
    assert (
        0.1
        < metrics["train/sampler/abs_log_ratio_mean"]
        < metrics["train/sampler/abs_log_ratio_max"]
    )
    assert metrics["train/sampler/approx_kl_k3"] > 0.01
    # the correction is off by default: nothing weighted, nothing reported about it
    assert "train/sampler/tis_weight_mean" not in metrics


def test_the_corrected_step_follows_the_truncated_is_gradient(tiny_model_path, noisy_rollouts):
    exps = copy.deepcopy(noisy_rollouts)
    correction = {"type": "tis", "cap": CAP}
    grad, metrics = _step(_trainer(tiny_model_path, sampler_correction=correction), exps)
    reference = _from_scratch(tiny_model_path, exps, CAP)  # advantages set by the step
    torch.testing.assert_close(grad, reference["grad"], rtol=1e-4, atol=1e-7)
    plain = _from_scratch(tiny_model_path, exps, None)["grad"]
    assert float(torch.nn.functional.cosine_similarity(plain, reference["grad"], dim=0)) < 0.999

    weights = reference["weights"]
    capped = float((weights >= CAP).float().mean())
    assert 0.0 < capped < 1.0
    assert metrics["train/sampler/tis_capped_frac"] == pytest.approx(capped, abs=0.05)
    assert metrics["train/sampler/tis_weight_mean"] == pytest.approx(
        float(weights.mean()), abs=0.05
    )
    assert metrics["train/policy/ratio_mean"] == 1.0  # π_old is still the trainer's own


def test_an_infinite_cap_is_plain_importance_weighting(tiny_model_path, noisy_rollouts):
    exps = copy.deepcopy(noisy_rollouts)
    correction = {"type": "tis", "cap": math.inf}
    grad, metrics = _step(_trainer(tiny_model_path, sampler_correction=correction), exps)
    reference = _from_scratch(tiny_model_path, exps, math.inf)
    torch.testing.assert_close(grad, reference["grad"], rtol=1e-4, atol=1e-7)
    assert metrics["train/sampler/tis_capped_frac"] == 0.0


def test_stale_rows_are_not_reweighted(tiny_model_path, noisy_rollouts):
    """Experiences of older weights take the sampler's log-probs as π_old: their weight
    π_old/π_sampler is 1, and no mismatch or weight is reported for them."""
    trainer = _trainer(tiny_model_path, sampler_correction={"cap": CAP})
    trainer.train_step(copy.deepcopy(noisy_rollouts))  # the trainer is at version 1 now
    metrics = trainer.train_step(copy.deepcopy(noisy_rollouts)).metrics
    assert "train/sampler/tis_weight_mean" not in metrics
    assert "train/sampler/log_ratio_max" not in metrics


def test_the_correction_with_the_samplers_pi_old_is_refused():
    with pytest.raises(ValueError, match="sampler_correction needs old_logprobs: trainer"):
        TrainerConfig.model_validate(
            {"algorithm_args": {"sampler_correction": {}}, "old_logprobs": "sampler"}
        )
