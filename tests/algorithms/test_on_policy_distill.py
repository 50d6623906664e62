"""On-policy distillation (Trinity-RFT's ``on_policy_distill``): each sampled token's
advantage is ``kl_coef · (log π_teacher − log π_student)``, from the experience's
``teacher_logprobs`` carried into the train batch.

Pure functions first (advantage, collation, the ``importance_sampling`` loss, the
preset), then the trainer on the tiny random model (the teacher's log-probs reach the
loss; a teacher equal to the student gives no loss and no gradient), then, marked
slow, a few steps on SmolLM2-135M as student and teacher moving the student's
log-probs toward the teacher's on the sampled tokens.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM

from reinforge.algorithms import (
    ADVANTAGE_FNS,
    ALGORITHMS,
    POLICY_LOSS_FNS,
    collate,
    importance_sampling_policy_loss,
    on_policy_distill_advantage,
    on_policy_distill_batch_advantages,
    resolve_algorithm,
)
from reinforge.algorithms.advantage.on_policy_distill import (
    DISTILL_ADVANTAGE_MEAN,
    DISTILL_REVERSE_KL,
    DISTILL_SEQ_REVERSE_KL,
)
from reinforge.core import EID, Experience
from reinforge.models.engines.hf import HFEngine, load_causal_lm
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.token_logprobs import token_logprobs
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

PAD = 2


def _exp(student: list[float], teacher: list[float] | None, mask: list[int] | None = None, **kw):
    n = len(student)
    return Experience(
        tokens=list(range(3, 5 + n)),
        prompt_length=2,
        logprobs=student,
        teacher_logprobs=teacher,
        action_mask=mask,
        **kw,
    )


# ---- the advantage ---------------------------------------------------------------------


def test_advantage_is_kl_coef_times_teacher_minus_student_on_action_tokens() -> None:
    exps = [
        _exp([-1.0, -2.0, -0.5], [-0.5, -3.0, -0.5], mask=[1, 0, 1], eid=EID(run=0)),
        _exp([-1.0, -1.0], [-2.0, -1.5], eid=EID(run=1)),
    ]
    metrics = ADVANTAGE_FNS.get("on_policy_distill")(exps, kl_coef=0.5)
    assert exps[0].advantages.tolist() == [0.25, 0.0, 0.0]  # the masked token gets 0
    assert exps[1].advantages.tolist() == [-0.5, -0.25]
    assert torch.equal(exps[0].returns, exps[0].advantages)  # as Trinity: returns = advantages
    # reverse KL estimate log π_s − log π_t over the 4 action tokens: (−0.5 + 0 + 1 + 0.5) / 4
    assert metrics[DISTILL_REVERSE_KL] == pytest.approx(0.25)
    assert metrics[DISTILL_SEQ_REVERSE_KL] == pytest.approx((-0.5 + 1.5) / 2)
    assert metrics[DISTILL_ADVANTAGE_MEAN] == pytest.approx(-0.125)
    assert metrics["advantage/max"] == pytest.approx(0.25)


def test_a_student_equal_to_its_teacher_gets_zero_advantages() -> None:
    exps = [_exp([-1.0, -2.0], [-1.0, -2.0])]
    metrics = on_policy_distill_advantage(exps)
    assert exps[0].advantages.tolist() == [0.0, 0.0]
    assert metrics[DISTILL_REVERSE_KL] == 0.0


def test_an_experience_without_teacher_logprobs_is_an_error_naming_the_workflow() -> None:
    with pytest.raises(ValueError, match=r"teacher_logprobs.*on_policy_distill_workflow"):
        on_policy_distill_advantage([_exp([-1.0], [-1.0]), _exp([-1.0], None)])


# ---- the train batch -------------------------------------------------------------------


def test_collate_carries_teacher_logprobs_in_the_shifted_layout() -> None:
    a = _exp([-1.0, -2.0], [-0.1, -0.2])
    b = _exp([-1.0, -2.0, -3.0], None)
    b.teacher_logprobs = [-0.3, -0.4, -0.5]  # Trinity's workflows assign a slice later
    batch = collate([a, b], PAD)
    # response token k of a row sits in column prompt_length + k - 1 = k + 1
    assert batch.teacher_logprobs.dtype == torch.float32
    torch.testing.assert_close(
        batch.teacher_logprobs, torch.tensor([[0.0, -0.1, -0.2, 0.0], [0.0, -0.3, -0.4, -0.5]])
    )
    assert torch.equal(batch.teacher_logprobs != 0, batch.response_mask)
    assert collate([a, _exp([-1.0], None)], PAD).teacher_logprobs is None  # not every row has it


def test_batch_advantages_are_teacher_minus_pi_old_on_trained_tokens() -> None:
    exps = [_exp([-1.0, -2.0], [-0.5, -2.5], mask=[1, 0]), _exp([-1.0], [-3.0])]
    batch = collate(exps, PAD)
    old = torch.full(batch.loss_mask.shape, -1.0)  # π_old, not the sampler's log-probs
    advantages, metrics = on_policy_distill_batch_advantages(batch, old, kl_coef=2.0)
    torch.testing.assert_close(advantages, torch.tensor([[0.0, 1.0, 0.0], [0.0, -4.0, 0.0]]))
    assert metrics[DISTILL_REVERSE_KL] == pytest.approx((-0.5 + 2.0) / 2)
    batch.teacher_logprobs = None
    with pytest.raises(ValueError, match="teacher_logprobs"):
        on_policy_distill_batch_advantages(batch, old)


# ---- the importance_sampling loss and the preset ---------------------------------------


def test_importance_sampling_loss_is_minus_advantage_times_ratio() -> None:
    assert POLICY_LOSS_FNS.get("importance_sampling") is importance_sampling_policy_loss
    logp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    old = torch.tensor([[-1.2, -2.0, -9.0]])
    adv = torch.tensor([[1.0, -2.0, 5.0]])
    mask = torch.tensor([[True, True, False]])
    loss, metrics = importance_sampling_policy_loss(logp, old, adv, mask)
    ratio = (logp - old).exp()
    expected = -(adv * ratio)[mask].mean()
    assert float(loss.detach()) == pytest.approx(float(expected.detach()))
    loss.backward()
    # no clipping: d/dlogp of −A·r is −A·r on every trained token, / 2 trained tokens
    expected_grad = (-(adv * ratio) * mask / 2).detach()
    torch.testing.assert_close(logp.grad, expected_grad)
    zero, _ = importance_sampling_policy_loss(logp, old, torch.zeros_like(adv), mask)
    assert float(zero) == 0.0
    assert metrics["policy/ratio_mean"] == pytest.approx(float(ratio[mask].mean()))


def test_preset_matches_trinity_default_config() -> None:
    """Trinity's OnPolicyDistillAlgorithm: advantage_fn on_policy_distill {kl_coef: 1.0},
    policy_loss_fn ppo, kl_penalty_fn/kl_loss_fn/entropy_loss_fn none, no reference."""
    spec = resolve_algorithm("on_policy_distill")
    assert ALGORITHMS.get("on_policy_distill") == spec
    assert (spec.advantage_fn, spec.advantage_args) == ("on_policy_distill", {"kl_coef": 1.0})
    assert spec.policy_loss_fn == "ppo"
    assert not spec.kl_in_loss and not spec.kl_in_reward and spec.entropy_coef == 0.0
    assert spec.use_reference is False
    assert spec.batch_advantages is on_policy_distill_batch_advantages
    assert resolve_algorithm("grpo").batch_advantages is None
    # Trinity's YAML: advantage_fn_args {kl_coef}, policy_loss_fn importance_sampling
    cfg = TrainerConfig.model_validate(
        {
            "algorithm": "on_policy_distill",
            "algorithm_args": {
                "advantage_args": {"kl_coef": 0.5},
                "policy_loss_fn": "importance_sampling",
            },
        }
    )
    spec = resolve_algorithm(cfg.algorithm, cfg.algorithm_args)
    assert spec.advantage_args == {"kl_coef": 0.5} and spec.policy_loss_fn == "importance_sampling"
    with pytest.raises(ValueError, match="kl_penalty"):  # the advantage takes no token KL
        resolve_algorithm("on_policy_distill", {"kl_penalty": "k1", "kl_coef": 0.1})


# ---- the trainer, on the tiny random model ---------------------------------------------


@pytest.fixture(scope="module")
def rollouts(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """2 prompts x 3 samples of the tiny model (version 0), without teacher log-probs."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=3) as engine:
        exps = ModelWrapper(engine).generate(["a b c", "one two"], n=3, max_tokens=6)
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 3, run=i % 3)
        exp.reward = 0.0
    return exps


