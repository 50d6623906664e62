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
* each row samples with its own seeded ``torch.Generator``, so a request with a
  seed is reproducible.

Log-probabilities are those of the raw model (temperature 1), matching what a
fresh forward pass of the same weights computes.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from reinforge.models.engine import Completion, InferenceEngine, SamplingParams
from reinforge.models.sampling import sample_token
from reinforge.models.tokenizer import HFChatTokenizer

logger = logging.getLogger(__name__)


@dataclass
class _Request:
    prompt_ids: list[int]
    params: SamplingParams
    future: Future
    results: list[Completion | None] = field(default_factory=list)
    remaining: int = 0


@dataclass
class _Row:
    request: _Request
    index: int
    generator: torch.Generator
    max_new: int
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


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
    ) -> None:
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
        self.stats = {"decode_steps": 0, "prefills": 0, "generated_tokens": 0}
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="reinforge-hf-engine", daemon=True)
        self._thread.start()

    # ---- public API ------------------------------------------------------------------

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Future[list[Completion]]:
        fut: Future = Future()
        if self._closed:
            fut.set_exception(RuntimeError("engine is closed"))
            return fut
        if len(prompt_ids) == 0:
            fut.set_exception(ValueError("empty prompt"))
            return fut
        if len(prompt_ids) >= self.max_model_len:
            fut.set_exception(
                ValueError(
                    f"prompt has {len(prompt_ids)} tokens; max_model_len is {self.max_model_len} "
                    "(no room for a response)"
                )
            )
            return fut
        self._inbox.put(_Request(list(prompt_ids), params, fut))
        return fut

    def submit_score(self, token_ids: list[int]) -> Future[list[float]]:
        fut: Future = Future()
        if len(token_ids) > self.max_model_len:
            fut.set_exception(
                ValueError(f"{len(token_ids)} tokens exceed max_model_len {self.max_model_len}")
            )
            return fut
        self._inbox.put(_Score(list(token_ids), fut))
        return fut

    def update_weights(self, state_dict: dict[str, Any], version: int | None = None) -> None:
        fut: Future = Future()
        self._inbox.put(_WeightUpdate(state_dict, version, fut))
        fut.result()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._inbox.put(_CLOSE)
            self._thread.join(timeout=30)

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
                        self._admit()
                    if self._rows:
                        self._decode_step()
                except Exception as exc:  # fail the affected requests, keep serving
                    logger.exception("hf engine step failed")
                    self._fail_running(exc)
        err = RuntimeError("engine closed")
        for req in self._waiting:
            req.future.set_exception(err)
        self._fail_running(err)

    def _fail_running(self, exc: Exception) -> None:
        for req in {id(r.request): r.request for r in self._rows}.values():
            if not req.future.done():
                req.future.set_exception(exc)
        self._rows, self._cache, self._mask, self._next = [], None, None, None

    def _apply_updates(self) -> None:
        for upd in self._updates:
            try:
                self.model.load_state_dict(upd.state_dict, strict=False)
                self._model_version = (
                    self._model_version + 1 if upd.version is None else upd.version
                )
                upd.future.set_result(None)
            except Exception as exc:
                upd.future.set_exception(exc)
        self._updates = []

    def _run_score(self, item: _Score) -> None:
        try:
            ids = torch.tensor([item.token_ids], device=self.device)
            logits = self.model(input_ids=ids, use_cache=False).logits[0, :-1].float()
            logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[0, 1:, None])[:, 0]
            item.future.set_result(logp.tolist())
        except Exception as exc:
            item.future.set_exception(exc)

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
            if req.future.cancelled():
                continue
            admitted.append(req)
            rows += req.params.n
        if not admitted:
            return
        self.stats["prefills"] += 1
        width = max(len(r.prompt_ids) for r in admitted)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(admitted), width), pad, dtype=torch.long)
        mask = torch.zeros((len(admitted), width), dtype=torch.long)
        for i, req in enumerate(admitted):
            ids[i, width - len(req.prompt_ids) :] = torch.tensor(req.prompt_ids)
            mask[i, width - len(req.prompt_ids) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        from transformers import DynamicCache

        cache = DynamicCache(config=self.model.config)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        fan_out: list[int] = []
        new_rows: list[_Row] = []
        for i, req in enumerate(admitted):
            req.results = [None] * req.params.n
            req.remaining = req.params.n
            max_new = min(req.params.max_tokens, self.max_model_len - len(req.prompt_ids))
            for k in range(req.params.n):
                gen = torch.Generator(device="cpu")
                gen.manual_seed(self._row_seed(req, k))
                new_rows.append(_Row(req, k, gen, max_new))
                fan_out.append(i)
        index = torch.tensor(fan_out, device=self.device)
        if len(fan_out) != len(admitted) or fan_out != list(range(len(admitted))):
            cache.batch_select_indices(index)
        logits = out.logits[index, -1]
        tokens = self._sample(logits, new_rows)
        self._merge(cache, mask[index], tokens, new_rows)
        self._retire_finished()

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
            return
        width = max(self._mask.shape[1], mask.shape[1])
        for old_layer, new_layer in zip(self._cache.layers, cache.layers, strict=True):
            old_layer.keys = torch.cat(
                [_left_pad(old_layer.keys, width), _left_pad(new_layer.keys, width)]
            )
            old_layer.values = torch.cat(
                [_left_pad(old_layer.values, width), _left_pad(new_layer.values, width)]
            )
        self._mask = torch.cat([_left_pad(self._mask, width, dim=1), _left_pad(mask, width, dim=1)])
        self._next = torch.cat([self._next, tokens])
        self._rows = self._rows + rows

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
        logits = logits.float()
        logp = torch.log_softmax(logits, dim=-1)
        chosen = []
        for i, row in enumerate(rows):
            p = row.request.params
            tok = sample_token(logits[i], p.temperature, p.top_k, p.top_p, row.generator)
            row.tokens.append(tok)
            row.logprobs.append(float(logp[i, tok]))
            chosen.append(tok)
        self.stats["generated_tokens"] += len(rows)
        return torch.tensor(chosen, device=logits.device)

    def _finish_reason(self, row: _Row) -> str | None:
        params = row.request.params
        last = row.tokens[-1]
        if last in self.tokenizer.eos_token_ids or last in params.stop_token_ids:
            return "stop"
        if params.stop:
            tail = self.tokenizer.decode(row.tokens[-16:])
            if any(s in tail for s in params.stop):
                return "stop"
        if len(row.tokens) >= row.max_new:
            return "length"
        return None

    def _retire_finished(self) -> None:
        keep: list[int] = []
        for i, row in enumerate(self._rows):
            reason = self._finish_reason(row)
            if reason is None:
                keep.append(i)
                continue
            req = row.request
            req.results[row.index] = Completion(row.tokens, row.logprobs, reason)
            req.remaining -= 1
            if req.remaining == 0 and not req.future.done():
                req.future.set_result(req.results)
        if len(keep) == len(self._rows):
            return
        if not keep:
            self._rows, self._cache, self._mask, self._next = [], None, None, None
            return
        index = torch.tensor(keep, device=self._mask.device)
        self._cache.batch_select_indices(index)
        self._mask = self._mask[index]
        self._next = self._next[index]
        self._rows = [self._rows[i] for i in keep]
        # drop leading columns that are padding for every remaining row
        first = int(self._mask.any(dim=0).float().argmax())
        if first > 0:
            self._mask = self._mask[:, first:]
            for layer in self._cache.layers:
                layer.keys = layer.keys[:, :, first:]
                layer.values = layer.values[:, :, first:]


def _left_pad(t: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t.new_zeros(shape), t], dim=dim)
