"""What kind of CPU a bench ran on, and the precision ``auto`` picks there.

Why: the same bench gives figures several times apart on an AVX2-only CPU (fp32,
bf16 emulated) and on one with AVX-512 BF16 or AMX (native bf16). A figure without
the CPU kind beside it cannot be compared with anyone else's, so every bench that
times training prints this line and stores this record with its results.

The kind comes from the CPU's feature flags (/proc/cpuinfo, as
``reinforge.core.precision`` reads them) and torch's own dispatch level
(``torch.backends.cpu.get_cpu_capability()``: DEFAULT, AVX2, AVX512...).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

#: flags that decide a CPU's kind for these benches, in the order they are printed
KIND_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")


def cpu_model_name() -> str:
    """The CPU's model name (``model name`` in /proc/cpuinfo; ``platform.processor()``
    where there is no /proc)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or "unknown CPU"
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name":
            return value.strip()
    return platform.processor() or "unknown CPU"


def kind_name(flags: frozenset[str]) -> str:
    """The short name of a CPU kind: ``AMX``, ``AVX-512 BF16``, ``AVX-512 (no BF16)``,
    ``AVX2`` or ``pre-AVX2``. Only AMX and AVX-512 BF16 compute bf16 natively."""
    if "amx_bf16" in flags:
        return "AMX"
    if "avx512_bf16" in flags:
        return "AVX-512 BF16"
    if "avx512f" in flags:
        return "AVX-512 (no BF16)"
    if "avx2" in flags:
        return "AVX2"
    return "pre-AVX2"


def auto_precision(native: bool) -> str:
    """What ``--precision auto`` becomes: bf16 where the CPU computes it natively, fp32
    elsewhere (as ``model.hf.dtype: auto`` and ``trainer.mixed_precision: auto`` do)."""
    return "bf16" if native else "fp32"


def capability(flags: frozenset[str] | None = None) -> dict[str, Any]:
    """The record stored with a bench's results: kind, model, cores, flags, torch's level."""
    import torch

    from reinforge.core.precision import NATIVE_BF16_CPU_FLAGS, cpu_flags

    flags = cpu_flags() if flags is None else flags
    native = bool(flags & NATIVE_BF16_CPU_FLAGS)
    return {
        "kind": kind_name(flags),
        "model": cpu_model_name(),
        "cores": os.cpu_count(),
        "flags": [f for f in KIND_FLAGS if f in flags],
        "native_bf16": native,
        "auto_precision": auto_precision(native),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def describe(record: dict[str, Any]) -> str:
    """One line for a bench's output, e.g. ``CPU: AVX-512 BF16 (AMD EPYC, 2 cores;
    flags avx2 avx512f avx512_bf16; torch AVX512; bf16 native -> auto = bf16)``."""
    flags = " ".join(record.get("flags") or []) or "none of " + " ".join(KIND_FLAGS)
    native = "native" if record.get("native_bf16") else "emulated"
    return (
        f"CPU: {record['kind']} ({record['model']}, {record['cores']} cores; flags {flags}; "
        f"torch {record['torch_cpu_capability']}; bf16 {native} -> auto = "
        f"{record['auto_precision']})"
    )
