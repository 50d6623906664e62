"""The run-mode tests' shared project: the Parity plugin workflow and config a test
project runs, and the helpers that start ``reinforge`` on it (subprocesses or in
process) and read its run folder. A module of its own so the test files share it.
"""

from __future__ import annotations

import json
import os
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
