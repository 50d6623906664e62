"""``AlgorithmSpec``: an RL algorithm as a composition of named, registered pieces.

An algorithm here is (advantage estimator, policy loss, KL placement, entropy bonus,
loss aggregation). The spec names the pieces and their arguments and validates them
eagerly, so a typo in a YAML config fails at start-up, not after the first rollout.

How a trainer uses it:

* ``ADVANTAGE_FNS.get(spec.advantage_fn)(exps, **spec.advantage_args)`` (skipped when
  ``advantage_fn == "none"``, e.g. SFT). When ``kl_in_reward``, also pass
  ``ref_logprobs=…, kl_penalty=spec.kl_penalty, kl_coef=spec.kl_coef``; only
  token-level estimators (those accepting ``ref_logprobs``) may be combined with a
  KL reward penalty.
* ``POLICY_LOSS_FNS.get(spec.policy_loss_fn)(logp, old_logp, adv, mask,
  loss_agg_mode=spec.loss_agg_mode, **spec.policy_loss_args)``; plus
  ``kl_loss_term(…, spec.kl_loss, spec.kl_loss_coef, spec.loss_agg_mode)`` when
  ``kl_in_loss`` and ``entropy_bonus(…, spec.entropy_coef, …)`` when
  ``entropy_coef > 0``.
* ``batch_advantages``: for an advantage function computed from π_old (on-policy
  distillation), the trainer replaces the collated advantages of each micro-batch by
  ``spec.batch_advantages(batch, old_logprobs, **spec.advantage_args)``.
* ``use_reference`` (derived: true iff a KL term is on) says whether reference-model
  log-probs must be computed at all.
* ``sampler_correction`` (off by default): the truncated importance-sampling weights
  of ``sampler_mismatch.py``, passed to the policy loss as ``token_weights``; only
  losses that accept that keyword (ppo, gspo, cispo) can take it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Imported for their side effect: registering the built-in advantages and losses.
import reinforge.algorithms.advantage
import reinforge.algorithms.policy_loss  # noqa: F401
from reinforge.algorithms.aggregate import check_loss_agg_mode
from reinforge.algorithms.kl import check_kl_kind
from reinforge.algorithms.registry import ADVANTAGE_FNS, POLICY_LOSS_FNS
from reinforge.algorithms.sampler_mismatch import SamplerCorrection

NO_ADVANTAGE = "none"
# Arguments the trainer supplies from top-level spec fields or data, never from *_args.
_RESERVED_ADVANTAGE_ARGS = frozenset({"exps", "ref_logprobs", "kl_penalty", "kl_coef"})
_RESERVED_OUTCOME_ADVANTAGE_ARGS = frozenset({"exps", "ref_logprobs"})
_RESERVED_LOSS_ARGS = frozenset(
    {"logprobs", "old_logprobs", "advantages", "mask", "loss_agg_mode", "token_weights"}
)
#: the keyword through which a policy loss takes per-token weights (the sampler correction)
TOKEN_WEIGHTS_ARG = "token_weights"


def _accepted_keywords(fn: Callable[..., Any]) -> set[str] | None:
    """Keyword names ``fn`` accepts, or ``None`` if it takes ``**kwargs``."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {
        p.name
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }


def _check_args(
    fn: Callable[..., Any], args: dict[str, Any], reserved: frozenset[str], what: str
) -> None:
    clash = sorted(set(args) & reserved)
    if clash:
        raise ValueError(f"{what} may not set {clash}: the trainer supplies them")
    accepted = _accepted_keywords(fn)
    if accepted is None:
        return
    unknown = sorted(set(args) - accepted)
    if unknown:
        valid = sorted(accepted - reserved)
        raise ValueError(f"{what} has unknown keys {unknown}; valid keys: {valid}")


