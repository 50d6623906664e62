"""bench/ab_commits.py: the metric option and a real side-by-side run of a tiny script."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import ab_commits  # noqa: E402


def test_a_metric_is_a_name_and_a_regex_with_one_group() -> None:
    name, pattern = ab_commits.parse_metric("rate=median ([0-9,.]+)")
    assert name == "rate"
    assert pattern.search("median 1,234.5").group(1) == "1,234.5"
    for bad in ["no-equals", "=x(1)", "rate=no group", "rate=(a)(b)"]:
        with pytest.raises(argparse.ArgumentTypeError):
            ab_commits.parse_metric(bad)


def test_each_side_runs_its_own_tree(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "probe.py").write_text(
        "import os\nprint('value', len(os.environ['PYTHONPATH']))\n", encoding="utf-8"
    )
    found = ab_commits.run_side(
        tmp_path, ["probe.py"], [ab_commits.parse_metric(r"v=value ([0-9]+)")]
    )
    assert found == {"v": float(len(str(tmp_path / "src")))}
    with pytest.raises(SystemExit, match="metric w not found"):
        ab_commits.run_side(tmp_path, ["probe.py"], [ab_commits.parse_metric(r"w=nothing (1)")])


def test_the_command_names_a_missing_script() -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "ab_commits.py"),
            "--base",
            "HEAD",
            "--metric",
            "a=(1)",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode != 0
    assert "name the bench script" in proc.stderr


def test_a_script_from_another_tree_runs_with_this_trees_src_and_folder(tmp_path: Path) -> None:
    """``--script-from-new``: the script file comes from one tree, ``src`` and the
    working directory from the side's own."""
    tree, other = tmp_path / "old", tmp_path / "new"
    (tree / "src").mkdir(parents=True)
    other.mkdir()
    (other / "probe.py").write_text(
        "import os\n"
        "print('path', len(os.environ['PYTHONPATH']))\n"
        "print('in-tree', int(os.path.isdir('src')))\n",
        encoding="utf-8",
    )
    metrics = [
        ab_commits.parse_metric(r"path=path ([0-9]+)"),
        ab_commits.parse_metric(r"here=in-tree ([0-9]+)"),
    ]
    with pytest.raises(SystemExit, match="exited"):  # the old tree has no probe.py
        ab_commits.run_side(tree, ["probe.py"], metrics)
    found = ab_commits.run_side(tree, ["probe.py"], metrics, script_tree=other)
    assert found == {"path": float(len(str(tree / "src"))), "here": 1.0}


def test_rounds_alternate_from_the_side_named_first() -> None:
    assert [ab_commits.side_order(r, "old") for r in range(3)] == [
        ["old", "new"],
        ["new", "old"],
        ["old", "new"],
    ]
    assert ab_commits.side_order(0, "new") == ["new", "old"]
    assert ab_commits.side_order(1, "new") == ["old", "new"]
