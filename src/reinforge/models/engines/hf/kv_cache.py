"""The KV-cache layout of the hf engine's running batch.

Every row of the batch is left-padded to a common length. Plain full-attention
layers keep their keys/values in a slab: a buffer with spare columns on the right,
so a decode step writes one column in place instead of re-concatenating the whole
cache (``DynamicLayer.update`` copies it on every step). The spare columns are never
more than the rows can still write (``reserve``): the demo's evaluation decodes 64 rows
of at most 32 tokens, and a fixed 64 spare columns made its KV about 1.5x what it used.
The helpers here pad, merge and slice caches whatever their layers are (slab or not).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import torch

#: spare KV-cache columns reserved beyond the current length when a buffer is (re)built,
#: unless the rows can write fewer (``reserve``)
MIN_HEADROOM = 64


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
            #: the most columns the batch's rows can still write (None: not known)
            self.spare: int | None = None

        def _view(self) -> None:
            self.keys = self._kbuf[:, :, self._start : self._end]
            self.values = self._vbuf[:, :, self._start : self._end]

        def set_states(self, keys: torch.Tensor, values: torch.Tensor, headroom: int = 0) -> None:
            """Replace the content with ``keys``/``values`` (copied into a new buffer) with
            at least ``headroom`` spare columns, more for growth up to ``spare``."""
            batch, heads, length, dim = keys.shape
            growth = max(MIN_HEADROOM, length // 2)
            if self.spare is not None:
                growth = min(growth, self.spare)
            width = length + max(headroom, growth)
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


def reserve(cache: Any, columns: int) -> None:
    """Tell ``cache``'s slab layers that its rows write at most ``columns`` more
    positions, so buffers (re)built from now on keep no more spare columns than that."""
    for layer in cache.layers:
        if hasattr(layer, "spare"):
            layer.spare = max(columns, 0)


def cache_kwargs(model: Any, cache: Any) -> dict[str, Any]:
    """The keyword a forward pass takes ``cache`` under: ``cache`` where the model's
    ``forward`` has it (newer transformers 5 releases, which drop ``past_key_values``
    in 5.40), else ``past_key_values``."""
    return {_cache_keyword(type(model)): cache}


@functools.cache
def _cache_keyword(model_class: type) -> str:
    params = inspect.signature(getattr(model_class, "forward", model_class.__call__)).parameters
    return "cache" if "cache" in params else "past_key_values"


def new_cache(config: Any, spare: int | None = None) -> Any:
    """A DynamicCache whose plain full-attention layers are slab layers; ``spare``: see
    ``reserve``."""
    global _SLAB_LAYER
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    if _SLAB_LAYER is None:
        _SLAB_LAYER = _slab_layer_class()
    cache = DynamicCache(config=config)
    cache.layers = [
        _SLAB_LAYER() if type(layer) is DynamicLayer else layer for layer in cache.layers
    ]
    if spare is not None:
        reserve(cache, spare)
    return cache


def only_slab_layers(config: Any) -> bool:
    """Whether every layer of a fresh cache for ``config`` is a slab layer (a plain
    full-attention model: no sliding windows or linear attention)."""
    cache = new_cache(config)
    return bool(cache.layers) and all(type(layer) is _SLAB_LAYER for layer in cache.layers)


def set_layer(layer: Any, keys: torch.Tensor, values: torch.Tensor) -> None:
    """Replace a cache layer's keys and values."""
    if hasattr(layer, "set_states"):
        layer.set_states(keys, values)
    else:
        layer.keys, layer.values = keys, values


def trim_left(cache: Any, columns: int) -> None:
    """Drop the first ``columns`` positions of every layer."""
    for layer in cache.layers:
        if hasattr(layer, "trim_left"):
            layer.trim_left(columns)
        else:
            layer.keys = layer.keys[:, :, columns:]
            layer.values = layer.values[:, :, columns:]


def row_states(cache: Any, row: int, mask: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Copies of one batch row's cached positions where ``mask`` is set, layer by layer
    (a row's positions need not be contiguous: see ``prefill_from``)."""
    columns = mask.bool()
    return [(layer.keys[row][:, columns], layer.values[row][:, columns]) for layer in cache.layers]


def left_pad(t: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    """``t`` with zero columns prepended along ``dim`` up to ``width``."""
    missing = width - t.shape[dim]
    if missing == 0:
        return t
    shape = list(t.shape)
    shape[dim] = missing
    return torch.cat([t.new_zeros(shape), t], dim=dim)
