"""Admission into the hf engine's running batch: prefill, fan-out and merge.

Requests arriving within a short collection window are prefilled together
(left-padded); the ``n`` samples of a prompt share one prefill and fan out by
copying its KV cache rows; a request whose prompt starts with a prefix the
``PrefixCache`` holds prefills only the rest. New rows join a running batch
between decode steps (KV caches are left-padded to a common length and
concatenated).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from typing import Any

import torch

from reinforge.models.engines.hf.decode_loop import DecodeLoop
from reinforge.models.engines.hf.kv_cache import (
    cache_kwargs,
    left_pad,
    new_cache,
    reserve,
    set_layer,
)
from reinforge.models.engines.hf.multimodal_prefill import model_inputs
from reinforge.models.engines.hf.work_items import BatchRow, SampleRequest, settle

logger = logging.getLogger(__name__)


class BatchAdmission(DecodeLoop):
    """The prefill half of the continuous batch (a mixin of ``HFEngine``, which sets
    these attributes up)."""

    device: str
    max_batch_size: int
    max_model_len: int
    seed: int
    _request_counter: int
    _waiting: list[SampleRequest]

    def _admit(self) -> None:
        """Prefill waiting requests that fit and merge them into the running batch."""
        admitted: list[SampleRequest] = []
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
        plain: list[SampleRequest] = []
        reused: list[tuple[SampleRequest, int, Any]] = []
        for req in admitted:
            if req.multi_modal_inputs is not None:  # prefilled alone, with its images
                self._admit_part([req], lambda req=req: self._prefill_multimodal(req))
                continue
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

    def _admit_part(self, requests: list[SampleRequest], prefill: Callable[[], Any]) -> None:
        try:
            cache, mask, tokens, new_rows = prefill()
        except Exception as exc:  # fail what this prefill held; the running batch goes on
            logger.exception("hf engine prefill failed")
            for req in requests:
                settle(req.future, exc=exc)
            return
        try:
            self._merge(cache, mask, tokens, new_rows)
            self._retire_finished()
        except Exception as exc:
            # the merge rewrites the running batch in place: a failure leaves it
            # untrustworthy, so the caller fails every row; the admitted requests may
            # not be rows yet, so fail them here
            for req in requests:
                settle(req.future, exc=exc)
            raise

    def _prefill(
        self, admitted: list[SampleRequest]
    ) -> tuple[Any, torch.Tensor, torch.Tensor, list[BatchRow]]:
        """Run the prompts of ``admitted`` and sample their first tokens; the result is
        merged into the running batch by the caller."""
        self.stats["prefills"] += 1
        if self._rows:
            self.stats["joins"] += 1
        # identical prompts (the rollouts of one task, each its own request) are
        # prefilled once and fan out like the n samples of one request
        unique: dict[tuple[int, ...], int] = {}
        source = [unique.setdefault(tuple(req.prompt_ids), len(unique)) for req in admitted]
        self.stats["shared_prefills"] += len(admitted) - len(unique)
        width = max(len(prompt) for prompt in unique)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(unique), width), pad, dtype=torch.long)
        mask = torch.zeros((len(unique), width), dtype=torch.long)
        for i, prompt in enumerate(unique):
            ids[i, width - len(prompt) :] = torch.tensor(prompt)
            mask[i, width - len(prompt) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        cache = new_cache(self.model.config, spare=self._most_new(admitted))
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=(mask.cumsum(-1) - 1).clamp(min=0),
            **cache_kwargs(self.model, cache),
            use_cache=True,
            logits_to_keep=1,
        )
        return self._start_rows(admitted, cache, mask, out.logits, source)

    def _prefill_multimodal(
        self, req: SampleRequest
    ) -> tuple[Any, torch.Tensor, torch.Tensor, list[BatchRow]]:
        """Prefill one prompt with its images (see ``multimodal_prefill``)."""
        self.stats["prefills"] += 1
        if self._rows:
            self.stats["joins"] += 1
        ids = torch.tensor([req.prompt_ids], dtype=torch.long, device=self.device)
        mask = torch.ones_like(ids)
        cache = new_cache(self.model.config, spare=self._most_new([req]))
        dtype = next(self.model.parameters()).dtype
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            **cache_kwargs(self.model, cache),
            use_cache=True,
            logits_to_keep=1,
            **model_inputs(req.multi_modal_inputs, self.device, dtype),
        )
        return self._start_rows([req], cache, mask, out.logits)

    def _prefill_from(
        self, reused: list[tuple[SampleRequest, int, Any]]
    ) -> tuple[Any, torch.Tensor, torch.Tensor, list[BatchRow]]:
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
        cache = new_cache(self.model.config, spare=self._most_new([req for req, _, _ in reused]))
        for layer_index, layer in enumerate(cache.layers):
            keys = torch.cat([left_pad(st[layer_index][0][None], stored) for _, _, st in reused])
            values = torch.cat([left_pad(st[layer_index][1][None], stored) for _, _, st in reused])
            set_layer(layer, keys, values)
        ids, mask, positions = ids.to(self.device), mask.to(self.device), positions.to(self.device)
        out = self.model(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            **cache_kwargs(self.model, cache),
            use_cache=True,
            logits_to_keep=1,
        )
        return self._start_rows([req for req, _, _ in reused], cache, mask, out.logits)

    def _start_rows(
        self,
        admitted: list[SampleRequest],
        cache: Any,
        mask: torch.Tensor,
        logits: torch.Tensor,
        source: list[int] | None = None,
    ) -> tuple[Any, torch.Tensor, torch.Tensor, list[BatchRow]]:
        """One row per sample of each prefilled request (``n`` rows share its cache),
        with its first token sampled from the prompt's last logits. ``source[i]`` is
        the prefilled row holding request ``i``'s prompt (row ``i`` when None)."""
        fan_out: list[int] = []
        new_rows: list[BatchRow] = []
        for i, req in enumerate(admitted):
            req.results = [None] * req.params.n
            req.remaining = req.params.n
            max_new = self._max_new(req)
            for k in range(req.params.n):
                new_rows.append(BatchRow(req, k, random.Random(self._row_seed(req, k)), max_new))
                fan_out.append(i if source is None else source[i])
        index = torch.tensor(fan_out, device=self.device)
        if fan_out != list(range(logits.shape[0])):
            cache.batch_select_indices(index)
        tokens = self._sample(logits[index, -1], new_rows)
        return cache, mask[index], tokens, new_rows

    def _max_new(self, req: SampleRequest) -> int:
        """The most tokens a row of ``req`` samples."""
        return min(req.params.max_tokens, self.max_model_len - len(req.prompt_ids))

    def _most_new(self, requests: list[SampleRequest]) -> int:
        """The most positions a prefill of ``requests`` writes after the prompts."""
        return max(self._max_new(req) for req in requests)

    def _row_seed(self, req: SampleRequest, k: int) -> int:
        if req.params.seed is not None:
            return (req.params.seed * 1_000_003 + k) & 0x7FFFFFFF
        self._request_counter += 1
        return (self.seed * 1_000_003 + self._request_counter) & 0x7FFFFFFF

    def _merge(
        self, cache: Any, mask: torch.Tensor, tokens: torch.Tensor, rows: list[BatchRow]
    ) -> None:
        if not self._rows:
            self._cache, self._mask, self._next, self._rows = cache, mask, tokens, rows
        else:
            width = max(self._mask.shape[1], mask.shape[1])
            reserve(self._cache, self._spare_columns(self._rows + rows))
            for old_layer, new_layer in zip(self._cache.layers, cache.layers, strict=True):
                keys = torch.cat([left_pad(old_layer.keys, width), left_pad(new_layer.keys, width)])
                values = torch.cat(
                    [left_pad(old_layer.values, width), left_pad(new_layer.values, width)]
                )
                set_layer(old_layer, keys, values)
            self._mask = torch.cat(
                [left_pad(self._mask, width, dim=1), left_pad(mask, width, dim=1)]
            )
            self._next = torch.cat([self._next, tokens])
            self._rows = self._rows + rows
        self._refresh_row_params()
        self.stats["max_rows"] = max(self.stats["max_rows"], len(self._rows))
