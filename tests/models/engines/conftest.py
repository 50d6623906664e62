"""The vLLM venv for the tests that run real vLLM servers.

``make test`` creates ``.venv-vllm`` before the suite runs. Outside CI a missing
venv skips those tests (with the command to create it); in CI it is an error,
so a broken install step cannot pass as green.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def vllm_python() -> str:
    path = os.environ.get("REINFORGE_VLLM_PYTHON") or str(REPO / ".venv-vllm" / "bin" / "python")
    if not Path(path).exists():
        message = f"no vLLM venv at {path}: run `make vllm-venv`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path
