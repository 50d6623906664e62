"""The auxiliary SFT term (``trainer.sft_aux``): weight 0 is plain RL to the last bit,
weight w adds exactly w times the gradient of the demonstrations' token-mean NLL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.algorithms import collate
from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.core.metric_names import SFT_AUX_EXPERIENCES, SFT_AUX_LOSS, train_metric
from reinforge.trainer.token_logprobs import token_logprobs
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

# the captured step never calls optimizer.step(), which the scheduler warns about
pytestmark = pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step")


def _rl_batch() -> list[Experience]:
    """2 tasks x 2 runs of fixed tokens, rewards spread within each task."""
    gen = torch.Generator().manual_seed(0)
    exps = []
    for task in range(2):
        for run in range(2):
            tokens = torch.randint(10, 400, (7 + run,), generator=gen).tolist()
            exps.append(
                Experience(
                    tokens=tokens,
                    prompt_length=3,
                    reward=float(run),
                    eid=EID(batch=1, task=task, run=run),
                    info={"model_version": 0},
                )
            )
    return exps


def _demonstrations() -> list[Experience]:
    """3 demonstrations over 2 micro-batches, with a masked-out middle (a tool result)."""
    gen = torch.Generator().manual_seed(1)
    out = []
    for n in (9, 6, 11):
        tokens = torch.randint(10, 400, (n,), generator=gen).tolist()
        mask = [1, 1, 0, 0] + [1] * (n - 2 - 4)
        out.append(Experience(tokens=tokens, prompt_length=2, action_mask=mask))
    return out


def _gradients(path: Path, sft_aux: dict[str, Any] | None, demos) -> tuple[dict, dict]:
    """The gradient of one GRPO step (captured before the optimiser would step)."""
    cfg = TrainerConfig.model_validate(
        {"algorithm": "grpo", "micro_batch_size": 2, "sft_aux": sft_aux}
    )
    trainer = Trainer(path, cfg, pad_token_id=0)
    captured: dict[str, torch.Tensor] = {}

    def capture() -> float:
        for name, p in trainer.model.named_parameters():
            captured[name] = p.grad.detach().clone()
        return 0.0

    trainer.learner.optimizer_step = capture
    result = trainer.train_step(_rl_batch(), demonstrations=demos)
    return captured, result.metrics


def _sft_gradient(path: Path, demos: list[Experience]) -> tuple[dict, float]:
    """The gradient of the mean negative log-likelihood over all demonstration tokens."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    batch = collate(demos, 0)
    logp, _ = token_logprobs(model, batch, only=batch.response_mask)
    loss = -logp[batch.loss_mask].mean()
    loss.backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}, float(loss.detach())


def _aux(weight: float) -> dict[str, Any]:
    return {"path": "demos.jsonl", "weight": weight, "batch_size": 3}


def test_weight_zero_is_plain_rl(tiny_model_path):
    plain, plain_metrics = _gradients(tiny_model_path, None, None)
    zero, zero_metrics = _gradients(tiny_model_path, _aux(0.0), _demonstrations())
    assert plain.keys() == zero.keys()
    assert all(torch.equal(plain[k], zero[k]) for k in plain)
    assert train_metric(SFT_AUX_LOSS) not in zero_metrics
    assert zero_metrics[train_metric("policy/loss")] == plain_metrics[train_metric("policy/loss")]


def test_weight_adds_that_multiple_of_the_sft_gradient(tiny_model_path):
    demos = _demonstrations()
    plain, _ = _gradients(tiny_model_path, None, None)
    mixed, metrics = _gradients(tiny_model_path, _aux(0.5), demos)
    sft, sft_loss = _sft_gradient(tiny_model_path, demos)
    assert metrics[train_metric(SFT_AUX_LOSS)] == pytest.approx(sft_loss, rel=1e-5)
    assert metrics[train_metric(SFT_AUX_EXPERIENCES)] == 3
    moved = 0
    for name, grad in mixed.items():
        expected = plain[name] + 0.5 * sft[name]
        torch.testing.assert_close(grad, expected, atol=1e-6, rtol=1e-4)
        moved += not torch.allclose(grad, plain[name])
    assert moved > 0  # the term did change the gradient


def test_demonstrations_without_the_config_are_refused(tiny_model_path):
    with pytest.raises(ValueError, match=r"trainer\.sft_aux is not set"):
        _gradients(tiny_model_path, None, _demonstrations())
