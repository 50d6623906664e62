"""``reinforge migrate``: Trinity-RFT / rLLM imports rewritten to reinforge's mirrors."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from typer.testing import CliRunner

from reinforge.cli.main import app

TRINITY_FILE = '''"""A reward filter, as written for Trinity-RFT.

    from trinity.common.experience import Experience   (a docstring: left alone)
"""
from typing import List, Tuple

import numpy as np

from trinity.buffer.operators import ExperienceOperator
from trinity.common.experience import Experience, group_by  # trinity.common stays here
from trinity.common.rewards.math_reward import (
    MathBoxedRewardFn,
)
from trinity.common.models.vllm_model import vLLMRolloutModel
import trinity.utils.log as log
import trinity.common.workflows

TRINITY_NAME = "trinity.common.experience"


class SpreadFilter(ExperienceOperator):
    def process(self, exps: List[Experience]) -> Tuple[List[Experience], dict]:
        kept = [e for g in group_by(exps, id_type="task").values() if np.std([x.reward for x in g]) > 0 for e in g]
        return kept, {"filtered_count": len(exps) - len(kept)}
'''

RLLM_FILE = """from rllm.agents.agent import Episode, Trajectory
from rllm.engine.rollout import ModelOutput, RolloutEngine
from rllm.workflows.workflow import TerminationEvent, TerminationReason, Workflow
from rllm.workflows import TimingTrackingMixin
from rllm.environments.base.base_env import BaseEnv
from rllm.tools.web_tools import GoogleSearchTool
"""


def test_dry_run_prints_a_diff_and_reports_what_it_cannot_map(tmp_path: Path) -> None:
    path = tmp_path / "my_filter.py"
    path.write_text(TRINITY_FILE)
    result = CliRunner().invoke(app, ["migrate", str(path), "--dry-run"])
    assert result.exit_code == 1  # one import has no mirror
    assert path.read_text() == TRINITY_FILE  # a dry run changes nothing
    assert "+from reinforge.trinity.buffer.operators import ExperienceOperator" in result.stdout
    assert f"{path}:14: cannot map 'trinity.common.models.vllm_model'" in result.stderr


def test_migrated_file_imports_and_keeps_strings_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "my_filter.py"
    path.write_text(TRINITY_FILE.replace(
        "from trinity.common.models.vllm_model import vLLMRolloutModel\n", ""
    ))  # fmt: skip
    result = CliRunner().invoke(app, ["migrate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    text = path.read_text()
    assert "    from trinity.common.experience import Experience   (a docstring" in text
    assert "group_by  # trinity.common stays here" in text
    assert 'TRINITY_NAME = "trinity.common.experience"' in text
    assert "from reinforge.trinity.common.rewards.math_reward import (\n" in text
    assert "import reinforge.trinity.utils.log as log\n" in text
    assert "from reinforge import trinity; import reinforge.trinity.common.workflows\n" in text

    spec = importlib.util.spec_from_file_location("migrated_filter", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["migrated_filter"] = module
    spec.loader.exec_module(module)
    assert module.trinity.common.workflows.WORKFLOWS is not None
    assert module.log.get_logger("x").name == "x"


def test_rllm_imports_and_a_name_the_mirror_lacks(tmp_path: Path) -> None:
    path = tmp_path / "solver_judge.py"
    path.write_text(RLLM_FILE + "from rllm.agents.agent import NoSuchThing\n")
    result = CliRunner().invoke(app, ["migrate", str(path)])
    assert result.exit_code == 1
    text = path.read_text()
    for line in (
        "from reinforge.rllm.agents.agent import Episode, Trajectory",
        "from reinforge.rllm.engine.rollout import ModelOutput, RolloutEngine",
        "from reinforge.rllm.workflows.workflow import TerminationEvent",
        "from reinforge.rllm.workflows import TimingTrackingMixin",
        "from reinforge.rllm.environments.base.base_env import BaseEnv",
        "from rllm.tools.web_tools import GoogleSearchTool",  # no mirror: unchanged
    ):
        assert line in text
    assert f"{path}:6: cannot map 'rllm.tools.web_tools'" in result.stderr
    assert (
        f"{path}:7: cannot map 'rllm.agents.agent': reinforge.rllm.agents.agent has no 'NoSuchThing'"
        in result.stderr
    )


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["migrate", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_files_that_are_not_python_are_skipped_by_name_and_the_rest_migrated(
    tmp_path: Path,
) -> None:
    (tmp_path / "unclosed.py").write_text("from trinity.common.workflows import (\n")
    (tmp_path / "binary.py").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "good.py").write_text("from trinity.common.experience import Experience\n")
    result = CliRunner().invoke(app, ["migrate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert f"{tmp_path / 'unclosed.py'}: skipped, cannot be read as Python" in result.stderr
    assert f"{tmp_path / 'binary.py'}: skipped, cannot be read as Python" in result.stderr
    assert (tmp_path / "unclosed.py").read_text() == "from trinity.common.workflows import (\n"
    assert (tmp_path / "good.py").read_text() == (
        "from reinforge.trinity.common.experience import Experience\n"
    )


def test_an_upstream_helper_copied_beside_the_file_is_imported_relatively(
    tmp_path: Path,
) -> None:
    (tmp_path / "helpers.py").write_text("GREETING = 'hi'\n")
    (tmp_path / "lake.py").write_text(
        "from trinity.common.workflows.envs.my_env.helpers import *\n"
        "from trinity.common.workflows.envs.my_env.absent import thing\n"
        "from trinity.common.workflows.workflow import Workflow\n"
    )
    result = CliRunner().invoke(app, ["migrate", str(tmp_path)])
    text = (tmp_path / "lake.py").read_text()
    assert text.splitlines() == [
        "from .helpers import *",
        "from trinity.common.workflows.envs.my_env.absent import thing",  # nothing beside it
        "from reinforge.trinity.common.workflows.workflow import Workflow",
    ]
    assert "lake.py:1: 'trinity.common.workflows.envs.my_env.helpers' -> '.helpers'" in (
        result.stderr
    )
    assert result.exit_code == 1 and "cannot map 'trinity.common.workflows.envs.my_env.absent'" in (
        result.stderr
    )


def test_a_copy_beside_the_file_wins_over_a_mirror_that_lacks_its_names(tmp_path: Path) -> None:
    # the user copied upstream's workflow.py (with a helper of their own) beside lake.py
    (tmp_path / "workflow.py").write_text(
        "from trinity.common.workflows.workflow import Workflow as _Base\n\n"
        "class Workflow(_Base):\n    pass\n\n"
        "def make_prompt(task):\n    return str(task)\n"
    )
    (tmp_path / "lake.py").write_text(
        "from trinity.common.workflows.workflow import Workflow, make_prompt\n"
        "from trinity.common.workflows.workflow import Workflow as Base, not_anywhere\n"
    )
    result = CliRunner().invoke(app, ["migrate", str(tmp_path / "lake.py")])
    assert (tmp_path / "lake.py").read_text().splitlines() == [
        "from .workflow import Workflow, make_prompt",  # the copy defines both names
        # the copy lacks one name: the mirror stays, and the gap is reported
        "from reinforge.trinity.common.workflows.workflow import Workflow as Base, not_anywhere",
    ]
    assert result.exit_code == 1
    assert "has no 'not_anywhere'" in result.stderr


def test_an_unmappable_import_says_which_line_to_change_and_how(tmp_path: Path) -> None:
    (tmp_path / "reward.py").write_text(
        "from trinity.utils.eval_utils import compute_score, validate_think_pattern\n"
        "from trinity.utils.math_utils import grade_answer\n"
        "from rllm.rewards.reward_fn import math_reward_fn, search_reward_fn\n"
        "from rllm.globals import THOUGHT_DELIMITER_END\n"
    )
    result = CliRunner().invoke(app, ["migrate", str(tmp_path)])
    path = tmp_path / "reward.py"
    assert result.exit_code == 1
    assert (
        f"{path}:2: cannot map 'trinity.utils.math_utils': no module "
        "reinforge.trinity.utils.math_utils in reinforge; change this line: copy upstream's "
        "trinity/utils/math_utils.py beside this file"
    ) in result.stderr.replace("\n", "")
    assert (
        f"{path}:3: cannot map 'rllm.rewards.reward_fn': reinforge.rllm.rewards.reward_fn has "
        "no 'search_reward_fn'; change this line"
    ) in result.stderr.replace("\n", "")
    assert "What is not provided, and why" in result.stderr
    assert ":1:" not in result.stderr and ":4:" not in result.stderr  # both mirrored now
    assert path.read_text().splitlines()[0].startswith("from reinforge.trinity.utils.eval_utils")


def test_an_internal_error_names_the_file_and_line_and_exits_2(tmp_path: Path, monkeypatch) -> None:
    import reinforge.cli.import_rewriter as rewriter

    def broken(module: str):
        if module.endswith("reward_fn"):
            raise KeyError("a bug in the rewriter")
        return None

    monkeypatch.setattr(rewriter, "_exported_names", broken)
    bad = tmp_path / "a_reward.py"
    bad.write_text("import os\n\nfrom trinity.common.rewards.reward_fn import RewardFn\n")
    good = tmp_path / "b_flow.py"
    good.write_text("from trinity.common.experience import Experience\n")
    result = CliRunner().invoke(app, ["migrate", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert not isinstance(result.exception, KeyError)  # no traceback: a message
    assert f"{bad}:3: error: reinforge migrate failed on this import" in result.stderr
    assert "KeyError" in result.stderr
    assert bad.read_text().startswith("import os")  # left as it was
    assert "from trinity.common" in bad.read_text()
    assert good.read_text() == "from reinforge.trinity.common.experience import Experience\n"


def test_any_form_of_all_is_read_without_importing(tmp_path: Path) -> None:
    from reinforge.cli.module_exports import Unreadable, static_all

    path = tmp_path / "m.py"
    path.write_text(
        "from pkg.other import __all__ as _moved\n"
        "_base = ['a', 'b']\n"
        "__all__ = [*_moved, *_base, 'c'] + ['d']\n"
        "__all__ += ('e',)\n"
        "__all__.extend(['f'])\n"
        "__all__.append('g')\n"
    )
    names = static_all(path, "pkg.m", lambda m: frozenset({"x", "y"}) if m == "pkg.other" else None)
    assert names == ["x", "y", "a", "b", "c", "d", "e", "f", "g"]
    path.write_text("__all__ = [n for n in dir()]\n")
    try:
        static_all(path, "pkg.m", lambda m: None)
    except Unreadable as exc:
        assert "m.py:1" in str(exc)
    else:
        raise AssertionError("a computed __all__ must be reported, not guessed")
