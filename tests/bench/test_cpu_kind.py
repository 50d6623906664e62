"""bench/cpu_kind.py and what bench/grpo_vs_trl.py does with it: the CPU's kind is
named in the output, and ``--precision auto`` (the default, as in the demo) becomes
bf16 only where the CPU computes it natively."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

AVX2 = frozenset({"sse4_2", "avx", "avx2", "fma"})
AVX512 = AVX2 | {"avx512f", "avx512bw"}
AVX512_BF16 = AVX512 | {"avx512_bf16"}
AMX = AVX512_BF16 | {"amx_tile", "amx_bf16", "amx_int8"}


@pytest.mark.parametrize(
    ("flags", "kind", "precision"),
    [
        (AVX2, "AVX2", "fp32"),
        (AVX512, "AVX-512 (no BF16)", "fp32"),  # converts, but emulates bf16 math
        (AVX512_BF16, "AVX-512 BF16", "bf16"),
        (AMX, "AMX", "bf16"),
        (frozenset(), "pre-AVX2", "fp32"),
    ],
)
def test_kind_and_auto_precision_follow_the_flags(
    cpu_kind: ModuleType, flags: frozenset[str], kind: str, precision: str
) -> None:
    level = "AVX2" if "avx512f" not in flags else "AVX512"
    record = cpu_kind.capability(flags, torch_level=level, onednn_bf16=True)
    assert record["kind"] == kind and not record["capped"]
    assert record["auto_precision"] == precision
    assert record["flags"] == [f for f in cpu_kind.KIND_FLAGS if f in flags]
    line = cpu_kind.describe(record)
    assert kind in line and f"auto = {precision}" in line


def test_auto_precision_agrees_with_the_trainer(cpu_kind: ModuleType) -> None:
    """The bench's auto is the trainer's auto on this very machine."""
    from reinforge.core.precision import resolve_mixed_precision

    trainer = resolve_mixed_precision("auto", "cpu")  # "bf16" or "no"
    assert cpu_kind.capability()["auto_precision"] == {"bf16": "bf16", "no": "fp32"}[trainer]


def test_grpo_bench_defaults_to_auto_like_the_demo(bench: ModuleType, tmp_path: Path) -> None:
    from reinforge.config import load_config

    demo = load_config(bench.GRPO_CONFIG)
    settings = bench.settings_from_args(bench.parse_args([]))
    assert settings.precision == "auto"
    cfg = bench.reinforge_config(settings, tmp_path, "m")
    assert cfg.trainer.mixed_precision == demo.trainer.mixed_precision == "auto"
    assert cfg.model.hf.dtype == demo.model.hf.dtype == "auto"
    fp32 = bench.settings_from_args(bench.parse_args(["--precision", "fp32"]))
    cfg = bench.reinforge_config(fp32, tmp_path, "m")
    assert cfg.trainer.mixed_precision == "no" and cfg.model.hf.dtype == "float32"


@pytest.mark.parametrize(("flags", "expected"), [(AVX2, "fp32"), (AVX512_BF16, "bf16")])
def test_auto_is_resolved_per_cpu_before_the_sides_run(
    bench: ModuleType, cpu_kind: ModuleType, flags: frozenset[str], expected: str
) -> None:
    settings = bench.settings_from_args(bench.parse_args([]))
    resolved = bench.resolve_precision(settings, cpu_kind.capability(flags))
    assert resolved.precision == expected  # what TRL's bf16= and reinforge both get
    explicit = bench.settings_from_args(bench.parse_args(["--precision", "bf16"]))
    assert bench.resolve_precision(explicit, cpu_kind.capability(AVX2)).precision == "bf16"


def test_report_names_the_cpu(bench: ModuleType, cpu_kind: ModuleType) -> None:
    settings = bench.Settings(steps=2, precision="fp32")
    result = {
        "train_wall_s": 60.0,
        "step_ends_s": [30.0, 60.0],
        "rollouts": 128,
        "backward_samples": 96.0,
        "train_reward_per_step": [0.2, 0.3],
        "response_length_per_step": [20.0, 22.0],
        "models": {},
    }
    runs = {"reinforge": bench.WorkerRun(result, 70.0, 3000.0, 120.0, [1.0])}
    report = bench.build_seed_report(settings, runs, None)
    assert report["cpu"]["kind"] == cpu_kind.capability()["kind"]
    text = bench.format_report(report)
    assert f"CPU: {report['cpu']['kind']}" in text
    assert "precision fp32" in text


@pytest.mark.parametrize(
    ("flags", "level", "onednn", "kind"),
    [
        (AVX512_BF16, "AVX2", False, "AVX2 (capped on an AVX-512 BF16 CPU)"),
        (AMX, "AVX2", False, "AVX2 (capped on an AMX CPU)"),
        (AVX512_BF16, "AVX512", False, "AVX-512 (no BF16) (capped on an AVX-512 BF16 CPU)"),
        (AVX512, "AVX2", True, "AVX2 (capped on an AVX-512 (no BF16) CPU)"),
    ],
)
def test_a_capped_cpu_is_named_as_capped_and_gets_fp32(
    cpu_kind: ModuleType, flags: frozenset[str], level: str, onednn: bool, kind: str
) -> None:
    record = cpu_kind.capability(flags, torch_level=level, onednn_bf16=onednn)
    assert record["kind"] == kind and record["capped"]
    assert record["auto_precision"] == "fp32" and not record["native_bf16"]
    assert cpu_kind.describe(record).startswith(f"CPU: {kind} (")


def test_the_cap_in_a_real_process_is_reported(cpu_kind: ModuleType) -> None:
    """The three variables as a user sets them: the bench line names the capped kind."""
    here = cpu_kind.capability()
    if not here["native_bf16"] or here["capped"]:
        pytest.skip("needs an uncapped CPU with native bf16 to cap")
    code = "import cpu_kind; print(cpu_kind.describe(cpu_kind.capability()))"
    cap = {
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    }
    src = str(Path(__import__("reinforge").__file__).resolve().parents[1])
    env = {**os.environ, **cap, "PYTHONPATH": src}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=Path(cpu_kind.__file__).parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.startswith(f"CPU: AVX2 (capped on an {here['kind']} CPU) (")
    assert "torch AVX2" in out and "ONEDNN_MAX_CPU_ISA=AVX2" in out and "auto = fp32" in out
