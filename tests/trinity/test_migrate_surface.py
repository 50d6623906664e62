"""``reinforge migrate`` on a file that imports every name of every mirror module and every
row of the upstream surface table (tests/trinity/upstream_surface.json): no crash, every
mirrored import rewritten, and exactly the names the mirror lacks reported.

This is the test that would have caught ``__all__ = [*_moved, "compute_score_v0"]``
crashing the command: any mirror module whose ``__all__`` the command misreads shows
here, as a crash or as a name reported missing that the module in fact has.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from reinforge.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
MIRROR_ROOT = ROOT / "src" / "reinforge"
SURFACE = json.loads(Path(__file__).with_name("upstream_surface.json").read_text("utf-8"))


def _mirror_modules() -> list[str]:
    """Upstream names (``trinity.x.y``) of every module file of the two mirrors."""
    found = []
    for top in ("trinity", "rllm"):
        for path in sorted((MIRROR_ROOT / top).rglob("*.py")):
            parts = path.relative_to(MIRROR_ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join(parts))
    return found


def _load(module: str):
    try:
        return importlib.import_module(f"reinforge.{module}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith(f"reinforge.{module.split('.')[0]}"):
            return None
        raise


def _public_names(loaded) -> list[str]:
    names = getattr(loaded, "__all__", None)
    if names is None:
        names = [n for n in vars(loaded) if not n.startswith("_")]
    return sorted(set(names))


def _wanted() -> dict[str, set[str]]:
    """Module -> the names the test file imports from it."""
    wanted: dict[str, set[str]] = {}
    for module in _mirror_modules():
        wanted.setdefault(module, set()).update(_public_names(_load(module)))
    for module, entry in SURFACE["modules"].items():
        wanted.setdefault(module, set()).update(entry["names"])
    return wanted


def test_migrate_reads_every_mirror_module_and_every_surface_row(tmp_path: Path) -> None:
    wanted = _wanted()
    lines, line_of = [], {}
    for module in sorted(wanted):
        if not wanted[module]:
            lines.append(f"import {module}")
            line_of[len(lines)] = module
            continue
        names = ", ".join(sorted(wanted[module]))
        lines.append(f"from {module} import ({names})")
        line_of[len(lines)] = module
    path = tmp_path / "every_name.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = CliRunner().invoke(app, ["migrate", str(path)])

    # a crash of the command itself shows as an exception other than its exit
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code in (0, 1), result.output  # 2: the command itself failed

    # what the mirror really lacks, asked of the imported modules
    lacking: set[tuple[str, str | None]] = set()
    for module, names in wanted.items():
        loaded = _load(module)
        if loaded is None:
            lacking.add((module, None))
        else:
            lacking.update((module, n) for n in names if not hasattr(loaded, n))
    reported: set[tuple[str, str | None]] = set()
    for row in result.stderr.splitlines():
        match = re.match(rf"{re.escape(str(path))}:(\d+): cannot map '([\w.]+)': (.*)", row)
        if not match:
            continue
        module = line_of[int(match[1])]
        assert match[2] == module, row
        name = re.search(r"has no '(\w+)'", match[3])
        reported.add((module, name[1] if name else None))
    assert reported == lacking, (
        f"reported but present: {sorted(reported - lacking, key=str)}; "
        f"lacking but not reported: {sorted(lacking - reported, key=str)}"
    )

    migrated = path.read_text(encoding="utf-8").splitlines()
    for number, module in line_of.items():
        if (module, None) not in lacking:
            assert f"reinforge.{module}" in migrated[number - 1], migrated[number - 1]
