"""pyproject's ``dev`` extra is what README says it is: pytest, pytest-timeout, ruff and
jsonschema, plus the packages of every extra but ``bench`` and ``vllm`` (the ALFWorld
engine included, so ``make test`` runs its tests)."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
TOOLS = {"pytest>=8", "pytest-timeout>=2.3", "ruff>=0.6", "jsonschema>=4"}
OUTSIDE_DEV = {"bench", "vllm"}


def test_dev_is_the_tools_and_every_extra_but_bench_and_vllm() -> None:
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    dev = extras.pop("dev")
    assert len(dev) == len(set(dev)), "a requirement listed twice in dev"
    wanted = TOOLS | {
        req for name, reqs in extras.items() if name not in OUTSIDE_DEV for req in reqs
    }
    assert set(dev) == wanted
    assert {"alfworld==0.4.2", "textworld[pddl]>=1.7,<1.8"} <= set(dev)
