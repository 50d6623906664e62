"""Name → function registries for the pluggable pieces of an RL algorithm.

Presets (``reinforge.algorithms.presets``) and user YAML refer to advantage
estimators and policy losses by these names; a dotted path
``package.module.function`` also resolves, so custom pieces need no registration.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import torch

from reinforge.core import Experience, Registry


class AdvantageFn(Protocol):
    """Sets ``advantages`` and ``returns`` on every experience in place; returns metrics."""

    def __call__(self, exps: Sequence[Experience], /, **params: Any) -> dict[str, float]: ...


class PolicyLossFn(Protocol):
    """Maps padded ``[B, T]`` token tensors to a scalar loss (to minimise) and metrics."""

    def __call__(
        self,
        logprobs: torch.Tensor,
        old_logprobs: torch.Tensor | None,
        advantages: torch.Tensor | None,
        mask: torch.Tensor,
        /,
        **params: Any,
    ) -> tuple[torch.Tensor, dict[str, float]]: ...


ADVANTAGE_FNS = Registry("advantage function")
POLICY_LOSS_FNS = Registry("policy loss function")
