"""Shared fixtures: the tiny random model for fast engine tests, the real model for slow ones.

The tiny model directory is built once per cache (under a second when the real
model's safetensors cache already exists; on a fresh machine the GGUF is first
converted, about 20 s), and resolved once per test session.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def tiny_model_path() -> Path:
    """Local directory of ``tiny-random-smollm2`` (2 layers, real SmolLM2 tokenizer)."""
    from reinforge.models.catalog import resolve_model_path

    return resolve_model_path("tiny-random-smollm2")


@pytest.fixture(scope="session")
def tiny_vlm_path() -> Path:
    """Local directory of ``tiny-random-smolvlm`` (Idefics3, 64-pixel images, SmolLM2 tokenizer)."""
    from reinforge.models.catalog import resolve_model_path

    return resolve_model_path("tiny-random-smolvlm")


@pytest.fixture(scope="session")
def tiny_model_and_tokenizer(tiny_model_path: Path) -> tuple[Any, Any]:
    """The tiny model loaded once (fp32, CPU). Tests must not modify its weights."""
    import torch

    from reinforge.models.engines.hf import load_causal_lm

    return load_causal_lm(tiny_model_path, "cpu", torch.float32)


@pytest.fixture(scope="session")
def real_model_path() -> Path:
    """Local directory of ``smollm2-135m-instruct`` (for ``@pytest.mark.slow`` tests)."""
    from reinforge.models.catalog import resolve_model_path

    return resolve_model_path("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def vllm_python() -> str:
    """The vLLM venv's Python for tests that start real vLLM servers (``@pytest.mark.vllm``).

    ``make test`` creates ``.venv-vllm`` first. Outside CI a missing venv skips those
    tests with the command that creates it; in CI it fails them, so a broken install
    step cannot pass as green.
    """
    import os

    path = os.environ.get("REINFORGE_VLLM_PYTHON") or str(
        Path(__file__).resolve().parents[1] / ".venv-vllm" / "bin" / "python"
    )
    if not Path(path).exists():
        message = f"no vLLM venv at {path}: run `make vllm-venv`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def vllm_processes_under():
    """``f(folder)``: pids of live processes of the vLLM servers whose logs are under
    ``folder``: those carrying REINFORGE_VLLM_LOG, and everything in their process
    groups (engine-core and worker processes retitle themselves, which overwrites the
    environment that /proc shows)."""

    def table() -> list[tuple[int, int, bytes]]:
        rows = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                environ = (proc / "environ").read_bytes()
            except OSError:
                continue
            if fields[0] != "Z":
                rows.append((int(proc.name), int(fields[2]), environ))
        return rows

    def find(folder: Path) -> list[int]:
        marker = f"REINFORGE_VLLM_LOG={folder}".encode()
        rows = table()
        groups = {pgid for _, pgid, environ in rows if marker in environ}
        return sorted(pid for pid, pgid, environ in rows if pgid in groups or marker in environ)

    return find
