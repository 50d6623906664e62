"""Config plugins: user files imported before a run; bad ones are config errors naming the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from reinforge.config import ConfigError
from reinforge.launcher.plugins import load_plugins
from reinforge.workflows import WORKFLOWS


def test_files_and_folders_register_their_workflows(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "wf.py").write_text(
        "from reinforge.workflows import WORKFLOWS, Workflow\n"
        "@WORKFLOWS.register_module('plugin_test_wf', force=True)\n"
        "class W(Workflow):\n    pass\n"
    )
    mods = load_plugins(["mine"], str(tmp_path))
    assert WORKFLOWS.get("plugin_test_wf").__module__ == mods[0].__name__
    assert load_plugins(["mine/wf.py"], str(tmp_path))[0] is mods[0]  # imported once


def test_missing_file_names_the_entry(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"plugins\[1\]: .*nope.py' is not a .py file"):
        (tmp_path / "ok.py").write_text("")
        load_plugins(["ok.py", "nope.py"], str(tmp_path))


def test_import_error_names_the_file_and_the_cause(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import no_such_module_here\n")
    with pytest.raises(
        ConfigError, match=r"plugins\[0\]: importing .*broken.py' failed: ModuleNotFoundError"
    ):
        load_plugins(["broken.py"], str(tmp_path))
