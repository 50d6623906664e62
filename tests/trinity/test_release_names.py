"""Names that moved or changed between upstream releases: the union surface's release
marks, the script that builds them, and the older imports that still work."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SURFACE = json.loads(Path(__file__).with_name("upstream_surface.json").read_text("utf-8"))
TRINITY_RELEASES = [
    f"trinity-{v}"
    for v in [
        "0.1.0",
        "0.1.1",
        "0.2.0",
        "0.2.1",
        "0.3.0",
        "0.3.1",
        "0.3.2",
        "0.3.3",
        "0.4.0",
        "0.4.1",
        "0.5.0",
        "0.5.1",
        "0.5.2",
        "0.6.0",
    ]
]
RLLM_RELEASES = ["rllm-v0.1", "rllm-v0.2.0", "rllm-v0.2.1", "rllm-v0.2.1.post1", "rllm-v0.3.0-pre"]


def _tool():
    spec = importlib.util.spec_from_file_location(
        "upstream_surface", ROOT / "tools" / "upstream_surface.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_surface_is_the_union_of_every_release() -> None:
    assert SURFACE["sources"]["trinity-releases"]["releases"] == TRINITY_RELEASES
    assert SURFACE["sources"]["rllm-releases"]["releases"] == RLLM_RELEASES
    seen = {r for row in SURFACE["modules"].values() for r in row.get("module_releases", [])}
    assert seen == set(TRINITY_RELEASES) | set(RLLM_RELEASES)  # each release gave rows
    for module, row in SURFACE["modules"].items():
        for name, releases in row.get("releases", {}).items():
            assert name in row["names"], (module, name)
            assert set(releases) <= set(row["module_releases"]), (module, name)
    # names that only an old release had are in the union
    reward_fn = SURFACE["modules"]["trinity.common.rewards.reward_fn"]
    assert reward_fn["releases"]["MathRewardFn"] == ["trinity-0.1.0", "trinity-0.1.1"]
    assert "trinity.buffer.task_scheduler" in SURFACE["modules"]


def test_the_script_marks_which_release_had_which_name(tmp_path: Path) -> None:
    tool = _tool()
    for release, body in {
        "old": "class MathRewardFn:\n    pass\n\ndef _private():\n    pass\n",
        "new": "__all__ = ['RewardFn']\nfrom x import RewardFn\n",
    }.items():
        package = tmp_path / release / "trinity" / "common" / "rewards"
        package.mkdir(parents=True)
        (package / "reward_fn.py").write_text(body)
        (tmp_path / release / "trinity" / "cli").mkdir()
        (tmp_path / release / "trinity" / "cli" / "main.py").write_text("def main(): ...\n")
    surface = {"sources": {}, "modules": {}}
    releases = [tool.scan_release(f"{r}={tmp_path / r}", "trinity") for r in ("old", "new")]
    tool.merge(surface, releases, "test")
    assert surface["modules"] == {  # trinity.cli is not user-facing: not scanned
        "trinity.common.rewards.reward_fn": {
            "names": ["MathRewardFn", "RewardFn"],
            "source": "test",
            "module_releases": ["old", "new"],
            "releases": {"MathRewardFn": ["old"], "RewardFn": ["new"]},
        }
    }
    assert json.loads(tool.dump(surface)) == surface


def test_trinity_0_1_reward_names_import_from_reward_fn_and_return_dicts() -> None:
    from reinforge.trinity.common.rewards import reward_fn
    from reinforge.trinity.common.rewards.math_reward import MathRewardFn

    assert reward_fn.MathRewardFn is MathRewardFn
    scores = reward_fn.AccuracyReward()("The answer is 4.", "What is 2 + 2?", "4")  # 0.1.x's order
    assert isinstance(scores, dict) and scores["accuracy"] == 1.0


def test_workflow_takes_keywords_as_from_trinity_0_3() -> None:
    from reinforge.trinity.common.workflows.workflow import Workflow

    class Mine(Workflow):
        def run(self):
            return []

    with pytest.raises(TypeError):
        Mine(object(), object())  # 0.1.x / 0.2.x passed (model, task) by position


def test_the_script_reads_rllm_globals_constants(tmp_path: Path) -> None:
    tool = _tool()
    (tmp_path / "v01" / "rllm").mkdir(parents=True)
    (tmp_path / "v01" / "rllm" / "globals.py").write_text('OAI_RM_MODEL = "x"\n_hidden = 1\n')
    assert tool.scan_release(f"v0.1={tmp_path / 'v01'}", "rllm") == (
        "v0.1",
        {"rllm.globals": ["OAI_RM_MODEL"]},
    )
