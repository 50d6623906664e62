"""``reinforge run`` end to end with the tiny model: modes both, explore + train, bench,
resume, and export from a run.

Runs are real subprocesses (as a user runs them, and so that a process can die
mid-run) except where noted. The plugin workflow samples a few tokens from a short
raw prompt and rewards an even first token, so every step is cheap to train on
(``run_modes_project.py``). Configuration errors and failing or interrupted runs:
``test_run_failures.py``.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from run_modes_project import (
    EXPS_PER_STEP,
    _batches,
    _checkpoints,
    _metrics,
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


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Mode both, 3 steps, checkpoints every 2 steps, eval every 2 steps."""
    project = _project(tmp_path_factory.mktemp("both"))
    proc = _ok(_run(project))
    return project, proc.stdout


def test_both_writes_checkpoints_metrics_and_plots(first_run: tuple[Path, str]) -> None:
    project, stdout = first_run
    run_dir = project / "run"
    assert _batches(run_dir) == {1: EXPS_PER_STEP, 2: EXPS_PER_STEP, 3: EXPS_PER_STEP}
    assert _checkpoints(run_dir) == ["step_2", "step_3"]  # step 2 by interval, 3 at the end
    final = _state(run_dir / "checkpoints" / "step_3")
    assert final["trained_step"] == 3 and final["global_step"] == 3 and final["model_version"] == 3

    rows = _metrics(run_dir)
    keys = {k for r in rows for k in r}
    for key in ("explore/reward_mean", "train/loss", "train/grad_norm", "eval/ev/mean@2"):
        assert key in keys, key
    assert _train_steps(rows) == [1, 2, 3]
    assert [r["step"] for r in rows if "explore/stored" in r] == [1, 2, 3]
    # eval at step 2 (interval) and at the end; never twice for the same policy
    assert [r["step"] for r in rows if "eval/ev/mean@2" in r] == [2, 3]
    # the explorer sampled step 2 with the policy trained on step 1 (in-process sync)
    assert [r["explore/model_version"] for r in rows if "explore/stored" in r] == [0, 1, 2]

    plots = {p.name for p in (run_dir / "plots").iterdir()}
    assert {"reward.png", "policy_loss.png", "eval_accuracy.png", "KL.png", "summary.png"} <= plots
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    assert "plots:" in stdout


