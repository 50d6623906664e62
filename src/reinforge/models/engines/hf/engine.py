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
the KV cache lives in buffers with spare columns (``kv_cache``), so a decode
step writes one column instead of re-concatenating every layer's cache; and on
CPU the vocabulary projection of a shrinking batch is padded to 16 rows, where
MKL's kernel is faster than for 6-15 rows (``logits_padding``).

Threads: the decode step is a few hundred small ops, each an OpenMP parallel
region. With ``torch.get_num_threads()`` equal to the core count, any other busy
thread or process on those cores stalls every region (measured on 2 cores: a
step went from 70 ms to several hundred ms under competing load), while one
thread degrades gracefully. Pass ``num_threads=1`` when workflows or other
processes keep the cores busy; the default leaves torch's setting alone.

Log-probabilities are those of the raw model (temperature 1), matching what a
fresh forward pass of the same weights computes.

A vision-language model (``AutoModelForImageTextToText``, loaded with its processor)
serves text requests the same way; a request with images (``submit_multimodal``)
is prefilled on its own, with its ``pixel_values`` and the other processor tensors,
and then joins the running batch: once the image is in the KV cache, decoding needs
token ids only (``multimodal_prefill``).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import torch

from reinforge.core.precision import resolve_dtype
from reinforge.models.engine import (
    Completion,
    InferenceEngine,
    SamplingParams,
    check_token_ids,
    failed_future,
)
from reinforge.models.engines.hf.batch_admission import BatchAdmission
from reinforge.models.engines.hf.int8 import full_precision, quantize_for_sampling
from reinforge.models.engines.hf.kv_cache import only_slab_layers
from reinforge.models.engines.hf.loading import load_causal_lm
from reinforge.models.engines.hf.logits_padding import LogitsRowPadding
from reinforge.models.engines.hf.multimodal_prefill import text_config
from reinforge.models.engines.hf.weight_release import ReleasedWeights, not_loaded_error
from reinforge.models.engines.hf.weight_share import own_parameters, share_parameters
from reinforge.models.engines.hf.work_items import (
    CLOSE,
    BatchRow,
    ReleaseWeights,
    SampleRequest,
    ScoreRequest,
    ShareWeights,
    WeightUpdate,
    settle,
)
from reinforge.models.prefix_cache import PrefixCache
from reinforge.models.tokenizer import HFChatTokenizer

logger = logging.getLogger(__name__)


