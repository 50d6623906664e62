"""``auto`` precision: bf16 only where the device computes it natively; an explicit bf16
where it is emulated is kept and warned about (it ran 20x slower on an AVX2 CPU)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from reinforge.core import precision
from reinforge.models.engines.hf import HFEngine
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

SRC = Path(precision.__file__).resolve().parents[2]


@pytest.fixture(params=[True, False], ids=["native", "emulated"])
def native(request, monkeypatch) -> bool:
    monkeypatch.setattr(precision, "native_bf16", lambda device: request.param)
    monkeypatch.setattr(precision, "_warned", set())
    return request.param


# What real machines report: the flags of /proc/cpuinfo, the capability of a GPU.
AVX2_LAPTOP = {"sse4_2", "avx", "avx2", "fma"}
AVX512_SKYLAKE = AVX2_LAPTOP | {"avx512f", "avx512bw", "avx512vl", "avx512dq"}
COOPER_LAKE = AVX512_SKYLAKE | {"avx512_bf16"}
SAPPHIRE_RAPIDS = AVX512_SKYLAKE | {"avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"}


@pytest.mark.parametrize(
    ("flags", "native"),
    [
        (AVX2_LAPTOP, False),
        (AVX512_SKYLAKE, False),  # oneDNN calls this bf16-capable; it only converts
        (COOPER_LAKE, True),
        (SAPPHIRE_RAPIDS - {"avx512_bf16"}, True),  # AMX alone
    ],
    ids=["avx2", "avx512-without-bf16", "avx512-bf16", "amx"],
)
def test_a_cpu_is_native_only_with_bf16_instructions(
    flags: set[str], native: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(flags))
    monkeypatch.setattr(precision, "onednn_bf16", lambda: True)  # no cap on oneDNN
    assert precision.native_bf16("cpu") is native
    assert precision.resolve_mixed_precision("auto", "cpu") == ("bf16" if native else "no")


def test_a_cpu_capped_below_bf16_is_not_native(monkeypatch: pytest.MonkeyPatch) -> None:
    """oneDNN capped (ONEDNN_MAX_CPU_ISA=AVX2) on a bf16 CPU: bf16 is emulated, auto is fp32."""
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset(SAPPHIRE_RAPIDS))
    monkeypatch.setattr(precision, "onednn_bf16", lambda: False)
    assert precision.native_bf16("cpu") is False
    assert precision.resolve_mixed_precision("auto", "cpu") == "no"
    assert precision.resolve_dtype("auto", "cpu", "x") == "float32"


def test_the_onednn_cap_is_seen_in_a_real_process() -> None:
    """The cap as a user sets it, in a fresh process (oneDNN reads it once)."""
    if not precision.native_bf16("cpu"):
        pytest.skip("this CPU has no native bf16 to cap")
    code = (
        "from reinforge.core import precision as p; "
        "print(p.onednn_bf16(), p.resolve_mixed_precision('auto', 'cpu'))"
    )
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2", "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "no"]


@pytest.mark.parametrize(
    ("capability", "native", "auto"),
    [
        ((7, 5), False, "fp16"),
        ((8, 0), True, "bf16"),
        ((9, 0), True, "bf16"),
        (None, False, "fp16"),
    ],
    ids=["turing-t4", "ampere-a100", "hopper-h100", "no-gpu-visible"],
)
def test_a_gpu_is_native_from_ampere_on_and_older_ones_get_fp16(
    capability, native: bool, auto: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(precision, "cuda_capability", lambda device: capability)
    assert precision.native_bf16("cuda:0") is native
    assert precision.resolve_mixed_precision("auto", "cuda") == auto
    assert precision.resolve_dtype("auto", "cuda", "x") == ("bfloat16" if native else "float16")


def test_cpu_flags_are_read_from_this_machine() -> None:
    flags = precision.cpu_flags()
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if "flags" in text:
        assert flags and all(flag in text for flag in list(flags)[:5])
    assert precision.native_bf16("meta") is False


def test_auto_resolves_by_the_device(native: bool) -> None:
    assert precision.resolve_dtype("auto", "cpu", "x") == ("bfloat16" if native else "float32")
    assert precision.resolve_mixed_precision("auto", "cpu") == ("bf16" if native else "no")
    assert precision.resolve_dtype("float32", "cpu", "x") == "float32"
    assert precision.resolve_mixed_precision("no", "cpu") == "no"


def test_explicit_bf16_is_kept_and_warned_about_once_where_emulated(
    native: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="reinforge.core.precision"):
        for _ in range(2):
            assert precision.resolve_dtype("bfloat16", "cpu", "model.hf.dtype") == "bfloat16"
            assert precision.resolve_mixed_precision("bf16", "cpu") == "bf16"
    warned = [r.getMessage() for r in caplog.records]
    if native:
        assert warned == []
    else:
        assert len(warned) == 2  # one per setting, not per call
        assert "model.hf.dtype asks for bfloat16" in warned[0] and "emulated" in warned[0]
        assert "trainer.mixed_precision: bf16" in warned[1]


def test_the_engine_and_trainer_apply_auto(native: bool, tiny_model_path: Path) -> None:
    engine = HFEngine(tiny_model_path, dtype="auto")
    try:
        assert engine.model.dtype == (torch.bfloat16 if native else torch.float32)
    finally:
        engine.close()
    trainer = Trainer(tiny_model_path, TrainerConfig(mixed_precision="auto"), pad_token_id=0)
    assert trainer.mixed_precision == ("bf16" if native else "no")
    assert isinstance(trainer._autocast(), torch.autocast) == native
