"""The one place the engine's request (``SamplingParams``) is built from sampling settings.

``chat``/``generate`` take the core ``GenerationConfig``'s fields as keywords (a task's
``rollout_args`` spread with ``**``, or some of them given by hand), plus the two
settings only an engine request has: ``stop_token_ids`` and ``top_logprobs``.
``SamplingParams`` is exactly that set less ``logprobs`` (the sampled tokens'
log-probabilities are always returned), with ``max_tokens`` resolved to the model's
default when unset (``tests/models/test_sampling_args.py`` holds the two types to
that, so a field added to ``GenerationConfig`` cannot be refused by the model).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from reinforge.core import GenerationConfig
from reinforge.models.engine import SamplingParams

#: the settings of an engine request that are not sampling settings of a task
ENGINE_ONLY_KEYS = frozenset({"stop_token_ids", "top_logprobs"})
#: GenerationConfig keys the engines do not take: log-probabilities are always returned
IGNORED_KEYS = frozenset({"logprobs"})
#: the keywords ``chat``/``generate`` accept: every GenerationConfig field, and the
#: engine-only ones; SamplingParams has these less the ignored ones
ACCEPTED_KEYS = frozenset(f.name for f in fields(GenerationConfig)) | ENGINE_ONLY_KEYS
_ATOMIC = (str, int, float, bool, type(None))
#: the GenerationConfig fields ``rollout_kwargs`` passes on, in declaration order
_CONFIG_FIELDS = tuple(f.name for f in fields(GenerationConfig) if f.name not in IGNORED_KEYS)


def _copy_value(value: Any) -> Any:
    """An independent copy of a config value (what ``asdict`` would give), cheaply."""
    if isinstance(value, _ATOMIC):
        return value
    if type(value) is list and all(isinstance(v, _ATOMIC) for v in value):
        return value.copy()
    return copy.deepcopy(value)


def sampling_params(default_max_tokens: int, **kwargs: Any) -> SamplingParams:
    """The engine's request from ``chat``/``generate`` keywords (GenerationConfig's
    fields and the engine-only ones); a None value, or an unset ``max_tokens``, is the
    default (``default_max_tokens`` for ``max_tokens``)."""
    args: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in IGNORED_KEYS or value is None:
            continue
        if key not in ACCEPTED_KEYS:
            raise TypeError(f"unknown sampling argument '{key}'; known: {sorted(ACCEPTED_KEYS)}")
        args[key] = value
    args.setdefault("max_tokens", default_max_tokens)
    if isinstance(args.get("stop"), str):
        args["stop"] = [args["stop"]]
    return SamplingParams(**args)


def rollout_kwargs(config: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``chat``/``generate`` from a task's rollout_args (or a dict
    of them, as Trinity-RFT workflows keep): the set values (None and ``logprobs``
    left out), containers copied so nothing is shared."""
    cls = type(config)
    if cls is not GenerationConfig:
        if isinstance(config, GenerationConfig) and cls.to_dict is not GenerationConfig.to_dict:
            config = config.to_dict()
        return {
            k: _copy_value(v) for k, v in config.items() if v is not None and k not in IGNORED_KEYS
        }
    # What ``to_dict`` (dataclasses.asdict) gives, without its recursive deep copy
    # of every scalar: containers are still copied, so nothing is shared.
    out: dict[str, Any] = {}
    for name in _CONFIG_FIELDS:
        value = getattr(config, name)
        if value is not None:
            out[name] = value if isinstance(value, _ATOMIC) else _copy_value(value)
    return out
