"""``ExperiencePipeline``: runs configured experience operators in order, with a fault policy.

Between the explorer and the trainer every explore step's experiences pass through
the pipeline: filters drop rollouts, mappers re-score or annotate them, and
``group_advantage`` may compute advantages. Operators' metrics are merged into one
dict, each key under its operator's name (``reward_filter/filtered_count``), so two
operators reporting the same key do not overwrite each other; keys that already
start with the name (the built-ins') are kept as they are. Only the same operator
used twice collides.

Fault policy (``on_error``):

* ``"skip"`` (default): an operator that raises (or returns something that is not
  ``(list, dict)``) is skipped: the batch as it was before it goes on to the next
  operator, the failure is logged, counted in ``pipeline/errors`` and listed in
  ``last_errors``. One flaky operator (an LLM judge timing out) then costs that
  operator's effect for one step, not the whole run. Only the list is restored:
  in-place edits a failing operator already made to experiences stay (the built-ins
  compute everything before writing, so they never leave half-done edits).
* ``"raise"``: a ``PipelineError`` naming the operator is raised, chained to the cause.

A batch that ends up empty (everything filtered) stops the pipeline early and is
returned empty with ``pipeline/empty_batch = 1``: callers should skip the train step.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from reinforge.buffer.operators import (
    AuxiliaryModels,
    ExperienceOperator,
    ExperienceOperatorV1,
    OperatorConfigInput,
    create_operators,
    ensure_v1,
    operator_config_parts,
)
from reinforge.core import Experience
from reinforge.core.explore_metric_names import (
    PIPELINE_EMPTY_BATCH,
    PIPELINE_ERRORS,
    PIPELINE_EXPERIENCES_IN,
    PIPELINE_EXPERIENCES_OUT,
)

logger = logging.getLogger(__name__)

OnError = Literal["skip", "raise"]
_ON_ERROR_VALUES: tuple[str, ...] = get_args(OnError)


class PipelineError(RuntimeError):
    """An operator failed while the pipeline's policy is ``on_error="raise"``."""

    def __init__(self, operator: str, message: str) -> None:
        super().__init__(f"experience operator '{operator}' failed: {message}")
        self.operator = operator


def _check_on_error(on_error: str) -> OnError:
    if on_error not in _ON_ERROR_VALUES:
        raise ValueError(f"on_error must be one of {list(_ON_ERROR_VALUES)}, got {on_error!r}")
    return on_error  # type: ignore[return-value]


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _checked_result(result: Any) -> tuple[list[Experience], dict[str, Any]]:
    """An operator's ``(exps, metrics)``, or ``TypeError`` if it returned something else."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TypeError(
            f"process() must return (experiences, metrics), got {type(result).__name__}"
        )
    exps, metrics = result
    if not isinstance(exps, list):
        raise TypeError(f"process() returned experiences as {type(exps).__name__}, not list")
    if metrics is not None and not isinstance(metrics, Mapping):
        raise TypeError(f"process() returned metrics as {type(metrics).__name__}, not dict")
    return exps, dict(metrics or {})


def namespaced(name: str, op_metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``op_metrics`` with each key under ``name/`` (unless it already is)."""
    prefix = f"{name}/"
    return {(k if k.startswith(prefix) else prefix + k): v for k, v in op_metrics.items()}


