"""Row padding of the vocabulary projection, for MKL's sake (CPU only)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

#: lm_head inputs with at least ``PAD_FROM`` but fewer than ``PAD_TO`` rows are
#: padded to ``PAD_TO`` rows (see ``LogitsRowPadding``)
PAD_FROM, PAD_TO = 6, 16


class LogitsRowPadding:
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
        if hidden.dim() != 3 or hidden.shape[1] != 1 or not PAD_FROM <= rows < PAD_TO:
            return None
        padded = hidden.new_zeros((PAD_TO, *hidden.shape[1:]))
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