def _own_logprobs(path: Any, exps: list[Experience]) -> list[torch.Tensor]:
    """Each reply's log-probs under the weights at ``path``, as the trainer computes them."""
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    batch = collate(exps, PAD)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch)
    return [
        logp[i, e.prompt_length - 1 : e.prompt_length - 1 + e.response_length].clone()
        for i, e in enumerate(exps)
    ]


def _trainer(path: Any, lr: float = 1e-3, micro_batch_size: int = 4, **args: Any) -> Trainer:
    cfg = TrainerConfig.model_validate(
        {
            "algorithm": "on_policy_distill",
            "algorithm_args": args,
            "lr": lr,
            "micro_batch_size": micro_batch_size,
            "max_grad_norm": None,
        }
    )
    return Trainer(path, cfg, pad_token_id=PAD)


def _step_gradient(trainer: Trainer, exps: list[Experience]) -> tuple[torch.Tensor, dict]:
    grads: list[torch.Tensor] = []
    step = trainer.optimizer.step

    def record(*a: Any, **kw: Any) -> Any:
        grads.append(torch.cat([p.grad.flatten() for p in trainer.model.parameters()]))
        return step(*a, **kw)

    trainer.optimizer.step = record
    metrics = trainer.train_step(exps).metrics
    return grads[0].double(), metrics


