"""The contract between a ModelWrapper and whatever produces tokens.

An engine speaks token ids only: ids in, sampled ids and their log-probabilities
out. Everything about text, chat templates and Experiences lives in ModelWrapper.
Engines are thread-safe and return ``concurrent.futures.Future`` objects, so sync
workflows (in worker threads) and async workflows (on an event loop) share one
engine without either blocking the other.
"""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SamplingParams:
    """How to sample ``n`` continuations of one prompt: the engine's request.

    The core ``GenerationConfig``'s settings (less ``logprobs``: log-probabilities are
    always returned) with ``max_tokens`` resolved, plus the engine-only
    ``stop_token_ids`` and ``top_logprobs``. A model call builds it in one place,
    ``reinforge.models.wrapper.sampling_args.sampling_params``.
    """

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int = 256
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    #: also return this many most likely tokens (with log-probabilities) per position
    top_logprobs: int = 0

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if not (math.isfinite(self.temperature) and math.isfinite(self.top_p)):
            raise ValueError(
                f"temperature and top_p must be finite, got {self.temperature}, {self.top_p}"
            )
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if any(not s for s in self.stop):
            raise ValueError("stop strings must be non-empty")
        if not 0 <= self.top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be in [0, 20], got {self.top_logprobs}")


@dataclass
class Completion:
    """One sampled continuation.

    ``logprobs[i]`` is the log-probability of ``token_ids[i]`` under the model's
    raw distribution (temperature 1, no top-p/top-k), i.e. what a fresh forward
    pass of the same weights assigns; trainers compute the same quantity.
    """

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str  # "stop" (eos or stop string) or "length"
    #: per position, the ``top_logprobs`` most likely (token id, raw log-probability)
    #: pairs, most likely first; None unless requested
    top_logprobs: list[list[tuple[int, float]]] | None = None
    #: the weight version that sampled these tokens, as the engine knows it (hf, mock:
    #: the weights of the forward passes; a remote server: the version the request was
    #: sent to, or the one the server reports). None: unknown, and the wrapper stamps the
    #: engine's version when the experience is built. ``trainer.max_staleness`` and the
    #: staleness metrics read it, so it is the oldest weights that made any token.
    model_version: int | None = None


@dataclass
class ImageSource:
    """A prompt with images as an engine that processes images itself needs it: the
    rendered chat template's ids with one placeholder per image (before the processor
    expands them) and the images as ``data:`` URLs, in order."""

    unexpanded_ids: list[int]
    image_urls: list[str]


