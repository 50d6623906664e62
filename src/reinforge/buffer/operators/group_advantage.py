"""``group_advantage``: compute advantages in the buffer with a registered estimator."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from reinforge.algorithms import ADVANTAGE_FNS, resolve_algorithm
from reinforge.algorithms.spec import NO_ADVANTAGE
from reinforge.buffer.operators.base import ExperienceOperatorV1, OperatorResult
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS
from reinforge.core import Experience

NAME = "group_advantage"
DEFAULT_ALGORITHM = "grpo"


@EXPERIENCE_OPERATORS.register_module(NAME)
class GroupAdvantage(ExperienceOperatorV1):
    """Sets ``advantages``/``returns`` on every experience via ``reinforge.algorithms``.

    Pick the estimator by ``algorithm`` (a preset such as ``grpo``; its
    ``advantage_args`` are used, merged with any given here) or directly by
    ``advantage_fn`` (a name in ``ADVANTAGE_FNS`` or a dotted path) with
    ``advantage_args``. Neither given means the ``grpo`` preset. Computing advantages
    here, after filtering, means groups are normalised over the rollouts that are
    actually trained on. The estimator's metrics are reported under ``group_advantage/``.
    """

    def __init__(
        self,
        algorithm: str | None = None,
        advantage_fn: str | None = None,
        advantage_args: Mapping[str, Any] | None = None,
    ) -> None:
        args = dict(advantage_args or {})
        if advantage_fn is None or algorithm is not None:
            overrides: dict[str, Any] = {"advantage_args": args}
            if advantage_fn is not None:
                overrides["advantage_fn"] = advantage_fn
            spec = resolve_algorithm(algorithm or DEFAULT_ALGORITHM, overrides)
            advantage_fn, args = spec.advantage_fn, dict(spec.advantage_args)
        if advantage_fn == NO_ADVANTAGE:
            raise ValueError(f"algorithm '{algorithm}' has no advantage function")
        self.advantage_fn_name = advantage_fn
        self.advantage_fn = ADVANTAGE_FNS.get(advantage_fn)
        self.advantage_args = args
        try:
            inspect.signature(self.advantage_fn).bind([], **args)
        except TypeError as exc:
            raise ValueError(f"advantage_args {args} do not fit '{advantage_fn}': {exc}") from exc

    async def process(self, exps: list[Experience]) -> OperatorResult:
        if not exps:
            return exps, {}
        metrics = self.advantage_fn(exps, **self.advantage_args)
        return exps, {f"{NAME}/{key}": float(value) for key, value in metrics.items()}
