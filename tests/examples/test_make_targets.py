"""The Makefile's demo targets name configs that exist and validate, so a renamed or
broken example fails here rather than in a user's first ``make demo-*``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reinforge.config.loader import load_config

ROOT = Path(__file__).resolve().parents[2]


def _demo_configs() -> list[tuple[str, str]]:
    """``(target, config path)`` for every ``reinforge ... -c FILE`` line of a demo target."""
    found, target = [], None
    for line in (ROOT / "Makefile").read_text().splitlines():
        if m := re.match(r"^([\w-]+):", line):
            target = m.group(1)
        elif (m := re.search(r"reinforge \w+ -c (\S+)", line)) and target.startswith(
            ("demo", "explore")
        ):
            found.append((target, m.group(1)))
    return found


def test_every_demo_target_is_found() -> None:
    targets = {t for t, _ in _demo_configs()}
    assert {"demo", "demo-agent", "demo-agent-env", "explore"} <= targets


@pytest.mark.parametrize(("target", "config"), _demo_configs())
def test_demo_target_config_validates(target: str, config: str) -> None:
    assert load_config(ROOT / config).model.model_path, target  # raises if invalid


def test_demo_agent_env_starts_from_its_sft_run() -> None:
    """gigpo.yaml's ``model.init_from`` is where sft.yaml writes when run from the root."""
    sft = load_config(ROOT / "examples/frozen_lake/sft.yaml")
    rl = load_config(ROOT / "examples/frozen_lake/gigpo.yaml")
    assert Path(rl.model.init_from) == Path("runs") / sft.project / sft.name
