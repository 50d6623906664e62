"""What the hf engine's worker thread is handed, and the rows it decodes."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

from reinforge.models.engine import Completion, SamplingParams


@dataclass
class SampleRequest:
    """A prompt to sample ``params.n`` completions of; resolved when all are done."""

    prompt_ids: list[int]
    params: SamplingParams
    future: Future
    results: list[Completion | None] = field(default_factory=list)
    remaining: int = 0
    #: the processor's image tensors (``pixel_values``...) for a VLM prompt, else None
    multi_modal_inputs: dict[str, Any] | None = None


@dataclass
class BatchRow:
    """One sample being decoded: a slot of the running batch."""

    request: SampleRequest
    index: int
    rng: random.Random
    max_new: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top: list[list[tuple[int, float]]] | None = None


@dataclass
class ScoreRequest:
    """Token ids to score (log-probabilities under the current weights)."""

    token_ids: list[int]
    future: Future
    #: the log-probabilities are those of ``logits / temperature``
    temperature: float = 1.0


@dataclass
class WeightUpdate:
    """New weights, applied between decode steps once the running batch is empty: one
    dict, or buckets of a streamed sync (read by the engine's thread as it loads them)."""

    state_dict: dict[str, Any] | Iterable[dict[str, Any]]
    version: int | None
    future: Future


@dataclass
class ReleaseWeights:
    """Drop the weights until the next full update (``weight_release``); applied, like an
    update, once the running batch is empty."""

    future: Future


@dataclass
class ShareWeights:
    """Read these tensors in place of the engine's weights (``weight_share``); applied,
    like an update, once the running batch is empty."""

    tensors: dict[str, Any]
    version: int | None
    future: Future


#: the inbox's last item: the worker thread stops when it reads it
CLOSE = object()


def settle(fut: Future, result: Any = None, exc: BaseException | None = None) -> None:
    """Resolve a request's future unless it is already done, e.g. cancelled by the
    caller between the check and now (which would raise InvalidStateError here)."""
    if fut.done():
        return
    with contextlib.suppress(InvalidStateError):
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)
