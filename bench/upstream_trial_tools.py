"""Helpers of bench/upstream_trials.py: copy upstream files into a scratch plugin folder,
migrate it, import it, explore it on the mock engine, and run code against an upstream
release itself (in a subprocess, with that release on ``PYTHONPATH``)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from typer.testing import CliRunner

from reinforge.cli.main import app

TRIALS: list[Callable[[argparse.Namespace, Path], dict]] = []


def trial(fn: Callable[[argparse.Namespace, Path], dict]) -> Callable:
    TRIALS.append(fn)
    return fn


def _copy_trinity(args: argparse.Namespace, version: str, paths: list[str], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for rel in paths:
        shutil.copy(Path(args.trinity) / version / rel, dest / Path(rel).name)
    (dest / "__init__.py").touch()


def _copy_rllm(args: argparse.Namespace, ref: str, paths: list[str], dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for rel in paths:
        text = subprocess.run(
            ["git", "--git-dir", args.rllm_git, "show", f"{ref}:{rel}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (dest / Path(rel).name).write_text(text)
    (dest / "__init__.py").touch()


def _migrate(folder: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, ["migrate", str(folder)])
    lines = [ln.split(": ", 1)[-1] for ln in result.stderr.splitlines() if "cannot map" in ln]
    return result.exit_code, lines


def _upstream(args: argparse.Namespace, version: str, code: str) -> object:
    """Run ``code`` (which prints JSON) against Trinity-RFT ``version`` itself."""
    env = {**os.environ, "PYTHONPATH": str(Path(args.trinity) / version)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        cwd=tempfile.gettempdir(),
    )
    if out.returncode:
        raise RuntimeError(out.stderr.strip().splitlines()[-1])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _import_file(path: Path, name: str):
    import importlib.util

    sys.path.insert(0, str(path.parent.parent))
    try:
        return importlib.import_module(f"{path.parent.name}.{name}")
    finally:
        sys.path.pop(0)


def _explore(folder: Path, config: str) -> tuple[int, list]:
    from reinforge.buffer import SQLiteExperienceStorage

    (folder / "config.yaml").write_text(config)
    result = CliRunner().invoke(
        app, ["explore", "-c", str(folder / "config.yaml"), "--run-dir", str(folder / "run"),
              "--set", "monitor.tensorboard=false", "--set", "monitor.plot=false"]
    )  # fmt: skip
    if result.exit_code:
        return result.exit_code, [result.output[-600:]]
    storage = SQLiteExperienceStorage(folder / "run" / "buffer.db")
    try:
        return 0, storage.read()
    finally:
        storage.close()


def _migrate_only(args, scratch, name, copy, note) -> dict:
    """A file tried as far as ``reinforge migrate`` and importing it."""
    kind, ref, paths = copy
    folder = scratch / name
    (_copy_trinity if kind == "trinity" else _copy_rllm)(args, ref, paths, folder)
    code, unmapped = _migrate(folder)
    stem = Path(paths[0]).stem
    try:
        _import_file(folder / f"{stem}.py", stem)
        imported = "imports"
    except Exception as exc:  # what is missing is the finding
        imported = f"import fails: {type(exc).__name__}: {str(exc)[:120]}"
    return {
        "file": " + ".join(paths), "release": ref, "migrate": code,
        "result": "pass" if code == 0 and imported == "imports" else "fails",
        "note": f"{imported}; unmapped {unmapped}; {note}",
    }  # fmt: skip
