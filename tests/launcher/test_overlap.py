"""``synchronizer.overlap``: in mode both, step k trains while step k + 1 is explored, the
weights reach the engine only after both, and every step is still trained once, on
rollouts at most one version old."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.config import load_config
from reinforge.explorer import Explorer
from reinforge.trainer.trainer import Trainer

#: the Parity workflow (tests/launcher/parity_workflow.py), loaded as a plugin
PARITY_WORKFLOW = Path(__file__).with_name("parity_workflow.py")

CONFIG = """
project: overlap
model: {model_path: tiny-random-smollm2, engine: hf, max_response_tokens: 4}
buffer:
  batch_size: 2
  total_steps: 4
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 4
      default_workflow_type: overlap_plugin.Parity
trainer: {algorithm: grpo, lr: 1.0e-3, micro_batch_size: 8}
synchronizer: {sync_offset: 1, overlap: true}
checkpoint: {save_interval: null}
monitor: {progress: false, tensorboard: false, plot: false}
"""


def test_training_runs_while_the_next_step_is_explored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(20):
            fh.write(json.dumps({"question": f"{i} + 1", "answer": str(i + 1)}) + "\n")
    shutil.copy(PARITY_WORKFLOW, tmp_path / "overlap_plugin.py")
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    monkeypatch.syspath_prepend(str(tmp_path))

    spans: dict[str, list[tuple[float, float]]] = {"train": [], "explore": []}
    threads: set[int] = set()
    train_step, explore_step = Trainer.train_step, Explorer.explore_step

    def timed_train(self, *args, **kwargs):
        start = time.monotonic()
        threads.add(threading.get_ident())
        time.sleep(0.3)  # long enough that a sequential loop could not hide it
        try:
            return train_step(self, *args, **kwargs)
        finally:
            spans["train"].append((start, time.monotonic()))

    async def timed_explore(self, *args, **kwargs):
        start = time.monotonic()
        try:
            return await explore_step(self, *args, **kwargs)
        finally:
            spans["explore"].append((start, time.monotonic()))

    monkeypatch.setattr(Trainer, "train_step", timed_train)
    monkeypatch.setattr(Explorer, "explore_step", timed_explore)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])

    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "train/loss" in r] == [1, 2, 3, 4]
    overlapping = [
        (t, e) for t in spans["train"] for e in spans["explore"] if t[0] < e[1] and e[0] < t[1]
    ]
    assert len(overlapping) >= 2, spans  # steps 1 and 2 trained during explores 2 and 3
    assert threads - {threading.main_thread().ident}  # trained in a worker thread
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        for step in range(1, 5):
            versions = {int(e.info["model_version"]) for e in storage.read_batch(step)}
            # sampled by the weights of step - 2 at the latest: one version behind
            assert versions == {max(0, step - 2)}, (step, versions)
    finally:
        storage.close()


def test_overlap_needs_the_explorer_ahead(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text(CONFIG.replace("sync_offset: 1", "sync_offset: 0"))
    with pytest.raises(Exception, match="set sync_offset: 1"):
        load_config(tmp_path / "cfg.yaml")
