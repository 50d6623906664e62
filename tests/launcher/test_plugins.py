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


def test_a_plugin_folder_imports_like_a_package(tmp_path: Path) -> None:
    """Files copied from an upstream repository import their siblings."""
    pkg = tmp_path / "countdown_plugins"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "prompts.py").write_text("SYSTEM = 'Reach the target.'\n")
    (pkg / "scoring.py").write_text("def score(text):\n    return float('=' in text)\n")
    (pkg / "workflow.py").write_text(
        "from countdown_plugins.prompts import SYSTEM\n"
        "from . import scoring\n"
        "import prompts\n"  # a bare sibling import, as in a script folder
        "from reinforge.trinity.common.workflows import Workflow\n\n"
        "class CountdownPluginWorkflow(Workflow):\n"
        "    system = SYSTEM\n"
        "    def run(self):\n"
        "        return []\n"
    )
    modules = load_plugins(["countdown_plugins"], str(tmp_path))
    names = sorted(m.__name__ for m in modules)
    assert names == [
        "countdown_plugins",
        "countdown_plugins.prompts",
        "countdown_plugins.scoring",
        "countdown_plugins.workflow",
    ]
    cls = WORKFLOWS.get("CountdownPluginWorkflow")  # no decorator: its class name
    assert cls.__module__ == "countdown_plugins.workflow" and cls.system == "Reach the target."
    assert WORKFLOWS.get("countdown_plugins.workflow.CountdownPluginWorkflow") is cls


def test_an_undecorated_episode_workflow_is_named_by_its_class(tmp_path: Path) -> None:
    (tmp_path / "solver_judge_plugin.py").write_text(
        "from reinforge.rllm.workflows.workflow import Workflow\n\n"
        "class SolverJudgePluginWorkflow(Workflow):\n"
        "    async def run(self, task, uid, **kwargs):\n"
        "        return None\n"
    )
    (module,) = load_plugins(["solver_judge_plugin.py"], str(tmp_path))
    assert module.__name__ == "solver_judge_plugin"  # importable by name: dotted paths agree
    adapter = WORKFLOWS.get("SolverJudgePluginWorkflow")
    assert adapter.episode_workflow_cls is module.SolverJudgePluginWorkflow


def test_a_class_decorated_under_another_name_answers_to_its_class_name_too(
    tmp_path: Path,
) -> None:
    (tmp_path / "lake_plugin.py").write_text(
        "from reinforge.trinity.common.workflows import WORKFLOWS, Workflow\n\n"
        '@WORKFLOWS.register_module("my_lake_plugin_workflow")\n'
        "class MyLakePluginWorkflow(Workflow):\n"
        "    def run(self):\n"
        "        return []\n"
    )
    (module,) = load_plugins(["lake_plugin.py"], str(tmp_path))
    assert WORKFLOWS.get("my_lake_plugin_workflow") is module.MyLakePluginWorkflow
    assert WORKFLOWS.get("MyLakePluginWorkflow") is module.MyLakePluginWorkflow


def test_a_taken_class_name_keeps_its_registration(tmp_path: Path) -> None:
    from reinforge.workflows import Workflow

    @WORKFLOWS.register_module("TakenWorkflowName", force=True)
    class Registered(Workflow):
        pass

    (tmp_path / "shadow.py").write_text(
        "from reinforge.workflows import Workflow\n\n"
        "class TakenWorkflowName(Workflow):\n"
        "    def run(self):\n"
        "        return []\n"
    )
    (module,) = load_plugins(["shadow.py"], str(tmp_path))
    assert WORKFLOWS.get("TakenWorkflowName") is Registered
    assert WORKFLOWS.get("shadow.TakenWorkflowName") is module.TakenWorkflowName


def test_a_failing_sibling_import_names_the_entry(tmp_path: Path) -> None:
    pkg = tmp_path / "broken_pkg"
    pkg.mkdir()
    (pkg / "wf.py").write_text("from broken_pkg import missing_sibling\n")
    with pytest.raises(ConfigError, match=r"plugins\[0\]: importing .*broken_pkg' failed"):
        load_plugins(["broken_pkg"], str(tmp_path))


def test_undecorated_operators_and_reward_functions_are_named_by_their_class(
    tmp_path: Path,
) -> None:
    # Trinity-RFT registers its filters in its package __init__, so a copied filter
    # file has no decorator; neither has a reward class a user writes beside it
    from reinforge.buffer.operators import EXPERIENCE_OPERATORS
    from reinforge.rewards import REWARD_FUNCTIONS

    (tmp_path / "my_ops.py").write_text(
        "from reinforge.trinity.buffer.operators import ExperienceOperator\n"
        "from reinforge.trinity.common.rewards import RewardFn\n\n"
        "class PluginKeepPositive(ExperienceOperator):\n"
        "    def process(self, exps):\n"
        "        kept = [e for e in exps if e.reward > 0]\n"
        "        return kept, {'filtered_count': len(exps) - len(kept)}\n\n"
        "class PluginLengthReward(RewardFn):\n"
        "    def __call__(self, response, truth=None, **kwargs):\n"
        "        return {'length': float(len(response))}\n"
    )
    (module,) = load_plugins(["my_ops.py"], str(tmp_path))
    assert EXPERIENCE_OPERATORS.get("PluginKeepPositive") is module.PluginKeepPositive
    assert REWARD_FUNCTIONS.get("PluginLengthReward") is module.PluginLengthReward


def test_two_projects_plugin_files_of_one_name_each_name_their_own(tmp_path: Path) -> None:
    """Two projects run in one process (a notebook, a test session), each with its own
    ``plugin_same_name.py``: ``plugin_same_name.X`` in the second names the second file's
    class, as in a fresh process (the first file kept the name before), while an installed
    module's name is never taken over."""
    import importlib
    import sys

    name = "plugin_same_name"
    for project, cls in (("a", "FirstReward"), ("b", "SecondReward")):
        (tmp_path / project).mkdir()
        (tmp_path / project / f"{name}.py").write_text(f"class {cls}:\n    pass\n")
    try:
        # the first as a config's dotted name imports it (``plugin_same_name.FirstReward``)
        sys.path.insert(0, str(tmp_path / "a"))
        assert hasattr(importlib.import_module(name), "FirstReward")
        load_plugins([f"{name}.py"], str(tmp_path / "b"))
        assert hasattr(importlib.import_module(name), "SecondReward")
    finally:
        sys.modules.pop(name, None)
        for project in ("a", "b"):
            if str(tmp_path / project) in sys.path:
                sys.path.remove(str(tmp_path / project))


def test_a_plugin_file_named_like_an_installed_module_is_imported_privately(
    tmp_path: Path,
) -> None:
    import json
    import sys

    (tmp_path / "json.py").write_text("class Mine:\n    pass\n")
    try:
        (module,) = load_plugins(["json.py"], str(tmp_path))
    finally:
        sys.path.remove(str(tmp_path.resolve()))
    assert hasattr(module, "Mine") and module is not json and hasattr(json, "dumps")
    assert sys.modules["json"] is json
