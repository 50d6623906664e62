"""Fixtures of the hf engine's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reinforge.models.engines.hf import HFEngine


@pytest.fixture
def engine(tiny_model_and_tokenizer: tuple[Any, Any]) -> Iterator[HFEngine]:
    """An engine on the shared 2-layer random model (tests must not change its weights)."""
    model, tokenizer = tiny_model_and_tokenizer
    eng = HFEngine(model=model, tokenizer=tokenizer, device="cpu")
    yield eng
    eng.close()


@pytest.fixture
def own_engine(tiny_model_path: Path) -> Iterator[HFEngine]:
    """An engine on its own copy of the tiny model, loaded from disk (tests may change
    its weights)."""
    eng = HFEngine(tiny_model_path, device="cpu")
    yield eng
    eng.close()
