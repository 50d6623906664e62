"""Per-step rewards from a StepWiseRewardWorkflow reach the trainer's per-token advantages.

Path: workflow (mock engine, history on) → runner (ids) → SQLite buffer → trainer
advantage (``step_wise_grpo`` preset) → collated batch the policy loss reads. Two runs
of one task end with the same final reward, so only per-step credit tells them apart.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from reinforge.algorithms import collate
from reinforge.buffer import SQLiteExperienceStorage
from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.core import Experience, Task
from reinforge.explorer.messages import TaskRequest
from reinforge.explorer.runner import WorkflowRunner
from reinforge.models.engines.mock import MockEngine
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.workflows import WORKFLOWS, StepWiseRewardWorkflow

# per run: the reward of each of its steps (run 0 succeeds early, run 1 never does)
STEP_REWARDS = {0: [1.0, 0.0], 1: [0.0, 0.0]}


@WORKFLOWS.register_module("test_step_credit_ladder")
class Ladder(StepWiseRewardWorkflow):
    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        super().__init__(
            task=task, model=model, auxiliary_models=auxiliary_models, use_openai_client=False
        )

    max_step_num = 2

    def step(self, step_num: int) -> bool:
        self.model.chat([{"role": "user", "content": f"step {step_num}"}], max_tokens=4)
        return True

    def reward(self, exps: list[Experience], step_num: int) -> float:
        return self.task.workflow_args["rewards"][step_num]


def _explore(tmp_path: Path) -> list[Experience]:
    """Both runs through a runner with history on, stored and read back as batch 1."""
    runner = WorkflowRunner(MockEngine(default_reply="ok"), enable_history=True)
    exps: list[Experience] = []
    for run, rewards in STEP_REWARDS.items():
        task = Task(
            workflow="test_step_credit_ladder",
            workflow_args={"rewards": rewards},
            batch_id=1,
            task_id="t",
        )
        request = TaskRequest(task, repeat_times=1, run_id_base=run, timeout=30, max_retries=0)
        result = asyncio.run(runner.run(request))
        assert result.ok, result.error
        exps += result.experiences
    storage = SQLiteExperienceStorage(tmp_path / f"buffer-{len(list(tmp_path.iterdir()))}.db")
    storage.write(exps)
    stored = storage.read_batch(1)
    storage.close()
    return stored


def _by_run_step(exps: list[Experience]) -> dict[tuple[int, int], Experience]:
    return {(e.eid.run, e.eid.step): e for e in exps}


def test_step_rewards_survive_the_runner_and_the_buffer(tmp_path: Path) -> None:
    exps = _by_run_step(_explore(tmp_path))
    assert {k: e.reward for k, e in exps.items()} == {
        (0, 0): 1.0,
        (0, 1): 0.0,
        (1, 0): 0.0,
        (1, 1): 0.0,
    }
    assert len({e.eid.tid for e in exps.values()}) == 1  # one GRPO group


@pytest.fixture(scope="module")
def trainer(tiny_model_path: Path) -> Trainer:
    cfg = TrainerConfig(algorithm="step_wise_grpo", lr=1e-4, micro_batch_size=4)
    return Trainer(tiny_model_path, cfg, pad_token_id=0)


def test_trainer_gives_per_step_advantages(tmp_path: Path, trainer: Trainer) -> None:
    exps = _explore(tmp_path)
    metrics = trainer.train_step(exps).metrics
    by = _by_run_step(exps)
    # reward-to-go G: run 0 [1, 0], run 1 [0, 0]; pooled mean 0.25, unbiased std 0.5
    expected = {(0, 0): 1.5, (0, 1): -0.5, (1, 0): -0.5, (1, 1): -0.5}
    for key, adv in expected.items():
        exp = by[key]
        assert exp.advantages[exp.action_mask].tolist() == pytest.approx(
            [adv] * exp.response_length, rel=1e-4
        )
    assert metrics["train/advantage/max"] == pytest.approx(1.5, rel=1e-4)
    # what the policy loss reads: the collated per-token advantages, row by row
    batch = collate(exps, pad_token_id=0)
    for row, exp in enumerate(exps):
        start = exp.prompt_length - 1
        cols = batch.advantages[row, start : start + exp.response_length]
        assert cols.tolist() == pytest.approx(exp.advantages.tolist())
    assert trainer.model_version == 1


def test_run_outcome_preset_cannot_tell_the_runs_apart(tmp_path: Path) -> None:
    """``multi_step_grpo`` scores runs by their last step (0 and 0): no credit at all."""
    exps = _explore(tmp_path)
    pipeline = ExperiencePipeline(
        [{"name": "group_advantage", "args": {"algorithm": "multi_step_grpo"}}]
    )
    out, _ = pipeline.process_sync(exps)
    assert all(float(e.advantages.abs().sum()) == 0.0 for e in out)
    # the same operator with the per-step preset gives the early success its credit
    pipeline = ExperiencePipeline(
        [{"name": "group_advantage", "args": {"algorithm": "step_wise_grpo"}}]
    )
    out, _ = pipeline.process_sync(_explore(tmp_path))
    adv = {k: float(e.advantages[0]) for k, e in _by_run_step(out).items()}
    assert adv[(0, 0)] == pytest.approx(1.5, rel=1e-4)
    assert adv[(1, 0)] == pytest.approx(-0.5, rel=1e-4)
