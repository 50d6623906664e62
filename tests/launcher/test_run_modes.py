"""``reinforge run`` end to end with the tiny model: modes both, explore + train, bench.

Runs are real subprocesses (as a user runs them, and so that a process can die
mid-run) except where noted. The plugin workflow samples a few tokens from a short
raw prompt and rewards an even first token, so every step is cheap to train on.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.monitor.jsonl import read_jsonl

PLUGIN = '''
import glob
import os
import signal
import time

from reinforge import Workflow


class Parity(Workflow):
    """Reward 1 when the first sampled token id is even.

    RF_KILL_MARKER: the first time batch 3 runs, create the marker and die like a
    SIGKILL (no cleanup). RF_WAIT_FOR: from batch 2 on, wait (up to 120 s) until a
    checkpoint exists in that folder, so a separate trainer process has published
    a policy before the explorer's next weight check.
    """

    can_repeat = True

    def run(self):
        marker = os.environ.get("RF_KILL_MARKER")
        if marker and int(self.task.batch_id) == 3 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(9)
        folder = os.environ.get("RF_WAIT_FOR")
        if folder and int(self.task.batch_id) >= 2:
            deadline = time.monotonic() + 120
            while not glob.glob(os.path.join(folder, "step_*", "state.json")):
                if time.monotonic() > deadline:
                    raise TimeoutError("no checkpoint appeared")
                time.sleep(0.1)
        prompt = "Q" + str(self.task.raw_task["question"])
        exps = self.model.generate([prompt], n=self.repeat_times)
        for i, exp in enumerate(exps):
            exp.reward = float(int(exp.tokens[exp.prompt_length]) % 2 == 0)
            exp.eid.run = self.run_id_base + i
        return exps
'''

CONFIG = """
project: modes
name: t
run_dir: run
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 4
  hf: {batch_window_ms: 5}
buffer:
  batch_size: 2
  total_steps: 3
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 2
      default_workflow_type: rf_modes_plugin.Parity
    eval_tasksets:
      - name: ev
        path: tasks.jsonl
        limit: 2
        format: {prompt_key: question, response_key: answer}
        repeat_times: 2
        default_workflow_type: rf_modes_plugin.Parity
trainer:
  algorithm: grpo
  lr: 1.0e-3
  micro_batch_size: 8
checkpoint:
  save_interval: 2
explorer:
  runner_concurrency: 4
  eval_interval: 2
  eval_on_start: false
monitor:
  progress: false
  tensorboard: true
"""

EXPS_PER_STEP = 2 * 2  # batch_size x repeat_times


def _project(path: Path, config: str = CONFIG) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "tasks.jsonl", "w") as fh:
        for i in range(40):
            fh.write(json.dumps({"question": f"{i} + 1", "answer": str(i + 1)}) + "\n")
    (path / "rf_modes_plugin.py").write_text(PLUGIN)
    (path / "cfg.yaml").write_text(config)
    return path


def _env(project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RF_")}
    return {**env, "PYTHONPATH": str(project), **extra}


class _Process:
    """``reinforge run`` as a subprocess; output goes to files (no pipe can fill up)."""

    def __init__(self, project: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
        logs = project / "logs"
        logs.mkdir(exist_ok=True)
        n = len(list(logs.glob("*.err")))
        self.out_path, self.err_path = logs / f"{n}.out", logs / f"{n}.err"
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "reinforge.cli.main", "run", "-c", "cfg.yaml", *args],
                cwd=project,
                env=_env(project, **env),
                stdout=out,
                stderr=err,
            )

    def result(self) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(
            self.popen.args,
            self.popen.returncode,
            self.out_path.read_text(),
            self.err_path.read_text(),
        )


def _wait_all(*procs: _Process, limit: float = 240) -> list[subprocess.CompletedProcess[str]]:
    """Wait for every process; if one fails, or the time limit passes, kill the others
    (a trainer whose explorer died would otherwise wait for steps forever)."""
    deadline = time.monotonic() + limit
    while True:
        codes = [p.popen.poll() for p in procs]  # poll every process (no short-circuit)
        if all(code is not None for code in codes):
            break
        failed = any(code not in (None, 0) for code in codes)
        if failed or time.monotonic() > deadline:
            for p in procs:
                if p.popen.poll() is None:
                    p.popen.kill()
                    p.popen.wait()
            break
        time.sleep(0.1)
    return [p.result() for p in procs]


def _start(project: Path, *args: str, **env: str) -> _Process:
    return _Process(project, args, env)


def _run(project: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return _wait_all(_start(project, *args, **env))[0]


def _run_in_process(
    project: Path, monkeypatch: pytest.MonkeyPatch, *args: str, **env: str
) -> Result:
    """``reinforge run`` through typer's runner in this process (no interpreter start-up)."""
    monkeypatch.syspath_prepend(str(project))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = CliRunner().invoke(
        app, ["run", "-c", str(project / "cfg.yaml"), "--run-dir", str(project / "run"), *args]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    return result


def _ok(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _batches(run_dir: Path) -> Counter[int]:
    """Experiences per batch id in the buffer."""
    with closing(sqlite3.connect(run_dir / "buffer.db")) as db:
        rows = db.execute("select batch, uid from experiences").fetchall()
    assert len({uid for _, uid in rows}) == len(rows)  # no experience stored twice
    return Counter(int(batch) for batch, _ in rows)


def _metrics(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _train_steps(rows: list[dict[str, Any]]) -> list[int]:
    return [r["step"] for r in rows if "train/experiences" in r or "train/skipped" in r]


def _state(checkpoint: Path) -> dict[str, Any]:
    return json.loads((checkpoint / "state.json").read_text())


def _checkpoints(run_dir: Path) -> list[str]:
    folder = run_dir / "checkpoints"
    return sorted((p.name for p in folder.iterdir()), key=lambda n: int(n.split("_")[-1]))


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
