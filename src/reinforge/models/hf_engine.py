"""The embedded engine: a transformers causal LM driven by our own batched decode loop.

Why not ``model.generate``: with ragged lengths, a static batch keeps decoding
finished rows until the longest one ends, and requests from many concurrent
workflows would have to wait for each other. Here one worker thread owns the
model and runs a continuous-batching loop:

* requests arriving within a short collection window are prefilled together
  (left-padded); the ``n`` samples of a prompt share one prefill and fan out by
  copying its KV cache rows;
* new requests join a running batch between decode steps (KV caches are
  left-padded to a common length and concatenated);
* rows that finish leave the batch at once, and padding columns nobody needs any
  more are trimmed;
* each row draws its randomness from its own seeded ``random.Random``, so a
  request with a seed is reproducible whatever else shares the batch (up to the
  float noise that batching adds to the logits).

Per-step costs that the profile showed to matter are kept off the hot path: the
whole batch is sampled with a handful of tensor ops (``sampling.sample_batch``);
the KV cache lives in buffers with spare columns (``_SlabLayer``), so a decode
step writes one column instead of re-concatenating every layer's cache; and on
CPU the vocabulary projection of a shrinking batch is padded to 16 rows, where
MKL's kernel is faster than for 6-15 rows (``_LogitsRowPadding``).

Threads: the decode step is a few hundred small ops, each an OpenMP parallel
region. With ``torch.get_num_threads()`` equal to the core count, any other busy
thread or process on those cores stalls every region (measured on 2 cores: a
step went from 70 ms to several hundred ms under competing load), while one
thread degrades gracefully. Pass ``num_threads=1`` when workflows or other
processes keep the cores busy; the default leaves torch's setting alone.

Log-probabilities are those of the raw model (temperature 1), matching what a
fresh forward pass of the same weights computes.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from reinforge.models.engine import (
    Completion,
    InferenceEngine,
    SamplingParams,
    check_token_ids,
)
from reinforge.models.prefix_cache import PrefixCache
from reinforge.models.sampling import sample_batch
from reinforge.models.tokenizer import HFChatTokenizer

logger = logging.getLogger(__name__)

#: spare KV-cache columns reserved beyond the current length when a buffer is (re)built
_MIN_HEADROOM = 64

#: lm_head inputs with at least ``_PAD_FROM`` but fewer than ``_PAD_TO`` rows are
#: padded to ``_PAD_TO`` rows (see ``_LogitsRowPadding``)
_PAD_FROM, _PAD_TO = 6, 16


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    future: Future
    results: list[Completion | None] = field(default_factory=list)
    remaining: int = 0


@dataclass
class _Row:
    """One sample being decoded: a slot of the running batch."""

    request: _Request
    index: int
    rng: random.Random
    max_new: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    top: list[list[tuple[int, float]]] | None = None


@dataclass
class _Score:
    token_ids: list[int]
    future: Future


@dataclass
class _WeightUpdate:
    state_dict: dict[str, Any]
    version: int | None
    future: Future


_CLOSE = object()


def _settle(fut: Future, result: Any = None, exc: BaseException | None = None) -> None:
    """Resolve a request's future unless it is already done, e.g. cancelled by the
    caller between the check and now (which would raise InvalidStateError here)."""
    if fut.done():
        return
    with contextlib.suppress(InvalidStateError):
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)


def load_causal_lm(model_path: str | Path, device: str, dtype: torch.dtype) -> tuple[Any, Any]:
    """Load a local HF model directory (no hub access) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(model_path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"model directory '{path}' has no config.json")
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True)
    model.to(device).eval()
    return model, tokenizer