def test_rerun_with_more_steps_resumes_then_bench(
    first_run: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    project = tmp_path / "p"
    shutil.copytree(first_run[0], project)
    run_dir = project / "run"
    before = len(_metrics(run_dir))

    quiet = ("--set", "monitor.plot=false")
    result = _run_in_process(project, monkeypatch, *quiet, "--set", "buffer.total_steps=5")
    assert "resuming the trainer from" in result.stderr and "step_3" in result.stderr
    assert _batches(run_dir) == {step: EXPS_PER_STEP for step in range(1, 6)}
    new_rows = _metrics(run_dir)[before:]
    assert _train_steps(new_rows) == [4, 5]  # only the new steps
    assert [r["step"] for r in new_rows if "explore/stored" in r] == [4, 5]
    assert _checkpoints(run_dir) == ["step_4", "step_5"]
    final = _state(run_dir / "checkpoints" / "step_5")
    assert final["trained_step"] == 5 and final["global_step"] == 5

    # mode bench: one eval line per checkpoint, at its trained step
    before = len(_metrics(run_dir))
    _run_in_process(project, monkeypatch, *quiet, "--set", "mode=bench")
    bench_rows = _metrics(run_dir)[before:]
    assert [r["step"] for r in bench_rows] == [4, 5]
    assert all("eval/ev/mean@2" in r and "eval/ev/tasks" in r for r in bench_rows)

    # a checkpoint whose weights are damaged is skipped with a warning, not fatal
    weights = run_dir / "checkpoints" / "step_4" / "model" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    before = len(_metrics(run_dir))
    result = _run_in_process(project, monkeypatch, *quiet, "--set", "mode=bench")
    assert "checkpoints/step_4 skipped: " in result.stderr
    assert [r["step"] for r in _metrics(run_dir)[before:]] == [5]


def test_killed_run_resumes_without_losing_or_repeating_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The process dies (os._exit) while exploring step 3; with sync_offset 1, step 2 is
    stored but not trained yet. The rerun trains it, then explores 3 and 4."""
    project = _project(tmp_path)
    marker = tmp_path / "killed"
    args = ("--set", "buffer.total_steps=4", "--set", "synchronizer.sync_offset=1")
    args += ("--set", "checkpoint.save_interval=1", "--set", "monitor.plot=false")
    first = _run(project, *args, RF_KILL_MARKER=str(marker))
    assert first.returncode == 9, first.stderr[-3000:]
    assert marker.exists()
    run_dir = project / "run"
    assert _batches(run_dir) == {1: EXPS_PER_STEP, 2: EXPS_PER_STEP}
    assert _state(run_dir / "checkpoints" / "step_1")["trained_step"] == 1

    # the same command again (in this process: the marker keeps the workflow alive)
    _run_in_process(project, monkeypatch, *args, RF_KILL_MARKER=str(marker))
    assert _batches(run_dir) == {step: EXPS_PER_STEP for step in range(1, 5)}
    assert _train_steps(_metrics(run_dir)) == [1, 2, 3, 4]  # each step trained once
    final = _state(run_dir / "checkpoints" / _checkpoints(run_dir)[-1])
    assert final["trained_step"] == 4 and final["global_step"] == 4


def _explore_and_train(project: Path, *args: str, trainer_first: bool = False) -> tuple[str, str]:
    """Run mode explore and mode train as two concurrent processes; returns their stderr.

    ``trainer_first``: start the explorer only once the trainer process has opened
    the run (it writes the run's config.json), so the trainer is up before any new
    step is stored.
    """
    common = ("--set", "synchronizer.sync_method=checkpoint", "--set", "explorer.eval_interval=")
    common += ("--set", "monitor.plot=false")
    env = {"RF_WAIT_FOR": str(project / "run" / "checkpoints")}
    if trainer_first:
        config = project / "run" / "config.json"
        config.unlink(missing_ok=True)
        trainer = _start(project, *common, *args, "--set", "mode=train", **env)
        deadline = time.monotonic() + 120
        while not config.is_file() and trainer.popen.poll() is None:
            assert time.monotonic() < deadline, "the trainer process never opened the run"
            time.sleep(0.05)
        explorer = _start(project, *common, *args, "--set", "mode=explore", **env)
    else:
        explorer = _start(project, *common, *args, "--set", "mode=explore", **env)
        trainer = _start(project, *common, *args, "--set", "mode=train", **env)
    explored, trained = _wait_all(explorer, trainer)
    assert (explored.returncode, trained.returncode) == (0, 0), (
        f"explore rc={explored.returncode}: {explored.stderr[-2000:]}\n"
        f"train rc={trained.returncode}: {trained.stderr[-2000:]}"
    )
    return explored.stderr, trained.stderr


def test_explore_and_train_processes_share_a_run_dir(tmp_path: Path) -> None:
    project = _project(tmp_path)
    run_dir = project / "run"
    explore_err, _ = _explore_and_train(project)
    assert _batches(run_dir) == {1: EXPS_PER_STEP, 2: EXPS_PER_STEP, 3: EXPS_PER_STEP}
    assert _checkpoints(run_dir)[-1] == "step_3"
    assert _state(run_dir / "checkpoints" / "step_3")["trained_step"] == 3
    with closing(sqlite3.connect(run_dir / "buffer.db")) as db:
        versions = dict(
            db.execute("select batch, max(model_version) from experiences group by batch")
        )
    assert versions["1"] == 0
    assert versions["3"] > 0, versions  # sampled with a policy the trainer published
    assert "explorer loaded policy version" in explore_err

    # both again with one more step: the trainer must not take the first explorer's
    # "done" for the new one's, and trains exactly the new step
    _, train_err = _explore_and_train(project, "--set", "buffer.total_steps=4", trainer_first=True)
    assert "resuming the trainer from" in train_err
    assert _batches(run_dir) == {step: EXPS_PER_STEP for step in range(1, 5)}
    assert _checkpoints(run_dir)[-1] == "step_4"
    assert _state(run_dir / "checkpoints" / "step_4")["trained_step"] == 4
    assert _train_steps(_metrics(run_dir)) == [1, 2, 3, 4]


def _open_at_once(path: str, barrier: Any, results: Any) -> None:
    from reinforge.buffer import SQLiteExperienceStorage

    barrier.wait()
    try:
        SQLiteExperienceStorage(Path(path)).close()
        results.put("ok")
    except Exception as exc:
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_new_buffer_at_once(tmp_path: Path) -> None:
    """Explore and train processes started together both create the buffer's tables."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for attempt in range(3):
        barrier, results = ctx.Barrier(4), ctx.Queue()
        path = str(tmp_path / f"buffer{attempt}.db")
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier, results)) for _ in range(4)]
        for proc in procs:
            proc.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
        assert outcomes == ["ok"] * 4


# ---- reinforge export -------------------------------------------------------------


def test_export_command_writes_a_servable_model(
    first_run: tuple[Path, str], tmp_path: Path
) -> None:
    """``reinforge export RUN_DIR OUT`` (in process) on the run of mode both."""
    import shutil

    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from reinforge.models.engines.hf import HFEngine
    from reinforge.models.model_wrapper import ModelWrapper

    run_dir = first_run[0] / "run"
    runner = CliRunner()
    result = runner.invoke(app, ["export", str(run_dir), str(tmp_path / "out")])
    assert result.exit_code == 0, (result.exception, result.output)
    assert "exported step_3" in result.stdout

    model = AutoModelForCausalLM.from_pretrained(tmp_path / "out", local_files_only=True)
    trained = load_file(run_dir / "checkpoints" / "step_3" / "model" / "model.safetensors")
    state = model.state_dict()
    for key, value in trained.items():
        assert torch.equal(state[key], value), key

    with HFEngine(tmp_path / "out", device="cpu") as engine:
        (exp,) = ModelWrapper(engine).chat([{"role": "user", "content": "hi"}], max_tokens=5)
        assert exp.response_length > 0
        ids = exp.tokens[None]
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
        expected = logp.gather(-1, ids[0, 1:, None])[:, 0]
        scored = torch.tensor(engine.score(exp.tokens.tolist()))
        torch.testing.assert_close(scored, expected, atol=1e-4, rtol=0)

    # an older step; a run folder without its config.json needs --model
    bare = tmp_path / "bare"
    shutil.copytree(run_dir / "checkpoints", bare / "checkpoints")
    missing = runner.invoke(app, ["export", str(bare), str(tmp_path / "x")])
    assert missing.exit_code == 2 and "config.json" in missing.stderr
    args = ["export", str(bare), str(tmp_path / "old"), "--step", "2"]
    result = runner.invoke(app, [*args, "--model", "tiny-random-smollm2"])
    assert result.exit_code == 0, (result.exception, result.output)
    assert "exported step_2" in result.stdout
    absent = runner.invoke(app, ["export", str(run_dir), str(tmp_path / "y"), "--step", "7"])
    assert absent.exit_code == 2 and "no checkpoint step_7" in absent.stderr
