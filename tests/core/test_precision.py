"""``auto`` precision: bf16 only where the device computes it natively; an explicit bf16
where it is emulated is kept and warned about (it ran 20x slower on an AVX2 CPU)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch

from reinforge.core import precision
from reinforge.models.engines.hf import HFEngine
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig


@pytest.fixture(params=[True, False], ids=["native", "emulated"])
def native(request, monkeypatch) -> bool:
    monkeypatch.setattr(precision, "native_bf16", lambda device: request.param)
    monkeypatch.setattr(precision, "_warned", set())
    return request.param


def test_this_cpu_is_asked_not_assumed() -> None:
    assert precision.native_bf16("cpu") == bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
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