class ExperiencePipeline:
    """Ordered experience operators plus the fault policy described in the module doc."""

    def __init__(
        self,
        operator_configs: Sequence[OperatorConfigInput] = (),
        auxiliary_models: AuxiliaryModels | None = None,
        *,
        on_error: OnError = "skip",
    ) -> None:
        names = [operator_config_parts(config)[0] for config in operator_configs]
        operators = create_operators(operator_configs, auxiliary_models)
        self._setup(list(zip(names, operators, strict=True)), on_error)

    @classmethod
    def from_operators(
        cls,
        operators: Sequence[ExperienceOperatorV1 | ExperienceOperator],
        *,
        names: Sequence[str] | None = None,
        on_error: OnError = "skip",
    ) -> ExperiencePipeline:
        """A pipeline of already-built operators (legacy ones are wrapped).

        ``names`` label them in errors; by default the class names are used.
        """
        if names is None:
            names = [type(op).__name__ for op in operators]
        if len(names) != len(operators):
            raise ValueError(f"{len(names)} names for {len(operators)} operators")
        pipeline = cls.__new__(cls)
        pipeline._setup(
            [(n, ensure_v1(op)) for n, op in zip(names, operators, strict=True)], on_error
        )
        return pipeline

    @classmethod
    def from_config(
        cls, config: Mapping[str, Any] | Any, auxiliary_models: AuxiliaryModels | None = None
    ) -> ExperiencePipeline:
        """Build from a mapping or object with ``operators`` (configs) and optional ``on_error``."""
        if isinstance(config, Mapping):
            operators, on_error = config.get("operators") or (), config.get("on_error", "skip")
        else:
            operators = getattr(config, "operators", None) or ()
            on_error = getattr(config, "on_error", "skip")
        return cls(operators, auxiliary_models, on_error=on_error)

    def _setup(self, stages: list[tuple[str, ExperienceOperatorV1]], on_error: str) -> None:
        self.on_error: OnError = _check_on_error(on_error)
        self._stages = stages
        self.last_errors: list[str] = []

    @property
    def operator_names(self) -> list[str]:
        return [name for name, _ in self._stages]

    @property
    def operators(self) -> list[ExperienceOperatorV1]:
        return [op for _, op in self._stages]

    async def prepare(self) -> None:
        """Run every operator's ``prepare``; a failure always raises ``PipelineError``.

        A broken set-up is a configuration problem, so it is not subject to ``on_error``.
        """
        for name, op in self._stages:
            try:
                await op.prepare()
            except Exception as exc:
                raise PipelineError(name, f"prepare() raised {_describe(exc)}") from exc

    async def process(self, exps: Sequence[Experience]) -> tuple[list[Experience], dict[str, Any]]:
        """Run the operators in order; return the surviving experiences and merged metrics."""
        self.last_errors = []
        batch = list(exps)
        metrics: dict[str, Any] = {PIPELINE_EXPERIENCES_IN: float(len(batch))}
        for name, op in self._stages:
            if not batch:
                break
            try:
                # A copy, so an operator editing its input list cannot change ``batch``.
                batch, op_metrics = _checked_result(await op.process(list(batch)))
            except Exception as exc:
                if self.on_error == "raise":
                    raise PipelineError(name, _describe(exc)) from exc
                self.last_errors.append(f"{name}: {_describe(exc)}")
                logger.warning("experience operator '%s' failed; skipped", name, exc_info=True)
                continue
            metrics.update(namespaced(name, op_metrics))
        metrics[PIPELINE_EXPERIENCES_OUT] = float(len(batch))
        metrics[PIPELINE_ERRORS] = float(len(self.last_errors))
        metrics[PIPELINE_EMPTY_BATCH] = float(not batch)
        return batch, metrics

    def process_sync(self, exps: Sequence[Experience]) -> tuple[list[Experience], dict[str, Any]]:
        """``process`` for synchronous callers (no event loop running in this thread).

        Each call runs a fresh event loop, so operators holding loop-bound clients
        should be driven through ``await process`` instead.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.process(exps))
        raise RuntimeError("process_sync() called inside a running event loop; await process()")

    async def close(self) -> None:
        """Close every operator, even after one fails to close.

        Failures are logged and kept in ``last_errors``; with ``on_error="raise"`` the
        first becomes a ``PipelineError`` once all operators have been closed.
        """
        self.last_errors = []
        first: tuple[str, Exception] | None = None
        for name, op in self._stages:
            try:
                await op.close()
            except Exception as exc:
                self.last_errors.append(f"{name}: {_describe(exc)}")
                logger.warning("experience operator '%s' failed to close", name, exc_info=True)
                first = first or (name, exc)
        if first is not None and self.on_error == "raise":
            name, exc = first
            raise PipelineError(name, f"close() raised {_describe(exc)}") from exc

    async def __aenter__(self) -> ExperiencePipeline:
        await self.prepare()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"ExperiencePipeline({self.operator_names}, on_error={self.on_error!r})"
