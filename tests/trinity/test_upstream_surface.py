"""The upstream surface (tests/trinity/upstream_surface.json) against the mirror and the
not-provided table of docs/migrating.md: each upstream module imports from
``reinforge.<module>`` with every listed name, or the table lists it (or the missing
names); and the table lists nothing the mirror has or upstream lacks, so it cannot drift."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SURFACE = json.loads((Path(__file__).with_name("upstream_surface.json")).read_text("utf-8"))
MODULES: dict[str, list[str]] = {m: e["names"] for m, e in SURFACE["modules"].items()}
HEADING = "### What is not provided, and why"


def _not_provided() -> list[str]:
    """The backticked entries of the table's first column (``a.b``, ``a.b.Name``, ``a.*``)."""
    text = (ROOT / "docs" / "migrating.md").read_text("utf-8")
    assert HEADING in text, f"docs/migrating.md lacks {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n#", 1)[0]
    entries = []
    for line in section.splitlines():
        if line.startswith("| `"):
            entries += re.findall(r"`([^`]+)`", line.split(" | ", 1)[0])
    return entries


NOT_PROVIDED = _not_provided()


def _listed(module: str, name: str | None = None) -> bool:
    for entry in NOT_PROVIDED:
        if entry.endswith(".*") and (module + ".").startswith(entry[:-1]):
            return True
        if entry == module or (name is not None and entry == f"{module}.{name}"):
            return True
    return False


def _import(module: str):
    try:
        return importlib.import_module(f"reinforge.{module}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(f"reinforge.{module.split('.')[0]}"):
            return None
        raise


@pytest.mark.parametrize("module", sorted(MODULES))
def test_each_upstream_module_is_mirrored_or_listed(module: str) -> None:
    loaded = _import(module)
    if loaded is None:
        assert _listed(module), (
            f"reinforge.{module} does not exist and docs/migrating.md's not-provided "
            f"table does not list {module}"
        )
        return
    for name in MODULES[module]:
        if not hasattr(loaded, name):
            assert _listed(module, name), (
                f"reinforge.{module} has no {name!r} and the not-provided table "
                f"does not list {module}.{name}"
            )


def test_every_table_entry_is_upstream_and_not_mirrored() -> None:
    stale = []
    for entry in NOT_PROVIDED:
        if entry.endswith(".*"):
            prefix = entry[:-1]
            matched = [m for m in MODULES if m.startswith(prefix)]
            mirrored = [m for m in matched if _import(m) is not None]
            if not matched or mirrored:
                stale.append(f"{entry}: upstream {matched}, mirrored {mirrored}")
        elif entry in MODULES:
            if _import(entry) is not None and all(
                hasattr(_import(entry), n) for n in MODULES[entry]
            ):
                stale.append(f"{entry}: the mirror has it")
        else:
            module, _, name = entry.rpartition(".")
            if module not in MODULES or name not in MODULES[module]:
                stale.append(f"{entry}: not in upstream_surface.json")
            elif _import(module) is not None and hasattr(_import(module), name):
                stale.append(f"{entry}: the mirror has it")
    assert not stale, "stale rows in the not-provided table:\n" + "\n".join(stale)


def test_the_surface_names_its_sources() -> None:
    for module, entry in SURFACE["modules"].items():
        assert entry["source"] in SURFACE["sources"], module
        assert module.split(".")[0] in ("trinity", "rllm"), module
    provided = sum(_import(m) is not None for m in MODULES)
    assert provided >= 60, provided  # a floor, so that a broken import shows here too
