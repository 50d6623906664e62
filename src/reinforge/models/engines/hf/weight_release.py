"""The hf engine's weights dropped while the trainer of the same process takes a step.

Why: in ``mode: both`` without overlap the engine is idle during a training step, and
the sync after the step overwrites every weight it holds. Its copy (bf16: half the
policy's fp32 bytes; fp32: all of them) is then dead memory at the moment the process
peaks, inside the step's micro-batches. Dropping it before the step and building it
again from the sync's buckets takes that copy off the peak at the cost of one
allocation per weight.

Only parameters are dropped (buffers such as rotary frequencies are small and not
synced). Tied parameters are one tensor, dropped and rebuilt once under any of their
names. Until every dropped tensor is rebuilt the engine refuses to sample or score.

The rebuilt parameters are views of one buffer per dtype, made at the sync's first
bucket for every dropped parameter: one block of the copy's size (an ``mmap`` for a model
of any size), so dropping it again returns its pages at once instead of leaving a hole
per weight in the heap between tensors that live on (see ``trainer/flat_grads.py``).

The rebuilt storage is made outside inference mode (the engine's thread runs in it), so
the parameters are ordinary tensors, as loading made them: with an inference tensor as
SmolLM2's tied embedding and output weight, bf16 decoding on the CPU held ~0.6 GiB more
and ran ~25% slower (docs/lab/2026-12-02-rebuilt-weights.md).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class ReleasedWeights:
    """The parameters of ``model`` whose storage was dropped, and their shapes."""

    def __init__(self, model: torch.nn.Module) -> None:
        self._by_name = dict(model.named_parameters(remove_duplicate=False))
        #: id of each dropped tensor -> (its shape, one of its names)
        self._pending: dict[int, tuple[torch.Size, str]] = {}
        #: where each dropped tensor goes in its dtype's buffer (made at the first rebuild)
        self._offsets: dict[int, int] = {}
        self._sizes: dict[tuple[torch.dtype, torch.device], int] = {}
        self._buffers: dict[tuple[torch.dtype, torch.device], torch.Tensor] = {}
        for name, param in self._by_name.items():
            if id(param) in self._pending:
                continue
            self._pending[id(param)] = (param.shape, name)
            key = (param.dtype, param.device)
            self._offsets[id(param)] = self._sizes.get(key, 0)
            self._sizes[key] = self._offsets[id(param)] + param.numel()
            param.data = torch.empty(0, dtype=param.dtype, device=param.device)

    def rebuild(self, names: Iterable[str]) -> None:
        """Give the dropped parameters among ``names`` fresh storage of their own shape,
        ready for ``load_state_dict`` to copy an update into."""
        for name in names:
            param = self._by_name.get(name)
            entry = self._pending.pop(id(param), None) if param is not None else None
            if entry is not None:
                param.data = self._slot(param, entry[0])
        if not self._pending:
            self._buffers.clear()  # the parameters hold their views

    def _slot(self, param: torch.Tensor, shape: torch.Size) -> torch.Tensor:
        """``param``'s place in its dtype's buffer, which the first call makes."""
        key = (param.dtype, param.device)
        start = self._offsets[id(param)]
        with torch.inference_mode(False):
            if key not in self._buffers:
                self._buffers[key] = torch.empty(
                    self._sizes[key], dtype=param.dtype, device=param.device
                )
            return self._buffers[key][start : start + shape.numel()].view(shape)

    def shapes(self) -> dict[str, torch.Size]:
        """The shape each dropped parameter had, under every name it has."""
        return {
            name: self._pending[id(param)][0]
            for name, param in self._by_name.items()
            if id(param) in self._pending
        }

    @property
    def missing(self) -> list[str]:
        """Names of the parameters still without weights (one name per tied tensor)."""
        return sorted(name for _, name in self._pending.values())

    @property
    def complete(self) -> bool:
        return not self._pending


def not_loaded_error(missing: list[str]) -> RuntimeError:
    """What a request gets while the engine's weights are dropped."""
    return RuntimeError(
        f"the hf engine's weights were freed for a training step and {len(missing)} of them "
        f"(e.g. {missing[:3]}) have not been synced back yet; sync the trainer's weights "
        "into the engine before sampling"
    )