@dataclass(frozen=True, kw_only=True)
class AlgorithmSpec:
    """One RL algorithm, composed by name from registered pieces (see module docstring)."""

    advantage_fn: str
    advantage_args: dict[str, Any] = field(default_factory=dict)
    policy_loss_fn: str
    policy_loss_args: dict[str, Any] = field(default_factory=dict)
    kl_penalty: str = "none"
    kl_coef: float = 0.0
    kl_loss: str = "none"
    kl_loss_coef: float = 0.0
    entropy_coef: float = 0.0
    loss_agg_mode: str = "token-mean"
    #: ``{type: tis, cap: C}`` or None (off); a mapping is parsed into the dataclass
    sampler_correction: SamplerCorrection | None = None
    use_reference: bool = field(init=False)

    def __post_init__(self) -> None:
        # Own copies, so mutating the caller's dicts cannot change a (preset) spec.
        object.__setattr__(self, "advantage_args", dict(self.advantage_args))
        object.__setattr__(self, "policy_loss_args", dict(self.policy_loss_args))
        check_kl_kind(self.kl_penalty)
        check_kl_kind(self.kl_loss)
        check_loss_agg_mode(self.loss_agg_mode)
        for name in ("kl_coef", "kl_loss_coef", "entropy_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.advantage_fn != NO_ADVANTAGE:
            adv_fn = ADVANTAGE_FNS.get(self.advantage_fn)
            accepted = _accepted_keywords(adv_fn)
            reserved = _RESERVED_ADVANTAGE_ARGS
            if accepted is not None and "ref_logprobs" not in accepted:
                # the trainer hands the KL arguments only to estimators that take
                # ref_logprobs; another may have a kl_coef of its own (on_policy_distill)
                reserved = _RESERVED_OUTCOME_ADVANTAGE_ARGS
            _check_args(adv_fn, self.advantage_args, reserved, "advantage_args")
            if self.kl_in_reward and accepted is not None and "ref_logprobs" not in accepted:
                raise ValueError(
                    f"kl_penalty '{self.kl_penalty}' puts KL into token rewards, but advantage "
                    f"'{self.advantage_fn}' is outcome-level and ignores them; use kl_loss instead"
                )
        elif self.advantage_args:
            raise ValueError("advantage_args given but advantage_fn is 'none'")
        loss_fn = POLICY_LOSS_FNS.get(self.policy_loss_fn)
        _check_args(loss_fn, self.policy_loss_args, _RESERVED_LOSS_ARGS, "policy_loss_args")
        correction = SamplerCorrection.parse(self.sampler_correction)
        object.__setattr__(self, "sampler_correction", correction)
        accepted = _accepted_keywords(loss_fn)
        if correction is not None and accepted is not None and TOKEN_WEIGHTS_ARG not in accepted:
            raise ValueError(
                f"sampler_correction ({correction.type}) weights the per-token terms of an "
                f"importance-ratio policy loss, and policy loss '{self.policy_loss_fn}' takes "
                "no token_weights; use it with ppo, gspo or cispo (the grpo, dapo, gspo, "
                "rloo, reinforce_plus_plus, cispo and *_grpo presets), or drop it"
            )
        object.__setattr__(self, "use_reference", self.kl_in_reward or self.kl_in_loss)

    @property
    def batch_advantages(self) -> Callable[..., Any] | None:
        """The micro-batch form of the advantage function, for one that the trainer
        computes from π_old as it trains (``on_policy_distill``, as Trinity-RFT computes
        it in the trainer): ``fn(batch, old_logprobs, **advantage_args) -> (advantages,
        metrics)``. None for the others, whose advantages are set on the experiences."""
        if self.advantage_fn == NO_ADVANTAGE:
            return None
        return getattr(ADVANTAGE_FNS.get(self.advantage_fn), "batch_advantages", None)

    @property
    def kl_in_reward(self) -> bool:
        """KL is subtracted from token rewards before advantages are computed."""
        return self.kl_penalty != "none" and self.kl_coef > 0

    @property
    def kl_in_loss(self) -> bool:
        """KL is added to the policy loss."""
        return self.kl_loss != "none" and self.kl_loss_coef > 0
