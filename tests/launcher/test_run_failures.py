"""``reinforge run`` when it cannot or should not go on: configuration errors (exit 2,
nothing written), a resume whose checkpoints all fail to load, a run whose every step
is skipped, and interrupted runs that save and say how to resume. The test project:
``run_modes_project.py``.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path

import pytest
from run_modes_project import (
    CONFIG,
    _ok,
    _project,
    _run,
    _run_in_process,
    _start,
    _state,
    _train_steps,
    _wait_all,
)
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.monitor.jsonl import read_jsonl

# ---- configuration errors (in process: they fail before any model is loaded) --------


def test_unknown_algorithm_exits_2_listing_known(tmp_path: Path) -> None:
    project = _project(tmp_path)
    base = ["run", "-c", str(project / "cfg.yaml"), "--run-dir", str(project / "run")]
    result = CliRunner().invoke(app, [*base, "--set", "trainer.algorithm=grpoo"])
    assert result.exit_code == 2, result.output
    assert "unknown algorithm 'grpoo'" in result.stderr
    for name in ("grpo", "dapo", "gspo", "rloo", "reinforce_plus_plus", "cispo", "opmd", "sft"):
        assert name in result.stderr
    assert "Traceback" not in result.stderr
    assert not (project / "run").exists()  # refused before the run started


def test_training_with_the_mock_engine_is_refused(tmp_path: Path) -> None:
    project = _project(tmp_path)
    base = ["run", "-c", str(project / "cfg.yaml"), "--run-dir", str(project / "run")]
    for mode in ("both", "train"):
        result = CliRunner().invoke(
            app, [*base, "--set", "model.engine=mock", f"--set=mode={mode}"]
        )
        assert result.exit_code == 2, result.output
        assert f"mode '{mode}': training needs model.engine: hf" in result.stderr
        assert "cfg.yaml" in result.stderr
    assert not (project / "run").exists()


def test_missing_model_or_sink_package_exits_2_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path)
    base = ["run", "-c", str(project / "cfg.yaml"), "--run-dir", str(project / "run")]
    result = CliRunner().invoke(app, [*base, "--set", "model.model_path=/no/such/model-dir"])
    assert result.exit_code == 2, result.output
    assert "'/no/such/model-dir' is not a local directory" in result.stderr
    assert not (project / "run").exists()

    monkeypatch.setitem(sys.modules, "wandb", None)  # as if wandb were not installed
    result = CliRunner().invoke(app, [*base, "--set", "monitor.wandb.enabled=true"])
    assert result.exit_code == 2, result.output
    assert "monitor.wandb.enabled needs wandb" in result.stderr


def test_a_resume_whose_checkpoints_all_fail_to_load_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never train on from the base weights when the run had checkpoints."""
    project = _project(tmp_path)
    _run_in_process(project, monkeypatch, "--set", "buffer.total_steps=2")
    checkpoints = list((project / "run" / "checkpoints").glob("step_*"))
    assert checkpoints
    for folder in checkpoints:
        (folder / "optim.pt").write_bytes(b"garbage")
    result = CliRunner().invoke(
        app,
        ["run", "-c", str(project / "cfg.yaml"), "--run-dir", str(project / "run"),
         "--set", "buffer.total_steps=3"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "could be loaded" in result.output and "move them aside" in result.output


def test_a_run_whose_every_training_step_is_skipped_fails(tmp_path: Path) -> None:
    """The tiny random model never answers right: every group's rewards are all 0, so
    reward_std_filter drops everything and no step trains. That is not a success."""
    config = (
        CONFIG.replace("rf_modes_plugin.Parity", "simple_workflow")
        .replace("explorer:\n", "explorer:\n  default_reward_fn_type: accuracy_reward\n")
        .replace(
            "trainer:",
            "  experience_pipeline:\n    operators: [{name: reward_std_filter}]\ntrainer:",
        )
    )
    project = _project(tmp_path, config)
    result = CliRunner().invoke(
        app,
        ["run", "-c", str(project / "cfg.yaml"), "--run-dir", str(project / "run"),
         "--set", "buffer.total_steps=2", "--set", "buffer.explorer_input.eval_tasksets=[]"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())  # rich wraps long lines
    assert "all 2 training steps of this run were skipped" in said
    assert "reward_std_filter dropped every group" in said
    assert "all rewards in each group were equal" in said


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_an_interrupted_run_saves_says_how_to_resume_and_logs_each_step_once(
    tmp_path: Path, sig: signal.Signals
) -> None:
    project = _project(tmp_path)
    metrics = project / "run" / "metrics.jsonl"
    args = ("--set", "buffer.total_steps=6", "--set", "explorer.eval_interval=null")
    proc = _start(project, *args)
    deadline = time.monotonic() + 180
    while not (metrics.exists() and '"train/loss"' in metrics.read_text()):
        assert proc.popen.poll() is None, proc.result().stderr[-3000:]
        assert time.monotonic() < deadline, "no training step was logged"
        time.sleep(0.05)
    proc.popen.send_signal(sig)
    result = _wait_all(proc, limit=120)[0]
    assert result.returncode == 128 + sig, result.stderr[-3000:]
    assert "run the same command to resume" in result.stderr
    assert "Traceback" not in result.stderr
    assert list((project / "run" / "checkpoints").glob("step_*/state.json"))
    resumed = _ok(_run(project, *args))
    said = resumed.stdout + resumed.stderr
    assert "resuming the trainer" in said and "warning: resuming" not in said
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    explored = [r["step"] for r in rows if "explore/tasks" in r]
    trained = [r["step"] for r in rows if "train/loss" in r or "train/skipped" in r]
    assert explored == sorted(set(explored)) == list(range(1, 7))
    assert trained == sorted(set(trained)) == list(range(1, 7))


def test_an_interrupted_train_process_saves_its_steps_and_says_how_to_resume(
    tmp_path: Path,
) -> None:
    """Mode train waits for steps an explore process stores; SIGTERM while it waits
    (nothing saved yet: no save or sync interval reached) saves a checkpoint of the
    steps trained and says how to resume."""
    project = _project(tmp_path)
    metrics = project / "run" / "metrics.jsonl"
    quiet = ("--set", "explorer.eval_interval=null", "--set", "buffer.total_steps=2")
    _ok(_run(project, *quiet, "--set", "mode=explore"))
    proc = _start(
        project, "--set", "mode=train", "--set", "buffer.total_steps=4",
        "--set", "checkpoint.save_interval=100", "--set", "synchronizer.sync_interval=100",
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while not (metrics.exists() and _train_steps(read_jsonl(metrics)) == [1, 2]):
        assert proc.popen.poll() is None, proc.result().stderr[-3000:]
        assert time.monotonic() < deadline, "steps 1 and 2 were not trained"
        time.sleep(0.05)
    proc.popen.send_signal(signal.SIGTERM)
    result = _wait_all(proc, limit=120)[0]
    assert result.returncode == 128 + signal.SIGTERM, result.stderr[-3000:]
    assert "interrupted at step 2; run the same command to resume" in result.stderr
    assert "Traceback" not in result.stderr
    assert _state(project / "run" / "checkpoints" / "step_2")["trained_step"] == 2
