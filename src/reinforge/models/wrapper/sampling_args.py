"""Keyword arguments of ``chat``/``generate`` into the engine's ``SamplingParams``."""

from __future__ import annotations

import copy
from dataclasses import fields
from typing import Any

from reinforge.core import GenerationConfig
from reinforge.models.engine import SamplingParams

_SAMPLING_KEYS = {f.name for f in fields(SamplingParams)}
_IGNORED_KEYS = {"logprobs"}  # log-probabilities are always returned
_ATOMIC = (str, int, float, bool, type(None))
_CONFIG_FIELDS: dict[type, tuple[str, ...]] = {}


def _copy_value(value: Any) -> Any:
    """An independent copy of a config value (what ``asdict`` would give), cheaply."""
    if isinstance(value, _ATOMIC):
        return value
    if type(value) is list and all(isinstance(v, _ATOMIC) for v in value):
        return value.copy()
    return copy.deepcopy(value)


def sampling_params(default_max_tokens: int, **kwargs: Any) -> SamplingParams:
    """SamplingParams from keyword arguments (GenerationConfig names accepted); unset
    ``max_tokens`` is ``default_max_tokens``."""
    args: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _IGNORED_KEYS or value is None:
            continue
        if key not in _SAMPLING_KEYS:
            raise TypeError(
                f"unknown sampling argument '{key}'; known: {sorted(_SAMPLING_KEYS | _IGNORED_KEYS)}"
            )
        args[key] = value
    args.setdefault("max_tokens", default_max_tokens)
    if isinstance(args.get("stop"), str):
        args["stop"] = [args["stop"]]
    return SamplingParams(**args)


def rollout_kwargs(config: GenerationConfig) -> dict[str, Any]:
    """Keyword arguments for ``chat``/``generate`` from a task's rollout_args."""
    cls = type(config)
    if cls.to_dict is not GenerationConfig.to_dict:
        return {k: v for k, v in config.to_dict().items() if v is not None and k != "logprobs"}
    # What ``to_dict`` (dataclasses.asdict) gives, without its recursive deep copy
    # of every scalar: containers are still copied, so nothing is shared.
    names = _CONFIG_FIELDS.get(cls)
    if names is None:
        names = _CONFIG_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.name != "logprobs")
    out: dict[str, Any] = {}
    for name in names:
        value = getattr(config, name)
        if value is not None:
            out[name] = value if isinstance(value, _ATOMIC) else _copy_value(value)
    return out
