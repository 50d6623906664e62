"""Named algorithm presets, and ``resolve_algorithm`` to pick one with overrides.

| preset                | advantage           | policy loss      | KL                         | agg                 |
|-----------------------|---------------------|------------------|----------------------------|---------------------|
| grpo                  | grpo                | ppo 0.2/0.2      | loss low_var_kl 0.001      | token-mean          |
| dapo                  | grpo                | ppo 0.2/0.28     | none                       | token-mean          |
| gspo                  | grpo                | gspo 3e-4/4e-4   | none                       | seq-mean-token-mean |
| rloo                  | rloo                | ppo 0.2/0.2      | loss low_var_kl 0.001      | token-mean          |
| reinforce_plus_plus   | reinforce_plus_plus | ppo 0.2/0.2      | reward k1 0.01             | token-mean          |
| cispo                 | grpo                | cispo 1.0/0.28   | none                       | token-mean          |
| opmd                  | opmd τ=1            | opmd τ=1         | none                       | token-mean          |
| sft                   | none                | sft              | none                       | token-mean          |
| multi_step_grpo       | multi_step_grpo     | ppo 0.2/0.2      | loss low_var_kl 0.001      | token-mean          |
| step_wise_grpo        | step_wise_grpo step | ppo 0.2/0.2      | loss low_var_kl 0.001      | token-mean          |
| gigpo                 | gigpo γ=0.95 run    | ppo 0.2/0.2      | loss low_var_kl 0.001      | token-mean          |
| on_policy_distill     | on_policy_distill 1 | ppo 0.2/0.2      | none                       | token-mean          |

``multi_step_grpo`` (Trinity-RFT's name) scores each run by its last step's reward,
for workflows that propagate one outcome to every step; ``step_wise_grpo`` uses every
step's own reward (reward-to-go, γ = 1), for ``StepWiseRewardWorkflow``s. ``gigpo``
adds to the run-level advantage a step-level one among steps taken from the same
environment state (``info["state_hash"]``, set by step-wise workflows). KL loss
settings follow verl's GRPO examples; DAPO's dynamic sampling and overlong
reward shaping are data/reward-side and not part of the spec. ``on_policy_distill``
(Trinity-RFT's on-policy distillation) takes each sampled token's advantage from a
teacher: ``kl_coef · (log π_teacher − log π_old)``, computed by the trainer per
micro-batch from the experiences' ``teacher_logprobs`` (``on_policy_distill_workflow``
sets them); no reward is involved. There is no ``ppo``
preset: it needs a critic (see ``reinforge.algorithms.gae``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from reinforge.algorithms.spec import AlgorithmSpec
from reinforge.core import Registry

ALGORITHMS = Registry("algorithm")

_PPO_CLIP = {"clip_range_low": 0.2, "clip_range_high": 0.2, "clip_ratio_c": 3.0}
_GRPO_KL = {"kl_loss": "low_var_kl", "kl_loss_coef": 0.001}

_PRESETS: dict[str, AlgorithmSpec] = {
    "grpo": AlgorithmSpec(
        advantage_fn="grpo",
        advantage_args={"std_normalize": True},
        policy_loss_fn="ppo",
        policy_loss_args=_PPO_CLIP,
        **_GRPO_KL,
    ),
    "dapo": AlgorithmSpec(
        advantage_fn="grpo",
        advantage_args={"std_normalize": True},
        policy_loss_fn="ppo",
        policy_loss_args={"clip_range_low": 0.2, "clip_range_high": 0.28, "clip_ratio_c": 3.0},
    ),
    "gspo": AlgorithmSpec(
        advantage_fn="grpo",
        advantage_args={"std_normalize": True},
        policy_loss_fn="gspo",
        policy_loss_args={"clip_range_low": 3e-4, "clip_range_high": 4e-4},
        loss_agg_mode="seq-mean-token-mean",
    ),
    "rloo": AlgorithmSpec(
        advantage_fn="rloo", policy_loss_fn="ppo", policy_loss_args=_PPO_CLIP, **_GRPO_KL
    ),
    "reinforce_plus_plus": AlgorithmSpec(
        advantage_fn="reinforce_plus_plus",
        advantage_args={"gamma": 1.0},
        policy_loss_fn="ppo",
        policy_loss_args=_PPO_CLIP,
        kl_penalty="k1",
        kl_coef=0.01,
    ),
    "cispo": AlgorithmSpec(
        advantage_fn="grpo",
        advantage_args={"std_normalize": True},
        policy_loss_fn="cispo",
        policy_loss_args={"eps_low": 1.0, "eps_high": 0.28},
    ),
    "opmd": AlgorithmSpec(
        advantage_fn="opmd",
        advantage_args={"tau": 1.0},
        policy_loss_fn="opmd",
        policy_loss_args={"tau": 1.0},
    ),
    "sft": AlgorithmSpec(advantage_fn="none", policy_loss_fn="sft"),
    # multi-step agent runs (one experience per step, eid.step set)
    "multi_step_grpo": AlgorithmSpec(
        advantage_fn="multi_step_grpo",
        advantage_args={"std_normalize": True},
        policy_loss_fn="ppo",
        policy_loss_args=_PPO_CLIP,
        **_GRPO_KL,
    ),
    "step_wise_grpo": AlgorithmSpec(
        advantage_fn="step_wise_grpo",
        advantage_args={"reward_mode": "step", "gamma": 1.0, "std_normalize": True},
        policy_loss_fn="ppo",
        policy_loss_args=_PPO_CLIP,
        **_GRPO_KL,
    ),
    "gigpo": AlgorithmSpec(
        advantage_fn="gigpo",
        advantage_args={
            "gamma": 0.95,
            "step_advantage_weight": 1.0,
            "reward_mode": "run",
            "std_normalize": True,
        },
        policy_loss_fn="ppo",
        policy_loss_args=_PPO_CLIP,
        **_GRPO_KL,
    ),
    # Trinity-RFT's on_policy_distill: per-token teacher-minus-student advantages, PPO's
    # clipped loss ("or importance_sampling if no clipping is needed"), no KL, no entropy
    "on_policy_distill": AlgorithmSpec(
        advantage_fn="on_policy_distill",
        advantage_args={"kl_coef": 1.0},
        policy_loss_fn="ppo",
        policy_loss_args=_PPO_CLIP,
    ),
}
for _name, _spec in _PRESETS.items():
    ALGORITHMS.register_module(_name)(_spec)

OVERRIDABLE = tuple(f.name for f in fields(AlgorithmSpec) if f.init)


def resolve_algorithm(name: str, overrides: dict[str, Any] | None = None) -> AlgorithmSpec:
    """The preset ``name`` with ``overrides`` (spec field → value) applied.

    ``advantage_args`` / ``policy_loss_args`` overrides are merged into the preset's;
    if the override also changes ``advantage_fn`` / ``policy_loss_fn``, the preset's
    args for the old function are dropped first. Unknown names and keys raise, listing
    the valid ones; the result is validated like any ``AlgorithmSpec``.
    """
    base = ALGORITHMS.get(name)  # RegistryError listing known presets
    if not isinstance(base, AlgorithmSpec):
        raise TypeError(f"algorithm '{name}' resolved to {type(base).__name__}, not AlgorithmSpec")
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise ValueError(
            f"unknown override keys {unknown} for algorithm '{name}'; valid keys: "
            f"{', '.join(OVERRIDABLE)} (use_reference is derived from the KL settings)"
        )
    values = {key: getattr(base, key) for key in OVERRIDABLE}
    for piece in ("advantage", "policy_loss"):
        fn_key, args_key = f"{piece}_fn", f"{piece}_args"
        if fn_key in overrides and overrides[fn_key] != values[fn_key]:
            values[args_key] = {}
        values[args_key] = {**values[args_key], **(overrides.pop(args_key, None) or {})}
    values.update(overrides)
    return AlgorithmSpec(**values)
