"""Reward functions: score one response, return named reward components."""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any

from reinforge.core.registry import Registry

REWARD_FUNCTIONS = Registry("reward function")


class RewardFn(ABC):
    """Base class of reward functions.

    Constructed once per workflow with the taskset's ``reward_fn_args`` as keyword
    arguments; called once per response. Returns a dict of named components (for
    example ``{"accuracy": 1.0, "format_score": 0.1}``); workflows use the sum of
    the components as the scalar reward and record each one as a metric.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    @abstractmethod
    def __call__(
        self, response: str, truth: str | None = None, prompt: str | None = None, **kwargs: Any
    ) -> dict[str, float]:
        """Score ``response`` against the reference answer ``truth``."""


# ---- calling a reward function by its own signature -----------------------------------

#: callable (a function, or a reward class's ``__call__``) -> the keyword names it
#: takes, or None when it takes ``**kwargs`` (any) or its signature cannot be read
_KEYWORDS: dict[Any, frozenset[str] | None] = {}
_TAKES_KEYWORD = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def accepted_keywords(fn: Any) -> frozenset[str] | None:
    """The keyword arguments ``fn`` accepts, or None when it accepts any (``**kwargs``,
    or a signature ``inspect`` cannot read). Looked up once per function or class."""
    key = _signature_key(fn)
    if key is not None and key in _KEYWORDS:
        return _KEYWORDS[key]
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        names = None
    else:
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            names = None
        else:
            names = frozenset(p.name for p in parameters if p.kind in _TAKES_KEYWORD)
    if key is not None:
        _KEYWORDS[key] = names
    return names


def _signature_key(fn: Any) -> Any:
    """What ``fn``'s signature can be cached under: the function itself, or the class's
    ``__call__`` for an instance of a Python class (None: do not cache)."""
    if inspect.isfunction(fn):
        return fn
    if inspect.ismethod(fn):
        return fn.__func__
    call = inspect.getattr_static(type(fn), "__call__", None)
    return call if inspect.isfunction(call) else None


def call_reward_fn(reward_fn: Any, /, *args: Any, optional: dict[str, Any], **kwargs: Any) -> Any:
    """Call ``reward_fn`` as its own signature allows: ``args`` and ``kwargs`` always
    (the arguments its framework always passes, e.g. Trinity-RFT's ``response`` and
    ``truth``), and each of ``optional`` (reinforge's extras: ``prompt``,
    ``raw_task``...) only where the function names it or takes ``**kwargs``. So a
    reward class written for Trinity-RFT, ``__call__(self, response, prompt=None,
    truth=None)``, is called exactly as Trinity calls it."""
    accepted = accepted_keywords(reward_fn)
    if accepted is None:
        return reward_fn(*args, **optional, **kwargs)
    extras = {name: value for name, value in optional.items() if name in accepted}
    return reward_fn(*args, **extras, **kwargs)
