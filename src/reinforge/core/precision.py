"""Whether a device does bfloat16 math natively, and what the ``auto`` precision
settings (``model.hf.dtype``, ``trainer.mixed_precision``) become there.

bf16 pays on GPUs and on CPUs with AVX-512 BF16 or AMX: the demo's sampling ran ~1.7x
faster than fp32 on such a CPU. Elsewhere (an AVX2-only CPU, common in laptops and
cloud VMs) PyTorch emulates it, and the same work runs one to two orders of magnitude
slower: one SFT step on 8 agent demonstrations took 19 s in fp32 and 429 s under bf16
autocast on a 2-core AVX2 CPU (docs/benchmarks.md, "bf16 on a CPU without bf16").
So ``auto`` picks bf16 only where it is native, and an explicit bf16 setting on a CPU
without it is kept but warned about.
"""

from __future__ import annotations

import logging

import torch

logger = logging.getLogger(__name__)

_warned: set[str] = set()


def native_bf16(device: str | torch.device) -> bool:
    """True when ``device`` computes in bfloat16 natively (not emulated)."""
    kind = torch.device(device).type
    if kind == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if kind == "cpu":
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def warn_if_emulated(device: str | torch.device, setting: str) -> None:
    """Log once per setting that bf16 was asked for where it is emulated."""
    if native_bf16(device) or setting in _warned:
        return
    _warned.add(setting)
    logger.warning(
        "%s asks for bfloat16, but this %s has no native bf16 (no AVX-512 BF16 / AMX): "
        "it is emulated and runs many times slower than float32; use 'auto' (bf16 only "
        "where it is native) or float32",
        setting,
        torch.device(device).type.upper(),
    )


def resolve_dtype(dtype: str, device: str | torch.device, setting: str) -> str:
    """``dtype`` with ``auto`` replaced by bfloat16 where native, else float32."""
    if dtype == "auto":
        return "bfloat16" if native_bf16(device) else "float32"
    if dtype == "bfloat16":
        warn_if_emulated(device, setting)
    return dtype


def resolve_mixed_precision(setting: str, device: str | torch.device) -> str:
    """``trainer.mixed_precision`` with ``auto`` replaced by bf16 where native, else no."""
    if setting == "auto":
        return "bf16" if native_bf16(device) else "no"
    if setting == "bf16":
        warn_if_emulated(device, "trainer.mixed_precision: bf16")
    return setting
