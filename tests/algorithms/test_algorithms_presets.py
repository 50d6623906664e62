"""AlgorithmSpec validation, presets, and resolve_algorithm overrides."""

import dataclasses
import math

import pytest
import torch

from reinforge.algorithms import (
    ADVANTAGE_FNS,
    ALGORITHMS,
    POLICY_LOSS_FNS,
    AlgorithmSpec,
    kl_loss_term,
    resolve_algorithm,
)
from reinforge.core import EID, Experience, RegistryError

PRESETS = [
    "grpo",
    "dapo",
    "gspo",
    "rloo",
    "reinforce_plus_plus",
    "cispo",
    "opmd",
    "sft",
    "multi_step_grpo",
    "step_wise_grpo",
    "gigpo",
    "on_policy_distill",
]


def test_all_presets_registered() -> None:
    assert sorted(ALGORITHMS) == sorted(PRESETS)
    assert "ppo" not in ADVANTAGE_FNS  # needs a critic: see compute_gae


def test_dapo_preset() -> None:
    spec = resolve_algorithm("dapo")
    assert spec.advantage_fn == "grpo"
    assert spec.policy_loss_fn == "ppo"
    assert spec.policy_loss_args["clip_range_low"] == 0.2
    assert spec.policy_loss_args["clip_range_high"] == 0.28
    assert spec.loss_agg_mode == "token-mean"
    assert (spec.kl_penalty, spec.kl_loss, spec.use_reference) == ("none", "none", False)


@pytest.mark.parametrize(
    ("name", "use_reference"),
    [
        ("grpo", True),
        ("dapo", False),
        ("gspo", False),
        ("reinforce_plus_plus", True),
        ("sft", False),
    ],
)
def test_use_reference_iff_kl_term(name: str, use_reference: bool) -> None:
    assert resolve_algorithm(name).use_reference is use_reference


def test_use_reference_follows_kl_overrides() -> None:
    assert resolve_algorithm("dapo", {"kl_loss": "k3", "kl_loss_coef": 0.1}).use_reference
    assert not resolve_algorithm("grpo", {"kl_loss_coef": 0.0}).use_reference
    assert not resolve_algorithm("reinforce_plus_plus", {"kl_penalty": "none"}).use_reference


def test_unknown_name_lists_known_presets() -> None:
    with pytest.raises(RegistryError, match="grpo") as info:
        resolve_algorithm("grpoo")
    assert "dapo" in str(info.value)


def test_unknown_override_key_lists_valid_keys() -> None:
    with pytest.raises(ValueError, match="kl_loss_coef"):
        resolve_algorithm("grpo", {"kl_los_coef": 0.1})
    with pytest.raises(ValueError, match="derived"):
        resolve_algorithm("grpo", {"use_reference": False})


def test_args_overrides_merge_and_reset_on_function_change() -> None:
    spec = resolve_algorithm("grpo", {"advantage_args": {"std_normalize": False}})
    assert spec.advantage_args == {"std_normalize": False}
    assert spec.policy_loss_args["clip_ratio_c"] == 3.0
    spec = resolve_algorithm("dapo", {"policy_loss_args": {"clip_range_high": 0.3}})
    assert spec.policy_loss_args == {
        "clip_range_low": 0.2,
        "clip_range_high": 0.3,
        "clip_ratio_c": 3.0,
    }
    spec = resolve_algorithm("grpo", {"policy_loss_fn": "cispo"})
    assert spec.policy_loss_args == {}  # ppo's clip args do not carry over to cispo


def test_bad_piece_arguments_fail_early() -> None:
    with pytest.raises(ValueError, match="std_normalize"):
        resolve_algorithm("grpo", {"advantage_args": {"std_normalise": False}})
    with pytest.raises(ValueError, match="trainer supplies"):
        resolve_algorithm("grpo", {"policy_loss_args": {"loss_agg_mode": "token-mean"}})
    with pytest.raises(ValueError, match="outcome-level"):
        resolve_algorithm("grpo", {"kl_penalty": "k1", "kl_coef": 0.1})
    with pytest.raises(ValueError, match="loss_agg_mode"):
        resolve_algorithm("grpo", {"loss_agg_mode": "sum"})
    with pytest.raises(ValueError, match="KL kind"):
        resolve_algorithm("grpo", {"kl_loss": "k9"})
    with pytest.raises(RegistryError, match="advantage function"):
        resolve_algorithm("grpo", {"advantage_fn": "gae"})


def test_specs_are_frozen_and_own_their_dicts() -> None:
    spec = resolve_algorithm("grpo")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.kl_coef = 1.0  # type: ignore[misc]
    spec.advantage_args["std_normalize"] = False
    assert resolve_algorithm("grpo").advantage_args == {"std_normalize": True}
    args = {"tau": 2.0}
    custom = AlgorithmSpec(advantage_fn="opmd", advantage_args=args, policy_loss_fn="opmd")
    args["tau"] = 3.0
    assert custom.advantage_args == {"tau": 2.0}


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_runs_end_to_end(name: str) -> None:
    """Advantage → policy loss (+ KL loss) on a tiny batch gives a finite, differentiable loss."""
    spec = resolve_algorithm(name)
    exps = [
        Experience(
            tokens=[1, 2, 3, 4],
            prompt_length=2,
            logprobs=[-1.0, -0.5],
            teacher_logprobs=[-0.8, -0.9],  # on_policy_distill's
            reward=r,
            eid=EID(task=0, run=i),
        )
        for i, r in enumerate([1.0, 0.0])
    ]
    kwargs = dict(spec.advantage_args)
    if spec.kl_in_reward:
        ref = [torch.tensor([-1.2, -0.5]) for _ in exps]
        kwargs.update(ref_logprobs=ref, kl_penalty=spec.kl_penalty, kl_coef=spec.kl_coef)
    if spec.advantage_fn != "none":
        ADVANTAGE_FNS.get(spec.advantage_fn)(exps, **kwargs)
        adv = torch.stack([e.advantages for e in exps])
    else:
        adv = torch.zeros(2, 2)
    old = torch.stack([e.logprobs for e in exps])
    logp = (old + 0.01).requires_grad_(True)
    mask = torch.ones(2, 2)
    loss, _ = POLICY_LOSS_FNS.get(spec.policy_loss_fn)(
        logp, old, adv, mask, loss_agg_mode=spec.loss_agg_mode, **spec.policy_loss_args
    )
    if spec.kl_in_loss:
        kl, _ = kl_loss_term(logp, old - 0.1, mask, spec.kl_loss, spec.kl_loss_coef)
        loss = loss + kl
    loss.backward()
    assert math.isfinite(loss.item())
    assert logp.grad is not None and torch.isfinite(logp.grad).all()
