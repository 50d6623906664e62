"""The environments wing loads on demand: ``import reinforge``, the CLI and the workflow
registry import no environment until a name is looked up, every name the wing lists
loads to the class registered under it, and a package of one's own can add
environments (and fail clearly) through the same entry-point group."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest

from reinforge.core.registry import RegistryError
from reinforge.workflows import WORKFLOWS, Workflow

ENV_PACKAGES = ("gymnasium", "textworld", "scienceworld", "alfworld")


def _run(code: str, *, pythonpath: Path | None = None) -> str:
    env = None
    if pythonpath is not None:
        env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_nothing_of_the_wing_loads_before_a_name_is_looked_up() -> None:
    out = _run(
        f"""
        import sys
        import reinforge, reinforge.cli.main
        from reinforge import Task
        from reinforge.workflows import WORKFLOWS
        assert "frozen_lake_workflow" in WORKFLOWS and "webshop_workflow" in list(WORKFLOWS)
        loaded = [m for m in sys.modules if m.startswith("reinforge.envs")]
        loaded += [m for m in {ENV_PACKAGES!r} if m in sys.modules]
        print("before", loaded)
        WORKFLOWS.get("frozen_lake_workflow")
        top = {{m.split(".")[2] for m in sys.modules if m.startswith("reinforge.envs.")}}
        print("after", sorted(top))
        print("environments", sorted(
            t for t in top if hasattr(sys.modules["reinforge.envs." + t], "__path__")))
        """
    )
    assert "before []" in out
    # one environment (a subpackage), not the wing; the shared settings reader is no env
    assert "environments ['frozen_lake']" in out
    assert "after ['frozen_lake', 'task_settings']" in out


def test_every_listed_name_loads_the_class_registered_under_it() -> None:
    listed = metadata.entry_points(group="reinforge.workflows")
    names = {ep.name for ep in listed if ep.value.startswith("reinforge.envs.")}
    assert {"frozen_lake_workflow", "webshop_workflow", "alfworld_workflow"} <= names
    for name in names:
        cls = WORKFLOWS.get(name)
        assert isinstance(cls, type) and issubclass(cls, Workflow), name
        assert cls.__module__.startswith("reinforge.envs."), name
        assert WORKFLOWS.modules[name] is cls


def test_an_unknown_name_lists_the_wing_without_loading_it() -> None:
    with pytest.raises(RegistryError, match="step_wise_webshop_workflow") as caught:
        WORKFLOWS.get("step_wise_webshop_workfow")
    assert "Did you mean 'step_wise_webshop_workflow'" in str(caught.value)


def _plugin(tmp_path: Path, body: str, entry: str) -> Path:
    """An installed package of one's own: a module and a dist-info listing its entry."""
    (tmp_path / "my_envs.py").write_text(textwrap.dedent(body))
    info = tmp_path / "my_envs-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-envs\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[reinforge.workflows]\n{entry}\n")
    return tmp_path


def test_a_package_of_ones_own_adds_an_environment(tmp_path: Path) -> None:
    root = _plugin(
        tmp_path,
        """
        from reinforge.workflows import Workflow

        class GridWorkflow(Workflow):
            def run(self):
                return []
        """,
        "grid_workflow = my_envs:GridWorkflow",
    )
    out = _run(
        """
        import sys
        from reinforge.workflows import WORKFLOWS
        assert "my_envs" not in sys.modules and "grid_workflow" in WORKFLOWS
        print(WORKFLOWS.get("grid_workflow").__qualname__)
        """,
        pythonpath=root,
    )
    assert out.strip() == "GridWorkflow"


def test_an_environment_that_fails_to_import_says_which_and_why(tmp_path: Path) -> None:
    root = _plugin(
        tmp_path,
        "import a_simulator_that_is_not_installed\n",
        "sim_workflow = my_envs:SimWorkflow",
    )
    out = _run(
        """
        from reinforge.core.registry import RegistryError
        from reinforge.workflows import WORKFLOWS
        try:
            WORKFLOWS.get("sim_workflow")
        except RegistryError as exc:
            print(exc)
        """,
        pythonpath=root,
    )
    assert "workflow 'sim_workflow' (my_envs:SimWorkflow, listed by my-envs)" in out
    assert "No module named 'a_simulator_that_is_not_installed'" in out


def test_a_users_class_under_a_wing_name_stays_when_the_wing_loads_later() -> None:
    out = _run(
        """
        import logging
        logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=__import__("sys").stdout)
        from reinforge.workflows import WORKFLOWS, Workflow

        @WORKFLOWS.register_module("frozen_lake_workflow")
        class MyLake(Workflow):
            def run(self):
                return []

        import reinforge.envs.frozen_lake  # the built-in's decorator runs after the user's
        print("registered", WORKFLOWS.get("frozen_lake_workflow").__qualname__)
        """
    )
    assert "now names __main__.MyLake (it named the built-in reinforge.envs.frozen_lake" in out
    assert "registered MyLake" in out
