"""Multi-turn agents train end to end: ``reinforge run`` on FrozenLake with the tiny model.

Two short runs (2 explore+train steps each) through the same CLI entry point users
call, in this process: multi-turn FrozenLake (one experience per game, observations
masked) and step-wise FrozenLake (one experience per move, read from the rollout
model's history). The tiny random model never writes a move name, so the workflows
here are the built-in ones with one change: a reply's move is its text length mod 4.
Games then really win or lose, GRPO gets non-zero advantages, and the policy
gradient (not only the step counter) must move the weights.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.core import Experience
from reinforge.envs import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow
from reinforge.workflows import WORKFLOWS

# 2x2 lakes without holes: one move in four reaches the goal
MAPS = [["SG", "FF"], ["FF", "GS"]]


def _move(reply: str) -> int:
    return 1 + len(reply) % 4


@WORKFLOWS.register_module("test_length_move_frozen_lake")
class LengthMoveLake(FrozenLakeWorkflow):
    def parse_action(self, reply: str) -> int:
        return _move(reply)


@WORKFLOWS.register_module("test_length_move_step_wise_frozen_lake")
class LengthMoveStepWiseLake(StepWiseFrozenLakeWorkflow):
    def parse_action(self, reply: str) -> int:
        return _move(reply)


CONFIG = """
project: mt
name: t
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 4
  hf: {{batch_window_ms: 2}}
buffer:
  batch_size: 2
  total_steps: 2
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {{prompt_key: desc, response_key: null}}
      workflow_args: {{max_steps: 3}}
      repeat_times: 4
      default_workflow_type: {workflow}
trainer:
  algorithm: {algorithm}
  lr: 1.0e-3
  micro_batch_size: 4
explorer:
  runner_concurrency: 4
  eval_on_start: false
  rollout_model: {{enable_history: {history}}}
monitor: {{progress: false, tensorboard: false, plot: false}}
"""


def _train(tmp_path: Path, workflow: str, algorithm: str, history: bool) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for desc in MAPS * 2:  # two explore steps of batch_size 2
            fh.write(json.dumps({"desc": desc}) + "\n")
    cfg = CONFIG.format(workflow=workflow, algorithm=algorithm, history=str(history).lower())
    (tmp_path / "cfg.yaml").write_text(cfg)
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    return run_dir


def _check_trained(run_dir: Path, tiny_model_path: Path) -> None:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "train/loss" in r]
    assert [r["step"] for r in trained] == [1, 2]
    assert all(r["train/experiences"] > 0 and r["train/tokens"] > 0 for r in trained)
    # the explorer's second step sampled from the policy trained on the first
    assert [r["explore/model_version"] for r in rows if "explore/stored" in r] == [0, 1]
    state = json.loads((run_dir / "checkpoints" / "step_2" / "state.json").read_text())
    assert state["model_version"] == 2
    before = load_file(str(next(tiny_model_path.glob("*.safetensors"))))
    after = {}
    for f in (run_dir / "checkpoints" / "step_2" / "model").glob("*.safetensors"):
        after.update(load_file(str(f)))
    changed = [k for k, v in before.items() if k in after and not torch.equal(v, after[k])]
    assert changed, "no weight changed after two training steps"


def _stored(run_dir: Path) -> list:
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return storage.read()
    finally:
        storage.close()


def test_frozen_lake_conversations_train(tmp_path: Path, tiny_model_path: Path) -> None:
    run_dir = _train(tmp_path, "test_length_move_frozen_lake", "grpo", history=False)
    exps = _stored(run_dir)
    assert len(exps) == 2 * 2 * 4  # steps x tasks x repeats, one experience per game
    for exp in exps:
        turns = exp.info["turns"]
        assert turns == exp.metrics["env_steps"] and 1 <= turns <= 3
        mask = "".join(str(int(m)) for m in exp.action_mask.tolist())
        assert len(re.findall(r"1+", mask)) == turns  # one span per reply
        assert mask.startswith("1") and mask.endswith("1")
        assert ("0" in mask) == (turns > 1)  # observations between replies are masked
        assert exp.reward == exp.metrics["success"]
        assert exp.logprobs[exp.action_mask].lt(0).all()  # sampled tokens keep their log-probs
    assert any(e.info["turns"] > 1 for e in exps)
    assert {e.reward for e in exps} == {0.0, 1.0}
    assert {e.eid.run for e in exps} == {0, 1, 2, 3}
    _check_trained(run_dir, tiny_model_path)


def test_step_wise_frozen_lake_trains(tmp_path: Path, tiny_model_path: Path) -> None:
    run_dir = _train(
        tmp_path, "test_length_move_step_wise_frozen_lake", "step_wise_grpo", history=True
    )
    exps = _stored(run_dir)
    runs: dict[str, list[Experience]] = {}
    for exp in exps:
        runs.setdefault(exp.eid.rid, []).append(exp)
    assert len(runs) == 2 * 2 * 4
    for steps in runs.values():
        steps.sort(key=lambda e: e.eid.step)
        assert [e.eid.step for e in steps] == list(range(len(steps)))
        assert all(e.metrics["actual_env_steps"] == len(steps) for e in steps)
        won = steps[-1].metrics["success"] == 1.0
        # per-step rewards: only the winning move earns 1
        assert [e.reward for e in steps] == [0.0] * (len(steps) - 1) + [float(won)]
        # a later move's prompt holds the earlier moves' exact tokens
        first, last = steps[0], steps[-1]
        assert last.tokens[: len(first.tokens)].tolist() == first.tokens.tolist()
    assert any(len(steps) > 1 for steps in runs.values())
    _check_trained(run_dir, tiny_model_path)
