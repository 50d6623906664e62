"""The bench scripts are files, not a package: load them as modules for their tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
# the scripts import their siblings (run_cli, seed_stats) as `python bench/x.py` does
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """bench/grpo_vs_trl.py"""
    return _load("grpo_vs_trl")


@pytest.fixture(scope="module")
def stats() -> ModuleType:
    """bench/seed_stats.py"""
    return _load("seed_stats")


@pytest.fixture(scope="module")
def gpu_check() -> ModuleType:
    """bench/gpu_check.py"""
    return _load("gpu_check")


@pytest.fixture(scope="module")
def paired() -> ModuleType:
    """bench/paired_eval.py"""
    return _load("paired_eval")


@pytest.fixture(scope="module")
def cpu_kind() -> ModuleType:
    """bench/cpu_kind.py"""
    return _load("cpu_kind")


@pytest.fixture(scope="module")
def step_profile() -> ModuleType:
    """bench/step_profile.py"""
    return _load("step_profile")
