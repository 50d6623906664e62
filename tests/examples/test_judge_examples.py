"""The ``examples/judges`` configs run through the CLI: every one with mock engines
swapped in (fast); RULER trained with the tiny model as policy and a scripted judge, and
once with hf engines on the tiny model for both, whose nonsense verdicts mask every group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

JUDGES = Path(__file__).resolve().parents[2] / "examples" / "judges"

#: a scripted verdict each judge example's judge can parse
VERDICTS = {
    "ruler": '{"scores": [1, 0.5, 0.25, 0]}',
    "math_rm": '{"score": 0.8}',
    "rubric": '{"rating": 9}',
}


def shrunk(name: str, tmp_path: Path, *, mock: bool) -> Path:
    """The example with absolute data paths, two small steps, no eval; with ``mock``
    the policy and judges become mock engines (judges answer ``VERDICTS[name]``)."""
    cfg = yaml.safe_load((JUDGES / f"{name}.yaml").read_text())
    buffer = cfg["buffer"]
    buffer.update(total_steps=2, batch_size=2)
    inputs = buffer["explorer_input"]
    inputs["taskset"]["path"] = str(JUDGES / inputs["taskset"]["path"])
    inputs["eval_tasksets"] = []
    cfg["explorer"]["eval_interval"] = None
    if mock:
        cfg["mode"] = "explore"
        cfg["model"] = {"engine": "mock", "mock": {"policy": "arithmetic", "error_rate": 0.3}}
        if name == "trainable_ruler":
            cfg["model"]["mock"]["replies"] = {"Candidate 1": VERDICTS["ruler"]}
        for aux in cfg["explorer"].get("auxiliary_models", []):
            for key in ("model_path", "engine", "hf"):
                aux.pop(key, None)
            aux.update(engine="mock", mock={"replies": [VERDICTS[name]]})
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def experiences(run_dir: Path):
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return list(storage.iter_experiences())
    finally:
        storage.close()


@pytest.mark.parametrize("name", ["ruler", "trainable_ruler", "math_rm", "rubric"])
def test_judge_example_explores_with_mock_engines(name: str, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["explore", "-c", str(shrunk(name, tmp_path, mock=True)), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "explore/tasks" in r] == [1, 2]
    assert all(r["explore/masked_experiences"] == 0 for r in rows if "explore/tasks" in r)
    exps = experiences(run_dir)
    expected = {"trainable_ruler": None}.get(name, 16)
    assert expected is None or len(exps) == expected
    if name != "trainable_ruler":
        assert all(e.metrics["judge_success"] == 1.0 for e in exps)


@pytest.mark.parametrize("name", ["ruler_mock", "llm_judge_operator"])
def test_mock_judge_examples_run_as_shipped(name: str, tmp_path: Path) -> None:
    config = JUDGES / f"{name}.yaml"
    result = CliRunner().invoke(app, ["explore", "-c", str(config), "--run-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert len(experiences(tmp_path)) == 128


def test_ruler_example_trains_the_tiny_policy_on_a_scripted_judges_ranks(
    tmp_path: Path, tiny_model_path: Path, assert_run_trained
) -> None:
    """The policy an hf engine on the tiny random model, the judge a mock engine that
    ranks every group 1, 0.5, 0.25, 0: the RULER rewards differ within each group, so
    the step has nonzero advantages and the weights move."""
    path = shrunk("ruler", tmp_path, mock=False)
    cfg = yaml.safe_load(path.read_text())
    cfg["model"].update(model_path=str(tiny_model_path), max_response_tokens=8)
    judge = cfg["explorer"]["auxiliary_models"][0]
    for key in ("model_path", "engine", "hf"):
        judge.pop(key, None)
    judge.update(engine="mock", mock={"replies": [VERDICTS["ruler"]]})
    cfg["trainer"]["lr"] = 1.0e-3
    cfg["buffer"]["total_steps"] = 1  # one step shows it (each costs seconds in CI)
    cfg["checkpoint"]["save_interval"] = 1
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "-c", str(path), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    exps = experiences(run_dir)
    assert len(exps) == 8 and all(e.metrics["judge_success"] == 1.0 for e in exps)
    assert sorted({e.reward for e in exps}) == [0.0, 0.25, 0.5, 1.0]
    assert_run_trained(run_dir, tiny_model_path, 1)


@pytest.mark.slow
def test_ruler_example_with_a_tiny_hf_judge_masks_every_group(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    """Policy and judge both hf engines on the tiny random model: the judge talks
    nonsense, so every group is masked and counted, both steps explore, none trains,
    and the run says so and why, with exit code 2."""
    path = shrunk("ruler", tmp_path, mock=False)
    cfg = yaml.safe_load(path.read_text())
    cfg["model"]["model_path"] = str(tiny_model_path)
    cfg["explorer"]["auxiliary_models"][0].update(
        model_path=str(tiny_model_path), max_response_tokens=16
    )
    path.write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", "-c", str(path), "--run-dir", str(run_dir)])
    # every group masked, so nothing trained: the run says so and why, with exit code 2
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert "every experience was masked (16; reasons: judge_unparseable)" in said
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    explored = [r for r in rows if "explore/tasks" in r]
    assert len(explored) == 2
    assert all(r["explore/masked_experiences"] == 8 for r in explored)
    assert all(r["explore/workflow/judge_success/mean"] == 0.0 for r in explored)
