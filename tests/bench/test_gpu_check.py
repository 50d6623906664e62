"""bench/gpu_check.py cannot run here (no GPU): it must say so and exit non-zero, and its
demo overrides must be ones the config accepts."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest
import torch

from reinforge.config import load_config


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present: run the check itself")
def test_without_a_gpu_it_refuses(gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", ["gpu_check.py"])
    with pytest.raises(SystemExit, match="no CUDA device"):
        gpu_check.main()


def test_its_overrides_make_a_valid_demo_config(gpu_check: ModuleType) -> None:
    cfg = load_config(
        gpu_check.DEMO,
        overrides=[
            "buffer.total_steps=2", "trainer.device=cuda", "explorer.eval_on_start=false",
            "explorer.eval_interval=2", "checkpoint.save_interval=null",
            "trainer.lora.enabled=true",
        ],
    )  # fmt: skip
    assert cfg.trainer.device == "cuda" and cfg.buffer.total_steps == 2


@pytest.mark.skipif(torch.cuda.device_count() >= 3, reason="3 GPUs: the check itself runs")
def test_the_placement_check_says_why_it_is_skipped(
    gpu_check: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gpu_check.placement_check() == []
    printed = capsys.readouterr().out
    assert f"== placement: skipped: {torch.cuda.device_count()} GPU(s) visible" in printed
