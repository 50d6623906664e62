"""pyproject's ``dev`` extra is what README says it is: pytest, pytest-timeout, pytest-xdist, ruff and
jsonschema, plus the packages of every extra but ``bench`` and ``vllm`` (the ALFWorld
engine included, so ``make test`` runs its tests)."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
TOOLS = {"pytest>=8,<9.2", "pytest-timeout>=2.3", "pytest-xdist>=3.5", "ruff>=0.6", "jsonschema>=4"}
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


def test_the_upstream_extras_hold_what_upstream_user_code_imports() -> None:
    """``reinforge[trinity]``: Trinity-RFT's math answer helpers import ``word2number``;
    ``reinforge[rllm]``: rLLM's math rewards import ``pylatexenc`` (and sympy)."""
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    assert "word2number>=1.1" in extras["trinity"]
    assert {"pylatexenc>=2.10", "sympy>=1.12"} <= set(extras["rllm"])


def test_the_upstream_extras_import() -> None:
    """What ``dev`` installs here: the modules upstream code imports load."""
    from pylatexenc.latex2text import LatexNodes2Text
    from word2number import w2n

    assert w2n.word_to_num("three hundred and forty two") == 342
    assert LatexNodes2Text().latex_to_text(r"\frac{1}{2}") == "1/2"
