"""``create_operators``: operator configs (name + args) to ready ``V1`` instances."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from reinforge.buffer.operators.base import AuxiliaryModels, ExperienceOperatorV1
from reinforge.buffer.operators.legacy import ensure_v1
from reinforge.buffer.operators.registry import EXPERIENCE_OPERATORS


class OperatorConfigLike(Protocol):
    """Any object with ``name`` and ``args`` (a pydantic model, a dataclass...)."""

    name: str
    args: Mapping[str, Any] | None


OperatorConfigInput = Mapping[str, Any] | OperatorConfigLike


class OperatorConfigError(ValueError):
    """An operator config is malformed or its args are rejected by the operator."""


def operator_config_parts(config: OperatorConfigInput) -> tuple[str, dict[str, Any]]:
    """``(name, args)`` of a config given as ``{"name", "args"}`` or as an object."""
    if isinstance(config, Mapping):
        unknown = sorted(set(config) - {"name", "args"})
        if unknown:
            raise OperatorConfigError(
                f"operator config {dict(config)!r} has unknown keys {unknown}; "
                "expected {'name': str, 'args': dict}"
            )
        name, args = config.get("name"), config.get("args")
    else:
        name, args = getattr(config, "name", None), getattr(config, "args", None)
    if not isinstance(name, str) or not name:
        raise OperatorConfigError(f"operator config {config!r} needs a non-empty string 'name'")
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise OperatorConfigError(
            f"args of operator '{name}' must be a mapping, got {type(args).__name__}"
        )
    return name, dict(args)


def create_operator(
    config: OperatorConfigInput, auxiliary_models: AuxiliaryModels | None = None
) -> ExperienceOperatorV1:
    """Build one operator; legacy operators come back wrapped in the V1 adapter.

    Raises ``RegistryError`` (listing the known names) for an unknown name and
    ``OperatorConfigError`` naming the operator when its args are rejected.
    """
    name, args = operator_config_parts(config)
    factory = EXPERIENCE_OPERATORS.get(name)
    try:
        inspect.signature(factory).bind(**args)
    except TypeError as exc:
        raise OperatorConfigError(f"bad args for operator '{name}': {exc}") from exc
    except ValueError:  # no introspectable signature (some builtins): let the call decide
        pass
    try:
        operator = factory(**args)
    except (TypeError, ValueError, KeyError) as exc:
        raise OperatorConfigError(f"bad args for operator '{name}': {exc}") from exc
    try:
        v1 = ensure_v1(operator)
    except TypeError as exc:
        raise OperatorConfigError(f"operator '{name}': {exc}") from exc
    v1.set_auxiliary_model(auxiliary_models)
    return v1


def create_operators(
    operator_configs: Sequence[OperatorConfigInput],
    auxiliary_models: AuxiliaryModels | None = None,
) -> list[ExperienceOperatorV1]:
    """Build the operators of ``operator_configs`` in order, all as ``ExperienceOperatorV1``."""
    return [create_operator(config, auxiliary_models) for config in operator_configs]
