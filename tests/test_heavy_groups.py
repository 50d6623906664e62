"""The suite's heavy groups hold under the installed pytest and pytest-xdist.

tests/conftest.py marks every test that starts vLLM servers (or a Ray cluster) with an
``xdist_group``, so that ``make test`` (``--dist loadgroup``) runs them one at a time on
one worker and a module's server starts once. pytest-xdist does that by rewriting node
ids, which some pytest releases ignore without a word (pytest-dev/pytest-xdist#1386):
the heavy tests then spread over both workers and each worker starts its own servers.
This runs the conftest's grouping on two small modules under two real workers.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).with_name("conftest.py")

PROBE = """
import pytest

pytestmark = [{mark}]

@pytest.mark.parametrize("i", range(4))
def test_probe(i):
    pass
"""

PLAIN = """
import pytest

@pytest.mark.parametrize("i", range(8))
def test_plain(i):
    pass
"""

LOAD_CONFTEST = f"""
import importlib.util

_spec = importlib.util.spec_from_file_location("reinforge_suite_conftest", {str(CONFTEST)!r})
_suite = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_suite)
pytest_collection_modifyitems = _suite.pytest_collection_modifyitems
"""


def test_each_heavy_group_runs_on_one_worker(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    (tmp_path / "conftest.py").write_text(LOAD_CONFTEST)
    for name in ("a", "b"):
        (tmp_path / f"test_vllm_{name}.py").write_text(PROBE.format(mark="pytest.mark.vllm"))
    (tmp_path / "test_ray_a.py").write_text(PROBE.format(mark='pytest.mark.needs("ray")'))
    (tmp_path / "test_plain.py").write_text(PLAIN)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    vllm: probe\n    needs: probe\n")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    workers: dict[str, set[str]] = {}
    for worker, module in re.findall(r"\[(gw\d)\][^\n]*PASSED \S*?(test_\w+)\.py::", result.stdout):
        workers.setdefault(module, set()).add(worker)
    assert sum(1 for _ in re.finditer(r"PASSED", result.stdout)) == 20, result.stdout[-3000:]
    vllm = workers["test_vllm_a"] | workers["test_vllm_b"]
    assert len(vllm) == 1, f"the vllm group ran on {sorted(vllm)}:\n{result.stdout[-3000:]}"
    assert len(workers["test_ray_a"]) == 1, result.stdout[-3000:]