class HFEngine(BatchAdmission, InferenceEngine):
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
        quantize: str | None = None,
        free_weights_while_training: bool = True,
        share_weights_with_trainer: bool = True,
    ) -> None:
        """``pad_logits_rows``: see ``LogitsRowPadding``; default on for CPU.
        ``prefix_cache_tokens``: token budget of the ``PrefixCache`` (0: off).
        ``quantize``: ``int8`` samples through int8 copies of the Linear layers (``int8``).
        ``free_weights_while_training``: a training loop of this process may drop the
        weights during a step that a full sync follows (``release_weights``).
        ``share_weights_with_trainer``: such a loop may have the engine read the trainer's
        own tensors instead (``share_weights``, where dtypes match)."""
        super().__init__()
        if num_threads:
            torch.set_num_threads(num_threads)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if model is None:
            if model_path is None:
                raise ValueError("HFEngine needs model_path or model")
            dtype = resolve_dtype(dtype, self.device, "model.hf.dtype")
            model, tokenizer = load_causal_lm(model_path, self.device, getattr(torch, dtype))
        if hasattr(tokenizer, "image_processor") and hasattr(tokenizer, "tokenizer"):
            self.processor, tokenizer = tokenizer, tokenizer.tokenizer  # a VLM's processor
        self.model = model
        self._int8 = quantize_for_sampling(model, quantize)
        #: int8 copies are made from the weights and would outlive them: not freed then
        self.free_weights_while_training = free_weights_while_training and self._int8 is None
        self._released: ReleasedWeights | None = None
        self.share_weights_with_trainer = share_weights_with_trainer and self._int8 is None
        #: whether the parameters are another module's tensors (``share_weights``)
        self.weights_shared = False
        self.model_path = (
            str(model_path) if model_path else getattr(model.config, "_name_or_path", "")
        )
        gen_cfg = getattr(model, "generation_config", None)
        extra_eos = getattr(gen_cfg, "eos_token_id", None) if gen_cfg is not None else None
        extra_eos = [extra_eos] if isinstance(extra_eos, int) else list(extra_eos or [])
        self.tokenizer = HFChatTokenizer(tokenizer, extra_eos_ids=extra_eos)
        self._eos = frozenset(self.tokenizer.eos_token_ids)
        config = text_config(model.config)
        self._vocab = int(getattr(config, "vocab_size", None) or len(tokenizer))
        limit = getattr(config, "max_position_embeddings", None) or 4096
        self.max_model_len = min(max_model_len or limit, limit)
        self.max_batch_size = max_batch_size
        self.batch_window = batch_window_ms / 1000.0
        self.seed = seed
        self._request_counter = 0
        self._inbox: queue.Queue = queue.Queue()
        self._waiting: list[SampleRequest] = []
        self._updates: list[WeightUpdate] = []
        # running batch state
        self._rows: list[BatchRow] = []
        self._cache: Any = None
        self._mask: torch.Tensor | None = None
        self._next: torch.Tensor | None = None
        # per-row sampling settings, rebuilt whenever the batch membership changes
        self._temps: list[float] = []
        self._top_ks: list[int] = []
        self._top_ps: list[float] = []
        #: counters for benchmarks and tests: decode steps, prefills, prefills that
        #: joined a running batch, requests whose identical prompt was prefilled for
        #: another request of the same prefill, sampled tokens, largest batch seen, and
        #: seconds spent prefilling / decoding (wall clock of the worker thread)
        self.stats: dict[str, float] = {
            "decode_steps": 0,
            "cancelled_rows": 0,
            "prefills": 0,
            "joins": 0,
            "shared_prefills": 0,
            "generated_tokens": 0,
            "max_rows": 0,
            "prefill_s": 0.0,
            "decode_s": 0.0,
        }
        self.stats["prefix_hits"] = 0
        self.stats["prefix_reused_tokens"] = 0
        self._prefix: PrefixCache | None = None
        if prefix_cache_tokens > 0 and only_slab_layers(model.config):
            self._prefix = PrefixCache(prefix_cache_tokens)
        self._closed = False
        self._close_lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="reinforge-hf-engine", daemon=True)
        self._padding: LogitsRowPadding | None = None
        if pad_logits_rows is None:
            pad_logits_rows = str(self.device).startswith("cpu")
        head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if pad_logits_rows and isinstance(head, torch.nn.Linear):
            self._padding = LogitsRowPadding(head, lambda: self._thread.ident)
        self._thread.start()

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
        return self._submit_sample(prompt_ids, params, None)

    def submit_multimodal(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        multi_modal_inputs: dict[str, Any],
        source: Any = None,
    ) -> Future[list[Completion]]:
        if self.processor is None:
            return failed_future(
                ValueError(
                    f"model '{self.model_path}' is text-only (it has no processor): it cannot "
                    "take images; point model_path at a vision-language model directory"
                )
            )
        return self._submit_sample(prompt_ids, params, dict(multi_modal_inputs))

    def _submit_sample(
        self, prompt_ids: list[int], params: SamplingParams, mm: dict[str, Any] | None
    ) -> Future[list[Completion]]:
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
        self._put(SampleRequest(list(prompt_ids), params, fut, multi_modal_inputs=mm))
        return fut

    scores_with_temperature = True

    def submit_score(self, token_ids: list[int], temperature: float = 1.0) -> Future[list[float]]:
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
        self._put(ScoreRequest(list(token_ids), fut, float(temperature)))
        return fut

    def score_replicas(self, token_ids: list[int]) -> list[tuple[str, list[float]]]:
        """``score`` as each replica answers it (one here, the model in this process):
        the weight check after a sync asks every replica of an engine."""
        return [("replica 0", self.score(token_ids))]

    def update_weights(self, state_dict: dict[str, Any], version: int | None = None) -> None:
        fut: Future = Future()
        self._put(WeightUpdate(state_dict, version, fut))
        fut.result()

    def receive_weights(
        self, buckets: Iterable[dict[str, Any]], version: int | None = None
    ) -> None:
        """Streamed weights, copied into the parameters bucket by bucket (cast to the
        engine's dtype) by the engine's thread, between decode steps: no request runs
        on a half-loaded model, and no second copy of the model is built."""
        fut: Future = Future()
        self._put(WeightUpdate(buckets, version, fut))
        fut.result()

    @property
    def weights_dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype  # the dtype the engine computes in

    def share_weights(self, tensors: dict[str, Any], version: int | None = None) -> str | None:
        """Read ``tensors`` (a trainer's parameters, by the model's names) in place of
        the engine's own weights, from between two decode steps on (``weight_share``).
        Returns None when shared, else why not (then nothing changed)."""
        fut: Future = Future()
        self._put(ShareWeights(tensors, version, fut))
        return fut.result()

    def release_weights(self) -> None:
        """Free the weights until the next update brings all of them back (a training
        step of this process, which a full sync follows); sampling and scoring are
        refused meanwhile. Waits for running requests to finish first."""
        fut: Future = Future()
        self._put(ReleaseWeights(fut))
        fut.result()

    @property
    def weights_released(self) -> bool:
        """True from ``release_weights`` until an update has brought every weight back."""
        return self._released is not None

    def close(self) -> None:
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            self._inbox.put(CLOSE)
        self._thread.join(timeout=30)
        if self._padding is not None:
            self._padding.remove()
            self._padding = None

    def _put(self, item: SampleRequest | ScoreRequest | WeightUpdate) -> None:
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
            # the window gathers samples into one prefill; a lone score (the weight
            # check after a sync) or weight update has nothing to wait for
            window = self.batch_window if isinstance(items[0], SampleRequest) else 0.0
            deadline = time.monotonic() + window
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
            if item is CLOSE:
                return False
            if isinstance(item, SampleRequest):
                self._waiting.append(item)
            elif isinstance(item, (WeightUpdate, ReleaseWeights, ShareWeights)):
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
                    if self._released is not None and self._waiting:
                        err = not_loaded_error(self._released.missing)
                        for req in self._waiting:
                            settle(req.future, exc=err)
                        self._waiting = []
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
            if item is not CLOSE:
                pending.append(item)
        for item in pending:
            settle(item.future, exc=err)
        self._waiting, self._updates = [], []
        self._fail_running(err)

    def _fail_running(self, exc: Exception) -> None:
        for req in {id(r.request): r.request for r in self._rows}.values():
            settle(req.future, exc=exc)
        self._rows, self._cache, self._mask, self._next = [], None, None, None
        self._refresh_row_params()

    def _apply_updates(self) -> None:
        known = set(self.model.state_dict())
        for upd in self._updates:
            try:
                if isinstance(upd, ReleaseWeights):
                    if not self.free_weights_while_training:
                        raise RuntimeError("this hf engine keeps its weights (int8 or not enabled)")
                    if self._released is None:
                        self._released = ReleasedWeights(self.model)
                    if self._prefix is not None:
                        self._prefix.clear()
                    self.weights_shared = False  # the shared tensors were let go
                    upd.future.set_result(None)
                    continue
                if isinstance(upd, ShareWeights):
                    upd.future.set_result(self._share(upd))
                    continue
                if self.weights_shared:  # copy into storage of our own, not the trainer's
                    own_parameters(self.model)
                    self.weights_shared = False
                # a dict: one whole update; anything else: streamed buckets
                parts = [upd.state_dict] if isinstance(upd.state_dict, dict) else upd.state_dict
                for part in parts:
                    # partial updates (e.g. only LoRA-merged layers) are fine; names the
                    # model does not have would be ignored by strict=False, and an update
                    # that silently changes nothing is worse than an error
                    unknown = sorted(set(part) - known)
                    if unknown:
                        raise ValueError(
                            f"update_weights got {len(unknown)} names the model does not "
                            f"have, e.g. {unknown[:3]}; expected names like {sorted(known)[:2]}"
                        )
                    if self._released is not None:
                        self._released.rebuild(part)
                    self.model.load_state_dict(part, strict=False)
                    del part
                if self._released is not None:
                    if not self._released.complete:
                        raise not_loaded_error(self._released.missing)
                    self._released = None
                if self._prefix is not None:
                    self._prefix.clear()  # stored keys/values came from the old weights
                if self._int8 is not None:
                    self._int8.requantize()  # sample from the new weights, not the old copies
                self._model_version = (
                    self._model_version + 1 if upd.version is None else upd.version
                )
                upd.future.set_result(None)
            except Exception as exc:
                upd.future.set_exception(exc)
        self._updates = []

    def _share(self, upd: ShareWeights) -> str | None:
        if self._int8 is not None:
            return "int8 sampling keeps copies made from the engine's own weights"
        dropped = self._released.shapes() if self._released is not None else None
        why = share_parameters(self.model, upd.tensors, dropped)
        if why is None:
            self._released, self.weights_shared = None, True
            if self._prefix is not None:
                self._prefix.clear()
            self._model_version = self._model_version + 1 if upd.version is None else upd.version
        return why

    def _run_score(self, item: ScoreRequest) -> None:
        if item.future.cancelled():
            return
        try:
            if self._released is not None:
                raise not_loaded_error(self._released.missing)
            ids = torch.tensor([item.token_ids], device=self.device)
            with full_precision(self._int8):  # scores (the weight check) see the fp32 weights
                logits = self.model(input_ids=ids, use_cache=False).logits[0, :-1].float()
            if item.temperature != 1.0:
                logits = logits / item.temperature
            logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None])[:, 0]
        except Exception as exc:
            settle(item.future, exc=exc)
            return
        settle(item.future, logp.tolist())