def test_teacher_logprobs_reach_the_loss(tiny_model_path, rollouts) -> None:
    """The step's gradient is that of −Σ_t (log π_T − log π_old) · log π_θ / N: the
    teacher's log-probs, carried by the batch, are what the student is trained on.
    The sampled log-probs carry noise, which must not enter the advantage (π_old is the
    trainer's own, as Trinity computes this advantage in the trainer)."""
    exps = copy.deepcopy(rollouts)
    own = _own_logprobs(tiny_model_path, exps)
    gen = torch.Generator().manual_seed(0)
    for exp, mine in zip(exps, own, strict=True):
        exp.teacher_logprobs = mine + torch.randn(mine.shape, generator=gen)
        exp.logprobs = exp.logprobs + 0.3 * torch.randn(mine.shape, generator=gen)
    grad, metrics = _step_gradient(_trainer(tiny_model_path, micro_batch_size=8), exps)

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    batch = collate(exps, PAD)
    logp, _ = token_logprobs(model, batch)
    mask = batch.loss_mask
    advantages = (batch.teacher_logprobs - logp.detach()) * mask
    (-(advantages * logp)[mask].sum() / mask.sum()).backward()
    reference = torch.cat([p.grad.flatten() for p in model.parameters()]).double()
    torch.testing.assert_close(grad, reference, rtol=1e-4, atol=1e-7)
    assert float(grad.norm()) > 1e-3

    noise = torch.cat([e.teacher_logprobs - m for e, m in zip(exps, own, strict=True)])
    assert metrics["train/distill/reverse_kl"] == pytest.approx(-float(noise.mean()), abs=1e-4)
    assert metrics["train/policy/ratio_mean"] == 1.0


def test_teacher_equal_to_student_gives_no_loss_and_no_gradient(tiny_model_path, rollouts):
    exps = copy.deepcopy(rollouts)
    for exp, mine in zip(exps, _own_logprobs(tiny_model_path, exps), strict=True):
        exp.teacher_logprobs = mine
    trainer = _trainer(tiny_model_path, micro_batch_size=8, policy_loss_fn="importance_sampling")
    metrics = trainer.train_step(exps).metrics
    # the same tokens scored in another batch layout: equal up to float rounding
    assert abs(metrics["train/loss"]) < 1e-6
    assert metrics["train/grad_norm"] < 1e-5  # against > 1e-3 with a teacher that differs
    assert abs(metrics["train/distill/reverse_kl"]) < 1e-6


def test_experiences_without_teacher_logprobs_fail_the_step(tiny_model_path, rollouts):
    with pytest.raises(ValueError, match="teacher_logprobs"):
        _trainer(tiny_model_path).train_step(copy.deepcopy(rollouts))


# ---- SmolLM2-135M as student and teacher -----------------------------------------------


@pytest.mark.slow
def test_training_moves_the_student_toward_the_teacher(real_model_path) -> None:
    """The teacher is the same SmolLM2-135M scoring at temperature 0.5 (a sharper
    distribution); a few on-policy distillation steps on the student's samples bring
    the student's log-probs of those tokens closer to the teacher's."""
    model, tokenizer = load_causal_lm(real_model_path, "cpu", torch.float32)
    prompts = ["The capital of France is", "Write a short poem about the sea."]
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=0) as engine:
        wrapper = ModelWrapper(engine)
        exps = wrapper.generate(prompts, n=2, max_tokens=12, temperature=1.0)
        sharp = [wrapper.logprobs(e.tokens, temperature=0.5)[e.prompt_length - 1 :] for e in exps]
    del model

    for exp, teacher in zip(exps, sharp, strict=True):
        exp.teacher_logprobs = teacher
    trainer = _trainer(real_model_path, lr=1e-5)
    start = _gap(trainer.model, exps)
    for version in range(4):
        for exp in exps:  # on-policy: sampled by the weights being trained
            exp.info["model_version"] = version
            exp.logprobs = None
        trainer.train_step(exps)
    end = _gap(trainer.model, exps)
    assert start > 0.1, start
    assert end < 0.8 * start, (start, end)


def _gap(model: Any, exps: list[Experience]) -> float:
    """Mean |log π_student − log π_teacher| over the sampled tokens, π_student ``model``."""
    with torch.no_grad():
        logp, _ = token_logprobs(model, collate(exps, PAD))
    rows = [
        logp[i, e.prompt_length - 1 : e.prompt_length - 1 + e.response_length] - e.teacher_logprobs
        for i, e in enumerate(exps)
    ]
    return float(torch.cat(rows).abs().mean())
