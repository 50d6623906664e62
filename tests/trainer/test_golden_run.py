"""Golden runs: with ``seed:`` set, two CPU runs on the ``hf`` engine agree bit for bit.

Two ``reinforge run`` processes of the same config, 2 steps on the tiny model, started
at the same time (so their thread timing differs), must log the same rewards and
losses, sample the same tokens, and end on weights with the same hash
(``golden.weights_sha256``); the one with the weight check after each sync logs its
cost (``sync/verify_time``), the one with ``synchronizer.verify_weights: false`` does
not, and the check changes nothing else. The recipe (seed, one thread, one runner) is
docs/verification.md's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import torch

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.models.engines.hf import load_causal_lm
from reinforge.trainer.golden import final_weights_sha256, golden_metrics, weights_sha256
from reinforge.trainer.sync_check import SYNC_VERIFY_TIME

#: the Parity workflow (tests/launcher/parity_workflow.py), loaded as a plugin
PLUGIN = (Path(__file__).parents[1] / "launcher" / "parity_workflow.py").read_text()

CONFIG = """
project: golden
name: t
seed: 11
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 6
  hf: {num_threads: 1}
buffer:
  batch_size: 3
  total_steps: 2
  explorer_input:
    taskset:
      path: tasks.jsonl
      shuffle: true
      format: {prompt_key: question, response_key: answer}
      repeat_times: 4
      default_workflow_type: rf_golden_plugin.Parity
trainer:
  algorithm: grpo
  lr: 1.0e-3
  micro_batch_size: 4
explorer:
  runner_concurrency: 1
  eval_on_start: false
monitor: {progress: false, tensorboard: false, plot: false}
"""


def _start(project: Path, run_dir: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(project), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reinforge.cli.main",
            "run",
            "-c",
            "cfg.yaml",
            "--run-dir",
            run_dir,
            *extra,
        ],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _sampled(run_dir: Path, steps: int) -> list[tuple[Any, ...]]:
    """Every stored experience's tokens, rollout log-probs and reward, in stored order."""
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return [
            (e.tokens.tolist(), list(e.logprobs.tolist()), e.reward)
            for step in range(1, steps + 1)
            for e in storage.read_batch(step)
        ]
    finally:
        storage.close()


def test_two_seeded_cpu_runs_agree_bit_for_bit(tmp_path: Path, tiny_model_path: Path) -> None:
    (tmp_path / "tasks.jsonl").write_text(
        "".join(json.dumps({"question": f"{i} + 1", "answer": str(i + 1)}) + "\n" for i in range(9))
    )
    (tmp_path / "rf_golden_plugin.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    # b without the weight check: it only reads, so the runs must still agree
    procs = [
        _start(tmp_path, "a"),
        _start(tmp_path, "b", "--set", "synchronizer.verify_weights=false"),
    ]
    try:
        outs = [p.communicate(timeout=280)[0] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0, 0], outs[0][-3000:] + outs[1][-3000:]
    a, b = tmp_path / "a", tmp_path / "b"
    first, second = golden_metrics(a), golden_metrics(b)
    trained = [r for r in first if "train/loss" in r]
    assert len(trained) == 2 and trained[0]["train/loss"] != trained[1]["train/loss"]
    assert any("explore/reward_mean" in r for r in first)
    assert first == second  # rewards, losses, grad norms: every float exactly
    checked = [json.loads(line) for line in (a / "metrics.jsonl").read_text().splitlines()]
    assert [r[SYNC_VERIFY_TIME] > 0 for r in checked if "train/loss" in r] == [True, True]
    assert SYNC_VERIFY_TIME not in (b / "metrics.jsonl").read_text()
    assert _sampled(a, 2) == _sampled(b, 2)
    assert final_weights_sha256(a) == final_weights_sha256(b)
    base = load_causal_lm(tiny_model_path, "cpu", torch.float32)[0].state_dict()
    assert final_weights_sha256(a) != weights_sha256(base)  # training moved them
