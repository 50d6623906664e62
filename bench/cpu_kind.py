"""What kind of CPU a bench ran on, and the precision ``auto`` picks there.

Why: the same bench gives figures several times apart on an AVX2-only CPU (fp32,
bf16 emulated) and on one with AVX-512 BF16 or AMX (native bf16). A figure without
the CPU kind beside it cannot be compared with anyone else's, so every bench that
times training prints this line and stores this record with its results.

The kind comes from the CPU's feature flags (/proc/cpuinfo, as
``reinforge.core.precision`` reads them) and torch's own dispatch level
(``torch.backends.cpu.get_cpu_capability()``: DEFAULT, AVX2, AVX512...).

A CPU's kernels can be capped below its instructions, so that an AVX-512 BF16 machine
stands in for an AVX2 laptop: ``ATEN_CPU_CAPABILITY=avx2`` (torch's own kernels),
``ONEDNN_MAX_CPU_ISA=AVX2`` (oneDNN: bf16 matmuls become emulated) and
``MKL_ENABLE_INSTRUCTIONS=AVX2`` (MKL: fp32 matmuls). The record then names the kind the
kernels run at and the CPU under it, e.g. ``AVX2 (capped on an AVX-512 BF16 CPU)``, and
``auto`` is fp32 there, as ``reinforge.core.precision`` decides for the trainer.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

#: flags that decide a CPU's kind for these benches, in the order they are printed
KIND_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")

#: environment variables that cap the kernels' instruction set, recorded when set
CAP_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


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


def capped_kind(flags: frozenset[str], torch_level: str, onednn_bf16: bool) -> str | None:
    """The kind the kernels run at when they are capped below the CPU's own, as
    ``AVX2 (capped on an AVX-512 BF16 CPU)``; None when nothing is capped.

    Capped means torch's dispatch level is below AVX-512 on a CPU with it
    (``ATEN_CPU_CAPABILITY``), or oneDNN has no bf16 kernels on a CPU with native bf16
    (``ONEDNN_MAX_CPU_ISA``).
    """
    real = kind_name(flags)
    aten_capped = "avx512f" in flags and torch_level in ("AVX2", "DEFAULT")
    onednn_capped = real in ("AVX-512 BF16", "AMX") and not onednn_bf16
    if not (aten_capped or onednn_capped):
        return None
    if torch_level in ("AVX2", "DEFAULT"):
        level = "AVX2" if torch_level == "AVX2" else "pre-AVX2"
    else:  # only oneDNN capped: torch's own kernels still run at AVX-512
        level = "AVX-512 (no BF16)"
    return f"{level} (capped on an {real} CPU)"


def capability(
    flags: frozenset[str] | None = None,
    *,
    torch_level: str | None = None,
    onednn_bf16: bool | None = None,
) -> dict[str, Any]:
    """The record stored with a bench's results: kind, model, cores, flags, torch's level,
    and the caps in force. ``torch_level`` and ``onednn_bf16`` default to this process's
    (``torch.backends.cpu.get_cpu_capability()``, ``reinforge.core.precision.onednn_bf16``)."""
    import torch

    from reinforge.core import precision

    flags = precision.cpu_flags() if flags is None else flags
    if torch_level is None:
        torch_level = torch.backends.cpu.get_cpu_capability()
    if onednn_bf16 is None:
        onednn_bf16 = precision.onednn_bf16()
    capped = capped_kind(flags, torch_level, onednn_bf16)
    # the trainer's rule (precision.native_bf16): the flags, and oneDNN using them
    native = bool(flags & precision.NATIVE_BF16_CPU_FLAGS) and onednn_bf16
    return {
        "kind": capped or kind_name(flags),
        "capped": capped is not None,
        "caps": {name: os.environ[name] for name in CAP_VARIABLES if os.environ.get(name)},
        "model": cpu_model_name(),
        "cores": os.cpu_count(),
        "flags": [f for f in KIND_FLAGS if f in flags],
        "native_bf16": native,
        "auto_precision": auto_precision(native),
        "torch_cpu_capability": torch_level,
    }


def describe(record: dict[str, Any]) -> str:
    """One line for a bench's output, e.g. ``CPU: AVX-512 BF16 (AMD EPYC, 2 cores;
    flags avx2 avx512f avx512_bf16; torch AVX512; bf16 native -> auto = bf16)``; under a
    cap the variables that set it follow the flags."""
    flags = " ".join(record.get("flags") or []) or "none of " + " ".join(KIND_FLAGS)
    caps = record.get("caps") or {}
    if caps:
        flags += "; " + " ".join(f"{k}={v}" for k, v in caps.items())
    native = "native" if record.get("native_bf16") else "emulated"
    return (
        f"CPU: {record['kind']} ({record['model']}, {record['cores']} cores; flags {flags}; "
        f"torch {record['torch_cpu_capability']}; bf16 {native} -> auto = "
        f"{record['auto_precision']})"
    )
