"""The hf engine's decode loop: one step of the running batch, sampling, retirement.

Each step feeds every row's last token, samples the whole batch with a handful of
tensor ops (``sampling.sample_batch``), and retires rows that finished at once;
padding columns nobody needs any more are trimmed. Each row draws its randomness
from its own seeded ``random.Random``, so a request with a seed is reproducible
whatever else shares the batch (up to the float noise that batching adds to the
logits).
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from reinforge.models.engine import Completion
from reinforge.models.engines.hf.kv_cache import cache_kwargs, reserve, row_states, trim_left
from reinforge.models.engines.hf.work_items import BatchRow, settle
from reinforge.models.prefix_cache import PrefixCache
from reinforge.models.sampling import sample_batch
from reinforge.models.tokenizer import HFChatTokenizer

logger = logging.getLogger(__name__)


class DecodeLoop:
    """The running batch and its decode step (a mixin of ``HFEngine``, which sets
    these attributes up)."""

    model: Any
    tokenizer: HFChatTokenizer
    stats: dict[str, float]
    _eos: frozenset[int]
    _prefix: PrefixCache | None
    _rows: list[BatchRow]
    _cache: Any
    _mask: torch.Tensor | None
    _next: torch.Tensor | None
    _temps: list[float]
    _top_ks: list[int]
    _top_ps: list[float]

    def _refresh_row_params(self) -> None:
        params = [row.request.params for row in self._rows]
        self._temps = [p.temperature for p in params]
        self._top_ks = [p.top_k for p in params]
        self._top_ps = [p.top_p for p in params]

    @staticmethod
    def _spare_columns(rows: list[BatchRow]) -> int:
        """The most KV positions ``rows`` can still write: a row with ``t`` sampled
        tokens runs at most ``max_new - t`` more decode steps, one position each."""
        return max(row.max_new - len(row.tokens) for row in rows)

    def _decode_step(self) -> None:
        self.stats["decode_steps"] += 1
        mask = torch.cat([self._mask, torch.ones_like(self._mask[:, :1])], dim=1)
        out = self.model(
            input_ids=self._next[:, None],
            attention_mask=mask,
            position_ids=mask.sum(-1, keepdim=True) - 1,
            **cache_kwargs(self.model, self._cache),
            use_cache=True,
        )
        self._mask = mask
        self._next = self._sample(out.logits[:, -1], self._rows)
        self._retire_finished()

    def _sample(self, logits: torch.Tensor, rows: list[BatchRow]) -> torch.Tensor:
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

    def _finish_reason(self, row: BatchRow) -> str | None:
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

    def _remember(self, i: int, row: BatchRow) -> None:
        """Store a finished row's KV: its prompt and every sampled token but the last
        (whose KV was never computed) are what the cache holds for it. Rows whose prompt
        had images are not stored: the same ids may stand for other images."""
        if row.request.multi_modal_inputs is not None:
            return
        ids = (*row.request.prompt_ids, *row.tokens[:-1])
        if len(ids) < self._prefix.min_tokens:
            return
        cached = int(self._mask[i].sum())
        if cached != len(ids):  # cannot happen; never store states that do not match
            logger.warning("prefix cache: row holds %d positions for %d ids", cached, len(ids))
            return
        self._prefix.put(ids, row_states(self._cache, i, self._mask[i]))

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
            # updates wait for running rows to finish (see _apply_updates), so the
            # version now is the one of every forward pass that sampled this row
            req.results[row.index] = Completion(
                row.tokens, row.logprobs, reason, row.top, self._model_version
            )
            req.remaining -= 1
            if req.remaining == 0:
                settle(req.future, req.results)
        if len(keep) == len(self._rows):
            return
        if not keep:
            self._rows, self._cache, self._mask, self._next = [], None, None, None
            self._refresh_row_params()
            return
        index = torch.tensor(keep, device=self._mask.device)
        self._rows = [self._rows[i] for i in keep]
        reserve(self._cache, self._spare_columns(self._rows))
        self._cache.batch_select_indices(index)
        self._mask = self._mask[index]
        self._next = self._next[index]
        self._refresh_row_params()
        # drop leading columns that are padding for every remaining row
        first = int(self._mask.any(dim=0).int().argmax())
        if first > 0:
            self._mask = self._mask[:, first:]
            trim_left(self._cache, first)
