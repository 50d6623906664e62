"""KV states of finished sequences, kept so a later prompt that extends one skips its prefill.

A multi-turn agent sends, at every turn, the whole conversation so far: the earlier
prompt, the reply the model sampled (the exact ids, see ``ModelWrapper``), then the new
message. Without reuse the engine recomputes the keys and values of everything it has
already seen. The hf engine stores each finished row's KV here under its token ids
(prompt + reply, minus the last sampled token, whose KV was never computed) and,
when a new prompt starts with a stored sequence, prefills only the rest.

Entries are evicted least-recently-used once the stored tokens exceed ``max_tokens``,
and the cache must be cleared whenever the weights change (the KV depends on them).
"""

from __future__ import annotations

from collections import Counter, OrderedDict

import torch

#: one (keys, values) pair per attention layer, each [heads, length, head_dim]
LayerStates = list[tuple[torch.Tensor, torch.Tensor]]


class PrefixCache:
    """Token-id prefixes → per-layer KV states, bounded by a token budget."""

    def __init__(self, max_tokens: int, min_tokens: int = 16) -> None:
        self.max_tokens = max_tokens
        self.min_tokens = min_tokens
        self._entries: OrderedDict[tuple[int, ...], LayerStates] = OrderedDict()
        self._lengths: Counter[int] = Counter()
        self.tokens = 0
        self.hits = 0
        self.reused_tokens = 0

    def put(self, ids: tuple[int, ...], states: LayerStates) -> None:
        """Remember ``states`` (the KV of ``ids``); short sequences are not worth it."""
        n = len(ids)
        if n < self.min_tokens or n > self.max_tokens:
            return
        if ids in self._entries:
            self._entries.move_to_end(ids)
            return
        self._entries[ids] = states
        self._lengths[n] += 1
        self.tokens += n
        while self.tokens > self.max_tokens:
            old, _ = self._entries.popitem(last=False)
            self._forget(old)

    def _forget(self, ids: tuple[int, ...]) -> None:
        n = len(ids)
        self.tokens -= n
        self._lengths[n] -= 1
        if not self._lengths[n]:
            del self._lengths[n]

    def longest_prefix(self, prompt: list[int]) -> tuple[int, LayerStates] | None:
        """The longest stored sequence that is a proper prefix of ``prompt`` (at least
        one prompt token must remain to be prefilled), as (length, states)."""
        for n in sorted(self._lengths, reverse=True):
            if n >= len(prompt):
                continue
            key = tuple(prompt[:n])
            states = self._entries.get(key)
            if states is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                self.reused_tokens += n
                return n, states
        return None

    def clear(self) -> None:
        self._entries.clear()
        self._lengths.clear()
        self.tokens = 0

    def __len__(self) -> int:
        return len(self._entries)