def _slab_layer_class() -> type:
    """Build the slab cache layer lazily, so importing this module does not import transformers."""
    from transformers.cache_utils import DynamicLayer

    class _SlabLayer(DynamicLayer):
        """A full-attention cache layer whose keys/values are views into a wider buffer.

        ``DynamicLayer.update`` concatenates, i.e. copies the layer's whole cache on
        every decode step. Here the buffer keeps spare columns on the right, a step
        writes its column in place, and dropping leading columns only moves the
        view's start. The buffer is rebuilt (with fresh headroom) when it fills up
        or when rows are selected/merged.
        """

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._kbuf: torch.Tensor | None = None
            self._vbuf: torch.Tensor | None = None
            self._start = 0
            self._end = 0

        def _view(self) -> None:
            self.keys = self._kbuf[:, :, self._start : self._end]
            self.values = self._vbuf[:, :, self._start : self._end]

        def set_states(
            self, keys: torch.Tensor, values: torch.Tensor, headroom: int = _MIN_HEADROOM
        ) -> None:
            """Replace the content with ``keys``/``values`` (copied into a new buffer)."""
            batch, heads, length, dim = keys.shape
            width = length + max(headroom, _MIN_HEADROOM, length // 2)
            self._kbuf = keys.new_empty((batch, heads, width, dim))
            self._vbuf = values.new_empty((batch, values.shape[1], width, values.shape[-1]))
            self._kbuf[:, :, :length].copy_(keys)
            self._vbuf[:, :, :length].copy_(values)
            self._start, self._end = 0, length
            self.dtype, self.device = keys.dtype, keys.device
            self.is_initialized = True
            self._view()

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            new = key_states.shape[-2]
            if self._kbuf is None:
                self.set_states(key_states, value_states)
                return self.keys, self.values
            if self._end + new > self._kbuf.shape[-2]:
                self.set_states(self.keys, self.values, headroom=new)
            self._kbuf[:, :, self._end : self._end + new].copy_(key_states)
            self._vbuf[:, :, self._end : self._end + new].copy_(value_states)
            self._end += new
            self._view()
            return self.keys, self.values

        def trim_left(self, columns: int) -> None:
            """Forget the first ``columns`` positions (padding nobody attends to any more)."""
            self._start += columns
            self._view()

        def batch_select_indices(self, indices: torch.Tensor) -> None:
            if self._kbuf is not None:
                self.set_states(self.keys[indices], self.values[indices])

        def reset(self) -> None:
            self._kbuf = self._vbuf = None
            self._start = self._end = 0
            super().reset()

    return _SlabLayer


_SLAB_LAYER: type | None = None


def _new_cache(config: Any) -> Any:
    """A DynamicCache whose plain full-attention layers are slab layers."""
    global _SLAB_LAYER
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    if _SLAB_LAYER is None:
        _SLAB_LAYER = _slab_layer_class()
    cache = DynamicCache(config=config)
    cache.layers = [
        _SLAB_LAYER() if type(layer) is DynamicLayer else layer for layer in cache.layers
    ]
    return cache


def _set_layer(layer: Any, keys: torch.Tensor, values: torch.Tensor) -> None:
    if hasattr(layer, "set_states"):
        layer.set_states(keys, values)
    else:
        layer.keys, layer.values = keys, values


class _LogitsRowPadding:
    """Pad the output projection's input to 16 rows while the engine thread calls the model.

    Why: on CPU, MKL's sgemm for the vocabulary projection (``[rows, hidden] x
    [hidden, vocab]``) gets slower with every extra row from 2 up to 15 rows, then
    drops back at 16: with SmolLM2's 49k vocabulary, 11 rows cost 44 ms and 16 rows
    27 ms on one core (22 ms vs 10.5 ms on two). As rows leave a continuous batch,
    the decode step would otherwise get *slower*. Zero rows are appended before the
    projection and their logits dropped after it; the other rows' logits equal the
    unpadded ones up to float rounding.

    Implemented with forward hooks that act only on the engine's worker thread, so
    other users of a shared model (a colocated trainer, a benchmark) are untouched;
    ``remove()`` takes them off.
    """

    def __init__(self, head: torch.nn.Module, thread_id: Callable[[], int | None]) -> None:
        self.thread_id = thread_id
        # the padded input of the call in flight, and its real row count
        self._pending: tuple[torch.Tensor, int] | None = None
        self._handles = [
            head.register_forward_pre_hook(self._pad),
            head.register_forward_hook(self._unpad),
        ]

    def _pad(self, module: Any, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if threading.get_ident() != self.thread_id():
            return None  # never touch state from other threads sharing the model
        self._pending = None
        if len(args) != 1:
            return None
        hidden = args[0]
        rows = hidden.shape[0]
        if hidden.dim() != 3 or hidden.shape[1] != 1 or not _PAD_FROM <= rows < _PAD_TO:
            return None
        padded = hidden.new_zeros((_PAD_TO, *hidden.shape[1:]))
        padded[:rows] = hidden
        self._pending = (padded, rows)
        return (padded,)

    def _unpad(self, module: Any, args: tuple[Any, ...], output: torch.Tensor) -> Any:
        if threading.get_ident() != self.thread_id():
            return None
        pending, self._pending = self._pending, None
        if pending is None or not args or args[0] is not pending[0]:
            return None
        return output[: pending[1]]

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


class HFEngine(InferenceEngine):
    """Embedded transformers engine with continuous batching (CPU, or GPU if asked)."""

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        model: Any = None,
        tokenizer: Any = None,
        device: str | None = None,
        dtype: str = "float32",
        max_batch_size: int = 64,
        batch_window_ms: float = 20.0,
        max_model_len: int | None = None,
        seed: int = 0,
        num_threads: int | None = None,
        pad_logits_rows: bool | None = None,
        prefix_cache_tokens: int = 0,
    ) -> None:
        """``pad_logits_rows``: see ``_LogitsRowPadding``; default on for CPU.
        ``prefix_cache_tokens``: token budget of the ``PrefixCache`` (0: off)."""
        super().__init__()
        if num_threads:
            torch.set_num_threads(num_threads)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if model is None:
            if model_path is None:
                raise ValueError("HFEngine needs model_path or model")
            model, tokenizer = load_causal_lm(model_path, self.device, getattr(torch, dtype))
        self.model = model
        self.model_path = (
            str(model_path) if model_path else getattr(model.config, "_name_or_path", "")
        )
        gen_cfg = getattr(model, "generation_config", None)
        extra_eos = getattr(gen_cfg, "eos_token_id", None) if gen_cfg is not None else None
        extra_eos = [extra_eos] if isinstance(extra_eos, int) else list(extra_eos or [])
        self.tokenizer = HFChatTokenizer(tokenizer, extra_eos_ids=extra_eos)
        self._eos = frozenset(self.tokenizer.eos_token_ids)
        self._vocab = int(getattr(model.config, "vocab_size", None) or len(tokenizer))
        limit = getattr(model.config, "max_position_embeddings", 4096)
        self.max_model_len = min(max_model_len or limit, limit)
        self.max_batch_size = max_batch_size
        self.batch_window = batch_window_ms / 1000.0
        self.seed = seed
        self._request_counter = 0
        self._inbox: queue.Queue = queue.Queue()
        self._waiting: list[_Request] = []
        self._updates: list[_WeightUpdate] = []
        # running batch state
        self._rows: list[_Row] = []
        self._cache: Any = None
        self._mask: torch.Tensor | None = None
        self._next: torch.Tensor | None = None
        # per-row sampling settings, rebuilt whenever the batch membership changes
        self._temps: list[float] = []
        self._top_ks: list[int] = []
        self._top_ps: list[float] = []
        #: counters for benchmarks and tests: decode steps, prefills, prefills that
        #: joined a running batch, sampled tokens, largest batch seen, and seconds
        #: spent prefilling / decoding (wall clock of the worker thread)
        self.stats: dict[str, float] = {
            "decode_steps": 0,
            "cancelled_rows": 0,
            "prefills": 0,
            "joins": 0,
            "generated_tokens": 0,
            "max_rows": 0,
            "prefill_s": 0.0,
            "decode_s": 0.0,
        }
        self.stats["prefix_hits"] = 0
        self.stats["prefix_reused_tokens"] = 0
        self._prefix: PrefixCache | None = None
        if prefix_cache_tokens > 0 and self._slab_cache_only():
            self._prefix = PrefixCache(prefix_cache_tokens)
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="reinforge-hf-engine", daemon=True)
        self._padding: _LogitsRowPadding | None = None
        if pad_logits_rows is None:
            pad_logits_rows = str(self.device).startswith("cpu")
        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if pad_logits_rows and isinstance(head, torch.nn.Linear):
            self._padding = _LogitsRowPadding(head, lambda: self._thread.ident)
        self._thread.start()

    def _slab_cache_only(self) -> bool:
        """Prefix reuse rebuilds caches layer by layer: only for plain full-attention
        models (every layer a slab layer; no sliding windows or linear attention)."""
        cache = _new_cache(self.model.config)
        return bool(cache.layers) and all(type(layer) is _SLAB_LAYER for layer in cache.layers)

    # ---- public API ------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Token ids the engine accepts are ``0..vocab_size-1`` (the embedding's rows)."""
        return self._vocab

    def _check_ids(self, ids: list[int]) -> None:
        """Refuse ids the embedding has no row for: inside a batched step they would fail
        every request sharing the step."""
        check_token_ids(ids, self._vocab)

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Future[list[Completion]]:
        fut: Future = Future()
        if len(prompt_ids) == 0:
            fut.set_exception(ValueError("empty prompt"))
            return fut
        try:
            self._check_ids(prompt_ids)
        except ValueError as exc:
            fut.set_exception(exc)
            return fut
        if len(prompt_ids) >= self.max_model_len:
            fut.set_exception(
                ValueError(
                    f"prompt has {len(prompt_ids)} tokens; max_model_len is {self.max_model_len} "
                    "(no room for a response)"
                )
            )
            return fut
        self._put(_Request(list(prompt_ids), params, fut))
        return fut

    def submit_score(self, token_ids: list[int]) -> Future[list[float]]:
        fut: Future = Future()
        try:
            self._check_ids(token_ids)
        except ValueError as exc:
            fut.set_exception(exc)
            return fut
        if len(token_ids) > self.max_model_len:
            fut.set_exception(
                ValueError(f"{len(token_ids)} tokens exceed max_model_len {self.max_model_len}")
            )
            return fut
        self._put(_Score(list(token_ids), fut))
        return fut

    def update_weights(self, state_dict: dict[str, Any], version: int | None = None) -> None:
        fut: Future = Future()
        self._put(_WeightUpdate(state_dict, version, fut))
        fut.result()

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._inbox.put(_CLOSE)
        self._thread.join(timeout=30)
        if self._padding is not None:
            self._padding.remove()
            self._padding = None

    def _put(self, item: _Request | _Score | _WeightUpdate) -> None:
        """Queue an item, or fail it at once when the engine is closed.

        Under the lock, so an item can never slip into the inbox behind the close
        marker, where nobody would ever resolve it.
        """
        with self._close_lock:
            if not self._closed:
                self._inbox.put(item)
                return
        item.future.set_exception(RuntimeError("engine is closed"))

    # ---- worker loop -----------------------------------------------------------------

    def _collect(self, block: bool) -> bool:
        """Move inbox items to their queues; False once the engine is closing."""
        items: list[Any] = []
        if block:
            items.append(self._inbox.get())
            deadline = time.monotonic() + self.batch_window
            while len(items) < self.max_batch_size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    items.append(self._inbox.get(timeout=remaining))
                except queue.Empty:
                    break
        while True:
            try:
                items.append(self._inbox.get_nowait())
            except queue.Empty:
                break
        for item in items:
            if item is _CLOSE:
                return False
            if isinstance(item, _Request):
                self._waiting.append(item)
            elif isinstance(item, _WeightUpdate):
                self._updates.append(item)
            else:
                self._run_score(item)
        return True

    def _loop(self) -> None:
        with torch.inference_mode():
            while True:
                if not self._collect(
                    block=not self._rows and not self._waiting and not self._updates
                ):
                    break
                if self._updates and not self._rows:
                    self._apply_updates()
                    continue
                try:
                    if not self._updates:
                        start = time.perf_counter()
                        self._admit()
                        self.stats["prefill_s"] += time.perf_counter() - start
                    if self._rows:
                        start = time.perf_counter()
                        self._decode_step()
                        self.stats["decode_s"] += time.perf_counter() - start
                except Exception as exc:  # fail the affected requests, keep serving
                    logger.exception("hf engine step failed")
                    self._fail_running(exc)
        self._shutdown()

    def _shutdown(self) -> None:
        """Fail everything still queued or running (the close marker is the last inbox item)."""
        err = RuntimeError("engine closed")
        pending: list[Any] = [*self._waiting, *self._updates]
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                break
            if item is not _CLOSE:
                pending.append(item)
        for item in pending:
            _settle(item.future, exc=err)
        self._waiting, self._updates = [], []
        self._fail_running(err)

    def _fail_running(self, exc: Exception) -> None:
        for req in {id(r.request): r.request for r in self._rows}.values():
            _settle(req.future, exc=exc)
        self._rows, self._cache, self._mask, self._next = [], None, None, None
        self._refresh_row_params()

    def _apply_updates(self) -> None:
        known = set(self.model.state_dict())
        for upd in self._updates:
            try:
                # partial updates (e.g. only LoRA-merged layers) are fine; names the
                # model does not have would be ignored by strict=False, and an update
                # that silently changes nothing is worse than an error
                unknown = sorted(set(upd.state_dict) - known)
                if unknown:
                    raise ValueError(
                        f"update_weights got {len(unknown)} names the model does not have, "
                        f"e.g. {unknown[:3]}; expected names like {sorted(known)[:2]}"
                    )
                self.model.load_state_dict(upd.state_dict, strict=False)
                if self._prefix is not None:
                    self._prefix.clear()  # stored keys/values came from the old weights
                self._model_version = (
                    self._model_version + 1 if upd.version is None else upd.version
                )
                upd.future.set_result(None)
            except Exception as exc:
                upd.future.set_exception(exc)
        self._updates = []

    def _run_score(self, item: _Score) -> None:
        if item.future.cancelled():
            return
        try:
            ids = torch.tensor([item.token_ids], device=self.device)
            logits = self.model(input_ids=ids, use_cache=False).logits[0, :-1].float()
            logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None])[:, 0]
        except Exception as exc:
            _settle(item.future, exc=exc)
            return
        _settle(item.future, logp.tolist())

    # ---- batching --------------------------------------------------------------------

    def _admit(self) -> None:
        """Prefill waiting requests that fit and merge them into the running batch."""
        admitted: list[_Request] = []
        rows = len(self._rows)
        while self._waiting:
            req = self._waiting[0]
            if rows and rows + req.params.n > self.max_batch_size:
                break
            self._waiting.pop(0)
            if req.future.cancelled():  # abandoned while queued
                continue
            admitted.append(req)
            rows += req.params.n
        if not admitted:
            return
        plain: list[_Request] = []
        reused: list[tuple[_Request, int, Any]] = []
        for req in admitted:
            hit = self._prefix.longest_prefix(req.prompt_ids) if self._prefix else None
            if hit is None:
                plain.append(req)
            else:
                self.stats["prefix_hits"] += 1
                self.stats["prefix_reused_tokens"] += hit[0]
                reused.append((req, *hit))
        if plain:
            self._admit_part(plain, lambda: self._prefill(plain))
        if reused:
            self._admit_part([r for r, _, _ in reused], lambda: self._prefill_from(reused))

    def _admit_part(self, requests: list[_Request], prefill: Callable[[], Any]) -> None:
        try:
            cache, mask, tokens, new_rows = prefill()
        except Exception as exc:  # fail what this prefill held; the running batch goes on
            logger.exception("hf engine prefill failed")
            for req in requests:
                _settle(req.future, exc=exc)
            return
        try:
            self._merge(cache, mask, tokens, new_rows)
            self._retire_finished()
        except Exception as exc:
            # the merge rewrites the running batch in place: a failure leaves it
            # untrustworthy, so the caller fails every row; the admitted requests may
            # not be rows yet, so fail them here
            for req in requests:
                _settle(req.future, exc=exc)
            raise

    def _prefill(
        self, admitted: list[_Request]
    ) -> tuple[Any, torch.Tensor, torch.Tensor, list[_Row]]:
        """Run the prompts of ``admitted`` and sample their first tokens; the result is
        merged into the running batch by the caller."""
        self.stats["prefills"] += 1
        if self._rows:
            self.stats["joins"] += 1
        width = max(len(r.prompt_ids) for r in admitted)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(admitted), width), pad, dtype=torch.long)
        mask = torch.zeros((len(admitted), width), dtype=torch.long)
        for i, req in enumerate(admitted):
            ids[i, width - len(req.prompt_ids) :] = torch.tensor(req.prompt_ids)
            mask[i, width - len(req.prompt_ids) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        cache = _new_cache(self.model.config)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return self._start_rows(admitted, cache, mask, out.logits)

    def _prefill_from(
        self, reused: list[tuple[_Request, int, Any]]
    ) -> tuple[Any, torch.Tensor, torch.Tensor, list[_Row]]:
        """Prefill requests whose first ``n`` prompt tokens have stored KV ``states``
        (one ``(request, n, states)`` each): only the rest of each prompt goes through
        the model, all in one batch. Row ``i`` is laid out as its stored positions
        (right-aligned in the widest stored length) followed by its new tokens
        (right-aligned in the widest rest); the padding in between is masked out."""
        self.stats["prefills"] += 1
        if self._rows:
            self.stats["joins"] += 1
        stored = max(n for _, n, _ in reused)
        fresh = max(len(req.prompt_ids) - n for req, n, _ in reused)
        rows = len(reused)
        ids = torch.full((rows, fresh), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((rows, stored + fresh), dtype=torch.long)
        positions = torch.zeros((rows, fresh), dtype=torch.long)
        for i, (req, n, _) in enumerate(reused):
            rest = req.prompt_ids[n:]
            ids[i, fresh - len(rest) :] = torch.tensor(rest)
            mask[i, stored - n : stored] = 1
            mask[i, stored + fresh - len(rest) :] = 1
            positions[i, fresh - len(rest) :] = torch.arange(n, n + len(rest))
        cache = _new_cache(self.model.config)
        for layer_index, layer in enumerate(cache.layers):
            keys = torch.cat([_left_pad(st[layer_index][0][None], stored) for _, _, st in reused])
            values = torch.cat([_left_pad(st[layer_index][1][None], stored) for _, _, st in reused])
            _set_layer(layer, keys, values)
        ids, mask, positions = ids.to(self.device), mask.to(self.device), positions.to(self.device)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return self._start_rows([req for req, _, _ in reused], cache, mask, out.logits)

    def _start_rows(
        self, admitted: list[_Request], cache: Any, mask: torch.Tensor, logits: torch.Tensor
    ) -> tuple[Any, torch.Tensor, torch.Tensor, list[_Row]]:
        """One row per sample of each prefilled request (``n`` rows share its cache),
        with its first token sampled from the prompt's last logits."""
        fan_out: list[int] = []
        new_rows: list[_Row] = []
        for i, req in enumerate(admitted):
            req.results = [None] * req.params.n
            req.remaining = req.params.n
            max_new = min(req.params.max_tokens, self.max_model_len - len(req.prompt_ids))
            for k in range(req.params.n):
                new_rows.append(_Row(req, k, random.Random(self._row_seed(req, k)), max_new))
                fan_out.append(i)
        index = torch.tensor(fan_out, device=self.device)
        if fan_out != list(range(len(admitted))):
            cache.batch_select_indices(index)
        tokens = self._sample(logits[index, -1], new_rows)
        return cache, mask[index], tokens, new_rows

    def _row_seed(self, req: _Request, k: int) -> int:
        if req.params.seed is not None:
            return (req.params.seed * 1_000_003 + k) & 0x7FFFFFFF
        self._request_counter += 1
        return (self.seed * 1_000_003 + self._request_counter) & 0x7FFFFFFF

    def _merge(
        self, cache: Any, mask: torch.Tensor, tokens: torch.Tensor, rows: list[_Row]
    ) -> None:
        if not self._rows:
            self._cache, self._mask, self._next, self._rows = cache, mask, tokens, rows
        else:
            width = max(self._mask.shape[1], mask.shape[1])
            for old_layer, new_layer in zip(self._cache.layers, cache.layers, strict=True):
                keys = torch.cat(
                    [_left_pad(old_layer.keys, width), _left_pad(new_layer.keys, width)]
                )
                values = torch.cat(
                    [_left_pad(old_layer.values, width), _left_pad(new_layer.values, width)]
                )
                _set_layer(old_layer, keys, values)
            self._mask = torch.cat(
                [_left_pad(self._mask, width, dim=1), _left_pad(mask, width, dim=1)]
            )
            self._next = torch.cat([self._next, tokens])
            self._rows = self._rows + rows
        self._refresh_row_params()
        self.stats["max_rows"] = max(self.stats["max_rows"], len(self._rows))

    def _refresh_row_params(self) -> None:
        params = [row.request.params for row in self._rows]
        self._temps = [p.temperature for p in params]
        self._top_ks = [p.top_k for p in params]
        self._top_ps = [p.top_p for p in params]

    def _decode_step(self) -> None:
        self.stats["decode_steps"] += 1
        mask = torch.cat([self._mask, torch.ones_like(self._mask[:, :1])], dim=1)
        out = self.model(
            input_ids=self._next[:, None],
            attention_mask=mask,
            position_ids=mask.sum(-1, keepdim=True) - 1,
            past_key_values=self._cache,
            use_cache=True,
        )
        self._mask = mask
        self._next = self._sample(out.logits[:, -1], self._rows)
        self._retire_finished()

    def _sample(self, logits: torch.Tensor, rows: list[_Row]) -> torch.Tensor:
        """Sample the next token of every row; record it with its raw log-probability."""
        logits = logits.float()
        if rows is self._rows:
            temps, top_ks, top_ps = self._temps, self._top_ks, self._top_ps
        else:  # rows of a fresh prefill, not yet part of the batch
            temps = [r.request.params.temperature for r in rows]
            top_ks = [r.request.params.top_k for r in rows]
            top_ps = [r.request.params.top_p for r in rows]
        uniforms = [row.rng.random() for row in rows]
        raw = torch.log_softmax(logits, dim=-1)
        chosen = sample_batch(logits, temps, top_ks, top_ps, uniforms, logprobs=raw)
        logp = raw.gather(-1, chosen[:, None])[:, 0]
        for row, tok, lp in zip(rows, chosen.tolist(), logp.tolist(), strict=True):
            row.tokens.append(tok)
            row.logprobs.append(lp)
        want = [row.request.params.top_logprobs for row in rows]
        if any(want):
            values, ids = raw.topk(max(want), dim=-1)
            for row, k, vs, ts in zip(rows, want, values.tolist(), ids.tolist(), strict=True):
                if k:
                    if row.top is None:
                        row.top = []
                    row.top.append(list(zip(ts[:k], vs[:k], strict=True)))
        self.stats["generated_tokens"] += len(rows)
        return chosen

    def _finish_reason(self, row: _Row) -> str | None:
        params = row.request.params
        last = row.tokens[-1]
        if last in self._eos or last in params.stop_token_ids:
            return "stop"
        if params.stop:
            tail = self.tokenizer.decode(row.tokens[-16:])
            if any(s in tail for s in params.stop):
                return "stop"
        if len(row.tokens) >= row.max_new:
            return "length"
        return None

    def _remember(self, i: int, row: _Row) -> None:
        """Store a finished row's KV: its prompt and every sampled token but the last
        (whose KV was never computed) are what the cache holds for it."""
        ids = (*row.request.prompt_ids, *row.tokens[:-1])
        if len(ids) < self._prefix.min_tokens:
            return
        cached = int(self._mask[i].sum())
        if cached != len(ids):  # cannot happen; never store states that do not match
            logger.warning("prefix cache: row holds %d positions for %d ids", cached, len(ids))
            return
        self._prefix.put(ids, _row_states(self._cache, i, self._mask[i]))

    def _retire_finished(self) -> None:
        keep: list[int] = []
        for i, row in enumerate(self._rows):
            req = row.request
            if req.future.cancelled():  # abandoned: free its row now
                self.stats["cancelled_rows"] += 1
                continue
            reason = self._finish_reason(row)
            if reason is None:
                keep.append(i)
                continue
            if self._prefix is not None:
                self._remember(i, row)
            req.results[row.index] = Completion(row.tokens, row.logprobs, reason, row.top)
            req.remaining -= 1
            if req.remaining == 0:
                _settle(req.future, req.results)
        if len(keep) == len(self._rows):
            return
        if not keep:
            self._rows, self._cache, self._mask, self._next = [], None, None, None
            self._refresh_row_params()
            return
        index = torch.tensor(keep, device=self._mask.device)
        self._cache.batch_select_indices(index)
        self._mask = self._mask[index]
        self._next = self._next[index]
        self._rows = [self._rows[i] for i in keep]
        self._refresh_row_params()
        # drop leading columns that are padding for every remaining row
        first = int(self._mask.any(dim=0).int().argmax())
        if first > 0:
            self._mask = self._mask[:, first:]
            for layer in self._cache.layers:
                if hasattr(layer, "trim_left"):
                    layer.trim_left(first)
                else:
                    layer.keys = layer.keys[:, :, first:]
                    layer.values = layer.values[:, :, first:]


def _row_states(
    cache: Any, row: int, mask: torch.Tensor
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Copies of one batch row's cached positions where ``mask`` is set, layer by layer
    (a row's positions need not be contiguous: see ``_prefill_from``)."""
    columns = mask.bool()
    return [(layer.keys[row][:, columns], layer.values[row][:, columns]) for layer in cache.layers]


def _left_pad(t: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t.new_zeros(shape), t], dim=dim)
