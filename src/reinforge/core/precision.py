"""Whether a device does bfloat16 math natively, and what the ``auto`` precision
settings (``model.hf.dtype``, ``trainer.mixed_precision``) become there.

bf16 pays on GPUs and on CPUs with AVX-512 BF16 or AMX: the demo's sampling ran ~1.7x
faster than fp32 on such a CPU. Elsewhere (an AVX2-only CPU, common in laptops and
cloud VMs) PyTorch emulates it, and the same work runs one to two orders of magnitude
slower: one SFT step on 8 agent demonstrations took 19 s in fp32 and 429 s under bf16
autocast on a 2-core AVX2 CPU (docs/benchmarks.md, "bf16 on a CPU without bf16").
So ``auto`` picks bf16 only where it is native, and an explicit bf16 setting on a CPU
without it is kept but warned about.

The CPU's flags are not the whole story: oneDNN, which runs torch's bf16 matmuls, can be
capped below the CPU's instructions (``ONEDNN_MAX_CPU_ISA=AVX2``, as when an AVX-512 BF16
machine stands in for an AVX2 laptop). Under such a cap its bf16 kernels are gone and
bf16 is emulated as on the laptop (a bf16 matmul measured 47 -> 0.9 GFLOP/s), so ``auto``
asks oneDNN too.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path

import torch

logger = logging.getLogger(__name__)

_warned: set[str] = set()


#: CPU feature flags (as Linux's /proc/cpuinfo names them) that compute bfloat16 natively:
#: AVX-512 BF16's dot products, or AMX's bf16 tiles. Plain AVX-512 converts but emulates.
NATIVE_BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})

#: the first CUDA compute capability with bf16 tensor cores (Ampere)
NATIVE_BF16_CUDA_CAPABILITY = (8, 0)


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty where there is none: macOS,
    Windows, a sandbox that hides it)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def onednn_bf16() -> bool:
    """True when torch's oneDNN will run bf16 kernels on this CPU now: False without
    oneDNN, and under an ``ONEDNN_MAX_CPU_ISA`` cap below AVX-512 BF16. On its own it is
    not enough (oneDNN counts plain AVX-512, which only converts)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        return False


def cuda_capability(device: str | torch.device) -> tuple[int, int] | None:
    """The compute capability of a CUDA device, None where CUDA is not available."""
    if not torch.cuda.is_available():
        return None
    return tuple(torch.cuda.get_device_capability(torch.device(device)))


def native_bf16(device: str | torch.device) -> bool:
    """True when ``device`` computes in bfloat16 natively (not emulated).

    A CPU needs AVX-512 BF16 or AMX (``NATIVE_BF16_CPU_FLAGS``); AVX-512 alone, which
    oneDNN reports as bf16 support, only converts. oneDNN must also use them (no
    ``ONEDNN_MAX_CPU_ISA`` cap below them: ``onednn_bf16``). A CUDA GPU needs compute capability
    8.0 (Ampere) or newer: CUDA's own ``is_bf16_supported`` also counts emulation on
    older cards.
    """
    kind = torch.device(device).type
    if kind == "cuda":
        capability = cuda_capability(device)
        return capability is not None and capability >= NATIVE_BF16_CUDA_CAPABILITY
    if kind == "cpu":
        return bool(cpu_flags() & NATIVE_BF16_CPU_FLAGS) and onednn_bf16()
    return False


def warn_if_emulated(device: str | torch.device, setting: str) -> None:
    """Log once per setting that bf16 was asked for where it is emulated."""
    if native_bf16(device) or setting in _warned:
        return
    _warned.add(setting)
    logger.warning(
        "%s asks for bfloat16, but this %s has no native bf16 (a CPU without AVX-512 "
        "BF16 / AMX, a GPU before compute capability 8.0): it is emulated and runs many "
        "times slower; use 'auto' (bf16 only where it is native) or float32",
        setting,
        torch.device(device).type.upper(),
    )


def _half_where_no_bf16(device: str | torch.device) -> bool:
    """A GPU without native bf16 (before Ampere) still has fast float16."""
    return torch.device(device).type == "cuda"


def resolve_dtype(dtype: str, device: str | torch.device, setting: str) -> str:
    """``dtype`` with ``auto`` replaced by bfloat16 where native, float16 on an older
    GPU, float32 elsewhere."""
    if dtype == "auto":
        if native_bf16(device):
            return "bfloat16"
        return "float16" if _half_where_no_bf16(device) else "float32"
    if dtype == "bfloat16":
        warn_if_emulated(device, setting)
    return dtype


def resolve_mixed_precision(setting: str, device: str | torch.device) -> str:
    """``trainer.mixed_precision`` with ``auto`` replaced by bf16 where native, fp16 (with
    a gradient scaler) on an older GPU, else no."""
    if setting == "auto":
        if native_bf16(device):
            return "bf16"
        return "fp16" if _half_where_no_bf16(device) else "no"
    if setting == "bf16":
        warn_if_emulated(device, "trainer.mixed_precision: bf16")
    return setting
