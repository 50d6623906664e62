"""int8 sampling for the hf engine (``model.hf.quantize: int8``).

Why: where the CPU has no native bf16 (AVX2 laptops, many cloud VMs), the engine samples
in fp32, and decoding is a chain of small matmuls against every weight. int8 dynamic
quantisation runs them as int8 x int8 -> int32 products (``torch._int_mm``, oneDNN's
int8 kernels) with a quarter of the weight bytes to stream: the weights symmetric per
output channel, the activations symmetric per token, quantised at each call.

Per token, not per tensor: torch's ``quantize_dynamic`` (fbgemm) gives a whole batch's
activations one scale, and SmolLM2's few huge activations (in ``down_proj``'s input
above all) then leave the other tokens a handful of levels: its next-token distribution
moved by KL 1.6 nats from fp32's, against 0.09 per token (docs/lab/2026-12-02-avx2.md).

What changes and what does not:

* only sampling (prefill and decode) goes through the int8 weights: the engine's
  sampled tokens and the log-probs recorded with them are the int8 model's, so the
  trainer's importance-sampling correction sees the true sampling distribution;
* the fp32 weights stay in the model, under their names: a weight sync loads them as
  before, and ``requantize`` packs the new int8 copy afterwards (without it the engine
  would keep sampling from the weights of before the sync);
* scoring (``score``, the weight check after a sync) runs on the fp32 weights
  (``full_precision``): the check asks whether the trainer's weights arrived, which
  int8 rounding would blur.

The Linear modules stay ``torch.nn.Linear`` (their hooks, names and ``isinstance`` checks
keep working); only their ``forward`` is replaced on the instance while int8 is on.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch

#: the settings ``model.hf.quantize`` accepts (None: sample in the model's dtype)
QUANTIZE_CHOICES = ("int8",)


def _symmetric(values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``values`` [rows, k] as int8 per row (scale = max |row| / 127) and the scales
    [rows, 1]: the rounding both the weights and the activations get."""
    scales = (values.abs().amax(dim=1, keepdim=True) / 127.0).clamp_min(1e-12)
    return torch.round(values / scales).clamp_(-127, 127).to(torch.int8), scales


def _pack(linear: torch.nn.Linear) -> tuple[torch.Tensor, torch.Tensor]:
    """The int8 copy of ``linear``'s weight as ``_int_mm`` takes it ([in, out], a
    transposed view) and its per-output-channel scales [1, out]."""
    weight, scales = _symmetric(linear.weight.detach().float())
    return weight.t(), scales.t()


def _int8_forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``forward`` of a Linear while int8 is on: each token's activations quantised,
    multiplied with the int8 weight in int32, scaled back to the input's dtype."""
    owner: Int8Linears = self._reinforge_int8  # type: ignore[assignment]
    if not owner.active:
        return torch.nn.functional.linear(x, self.weight, self.bias)
    weight, weight_scales = owner.packed[id(self)]
    rows = x.reshape(-1, x.shape[-1]).float()
    quantised, row_scales = _symmetric(rows)
    out = torch._int_mm(quantised, weight).float() * row_scales * weight_scales
    if self.bias is not None:
        out += self.bias.float()
    return out.reshape(*x.shape[:-1], out.shape[-1]).to(x.dtype)


class Int8Linears:
    """The int8 copies of a model's Linear layers and the switch between them and fp32."""

    def __init__(self, model: torch.nn.Module) -> None:
        """Quantise every ``torch.nn.Linear`` of ``model`` (decoder projections and the
        vocabulary head); the model must be on CPU (the setting is for CPUs without
        native bf16; a GPU has better paths)."""
        device = next(model.parameters()).device
        if device.type != "cpu":
            raise ValueError(
                f"model.hf.quantize: int8 is for CPU sampling, but the hf engine's model is "
                f"on {device}; drop the setting or set model.hf.device: cpu"
            )
        self.linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
        if not self.linears:
            raise ValueError("model.hf.quantize: int8 found no torch.nn.Linear layer to quantise")
        self.packed: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.active = True
        #: how often the int8 copies were (re)built: once at start, once per weight sync
        self.packs = 0
        for linear in self.linears:
            linear._reinforge_int8 = self  # type: ignore[assignment]
            linear.forward = types.MethodType(_int8_forward, linear)  # type: ignore[method-assign]
        self.requantize()

    def requantize(self) -> None:
        """Rebuild every int8 copy from the fp32 weights (after a weight sync)."""
        with torch.no_grad():
            self.packed = {id(m): _pack(m) for m in self.linears}
        self.packs += 1

    @contextmanager
    def full_precision(self) -> Iterator[None]:
        """Run the block on the fp32 weights (scoring, the weight check)."""
        before, self.active = self.active, False
        try:
            yield
        finally:
            self.active = before

    def remove(self) -> None:
        """Put the Linear layers back to their own fp32 ``forward``."""
        for linear in self.linears:
            del linear.forward
            del linear._reinforge_int8
        self.packed = {}


def quantize_for_sampling(model: torch.nn.Module, setting: str | None) -> Int8Linears | None:
    """The engine's int8 copies for ``model.hf.quantize`` (None: none, sample in the
    model's own dtype)."""
    if setting is None:
        return None
    if setting not in QUANTIZE_CHOICES:
        raise ValueError(
            f"model.hf.quantize: {setting!r} is not one of {list(QUANTIZE_CHOICES)} "
            "(or null for no quantisation)"
        )
    return Int8Linears(model)


def full_precision(int8: Int8Linears | None) -> Any:
    """A context running its block on the fp32 weights (a no-op without int8)."""
    return nullcontext() if int8 is None else int8.full_precision()