class InferenceEngine(ABC):
    """Token-level generation backend (embedded HF model, mock, remote server...).

    Contract on the futures an engine returns:

    * Bad input fails the request's own future (e.g. a ``ValueError`` for token ids
      outside the vocabulary, see ``check_token_ids``); it never reaches a batched
      step, where it would fail the requests sharing that step.
    * Whatever a batched step raises fails exactly the requests that step held;
      the engine goes on serving new requests.
    * A caller may give up on a request with ``future.cancel()`` (an engine never
      marks its futures running, so cancelling works until the result is set). The
      engine then drops the request at its next step, freeing its batch row and
      KV cache, and never calls ``set_result``/``set_exception`` on a cancelled
      future (that would raise ``InvalidStateError`` in the engine's thread).
    """

    #: tokenizer adapter (see ``reinforge.models.tokenizer``)
    tokenizer: Any
    #: longest prompt + response the engine accepts
    max_model_len: int = 4096
    #: the vision-language model's processor (images -> ids and model inputs); None for a
    #: text-only model or an engine that takes no images
    processor: Any = None

    def __init__(self) -> None:
        self._model_version = 0

    @property
    def model_version(self) -> int:
        return self._model_version

    @abstractmethod
    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Future[list[Completion]]:
        """Queue a request; the future resolves to ``params.n`` completions."""

    #: whether ``submit_multimodal`` needs ``source`` (the images themselves): engines
    #: that run the model's processor on their side (vLLM) do
    needs_image_source: bool = False

    def submit_multimodal(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        multi_modal_inputs: dict[str, Any],
        source: ImageSource | None = None,
    ) -> Future[list[Completion]]:
        """Queue a request whose prompt has images: ``prompt_ids`` are the processor's
        expanded ids, ``multi_modal_inputs`` its other tensors (``pixel_values``...);
        ``source`` (given when ``needs_image_source``) the same prompt before expansion.
        Engines that cannot take images fail the future with a ``ValueError``."""
        return failed_future(
            ValueError(
                f"the {type(self).__name__} engine does not take images "
                "(multimodal prompts need engine: hf with a vision-language model)"
            )
        )

    #: whether ``submit_score`` takes a ``temperature`` other than 1 (log-probabilities
    #: under ``logits / temperature``); an engine that cannot is never asked for one
    scores_with_temperature: bool = False

    @abstractmethod
    def submit_score(self, token_ids: list[int]) -> Future[list[float]]:
        """Queue a scoring request: log p(token_ids[i] | token_ids[:i]) for i >= 1.

        An engine with ``scores_with_temperature`` also takes ``temperature=t`` (t > 0,
        given only when it is not 1): the log-probabilities under ``logits / t``."""

    def update_weights(self, state_dict: dict[str, Any], version: int | None = None) -> None:
        """Load new policy weights; in-flight requests finish on the old weights first."""
        raise NotImplementedError(f"{type(self).__name__} does not support weight updates")

    def receive_weights(
        self, buckets: Iterable[dict[str, Any]], version: int | None = None
    ) -> None:
        """Load new policy weights that arrive as buckets (``trainer.weight_stream``: a
        few hundred MiB each, read once, in order), so no side holds the whole model.

        Engines with a streamed path load each bucket as it comes (``hf`` in place,
        ``vllm`` over HTTP into its workers); this default collects the buckets into
        one dict for ``update_weights``, for engines that only take a whole update.
        """
        state: dict[str, Any] = {}
        for bucket in buckets:
            state.update(bucket)
        self.update_weights(state, version=version)

    def close(self) -> None:
        """Release threads and memory."""

    # ---- conveniences shared by every engine ---------------------------------------

    def generate(self, prompt_ids: list[int], params: SamplingParams) -> list[Completion]:
        return self.submit(prompt_ids, params).result()

    async def generate_async(
        self, prompt_ids: list[int], params: SamplingParams
    ) -> list[Completion]:
        return await asyncio.wrap_future(self.submit(prompt_ids, params))

    def score(self, token_ids: list[int]) -> list[float]:
        return self.submit_score(token_ids).result()

    async def score_async(self, token_ids: list[int]) -> list[float]:
        return await asyncio.wrap_future(self.submit_score(token_ids))

    def __enter__(self) -> InferenceEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_token_ids(ids: Sequence[Any], vocab_size: int | None) -> None:
    """Raise ``ValueError`` naming the first id that is not an int in ``0..vocab_size-1``
    (bools and floats included; ``vocab_size`` None: only the type and sign are checked)."""
    if _plain_ids_in_range(ids, vocab_size):
        return
    for t in ids:
        if (
            not isinstance(t, int)
            or isinstance(t, bool)
            or t < 0
            or (vocab_size is not None and t >= vocab_size)
        ):
            allowed = f"0..{vocab_size - 1}" if vocab_size is not None else "non-negative"
            raise ValueError(
                f"token id {t!r} is outside the vocabulary (ids must be ints in {allowed}; "
                f"vocabulary size {vocab_size})"
            )


def _plain_ids_in_range(ids: Sequence[Any], vocab_size: int | None) -> bool:
    """Whether every id is a plain ``int`` within the vocabulary, checked in C.

    Every prompt of every request is checked, and a Python loop over it costs about
    40 ns an id; this takes about 25 ns (``min``/``max`` in C). Anything else
    (bools, floats, int subclasses, numpy ints, an empty sequence) says False, and the
    loop in ``check_token_ids`` decides, so the outcome is the same.
    """
    if not ids or list(map(type, ids)).count(int) != len(ids):
        return False
    return min(ids) >= 0 and (vocab_size is None or max(ids) < vocab_size)


def done_future(value: Any) -> Future:
    """A future that is already resolved (for engines that answer synchronously)."""
    fut: Future = Future()
    fut.set_result(value)
    return fut


def failed_future(exc: BaseException) -> Future:
    fut: Future = Future()
    fut.set_exception(exc)
    return fut
