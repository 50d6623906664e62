"""``trainer.merge_step_prefixes``: step-wise runs train as one row each, with the same
gradient as one row per step, and only where the loss allows it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.algorithms import TrainBatch, collate
from reinforge.core import Experience, Task
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer import step_planner as planner_module
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig

MAP = ["SFF", "FHF", "FFG"]


@pytest.fixture(scope="module")
def step_wise_runs(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """FrozenLake played step-wise by the tiny model: 2 maps x 3 runs of 3 moves (its
    replies name no move, so every game runs to max_steps), outcomes set by hand."""
    model, tokenizer = tiny_model_and_tokenizer
    exps: list[Experience] = []
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=3) as engine:
        wrapper = ModelWrapper(engine, enable_history=True)
        for task_index, desc in enumerate([MAP, ["SFH", "FFF", "HFG"]]):
            for run in range(3):
                task = Task(
                    workflow="step_wise_frozen_lake_workflow",
                    raw_task={"desc": desc},
                    workflow_args={"max_steps": 3},
                )
                task.rollout_args.max_tokens = 4
                for exp in task.to_workflow(wrapper).run():
                    exp.eid = EID(batch=1, task=task_index, run=run, step=exp.eid.step)
                    exp.reward = float((run + task_index) % 2)
                    exps.append(exp)
    assert len(exps) == 18
    return exps


def _train(path: Path, exps: list[Experience], monkeypatch, step_gradient, **cfg: Any):
    """One step's gradient and the rows each collated batch had."""
    rows: list[int] = []

    def recording_collate(batch_exps: list[Experience], pad: int) -> TrainBatch:
        rows.append(len(batch_exps))
        return collate(batch_exps, pad)

    monkeypatch.setattr(planner_module, "collate", recording_collate)
    config = {"algorithm": "gigpo", "lr": 1e-3, "micro_batch_size": 4, **cfg}
    trainer = Trainer(path, TrainerConfig.model_validate(config), pad_token_id=2)
    grads, metrics = step_gradient(trainer, copy.deepcopy(exps))
    # the sampler's log-probs of every step's reply line up with the trainer's
    assert metrics["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    return grads, rows, metrics


def test_one_row_per_run_gives_the_gradient_of_one_row_per_step(
    step_wise_runs: list[Experience],
    tiny_model_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step_gradient,
) -> None:
    apart, apart_rows, apart_metrics = _train(
        tiny_model_path, step_wise_runs, monkeypatch, step_gradient, merge_step_prefixes=False
    )
    merged, merged_rows, merged_metrics = _train(
        tiny_model_path, step_wise_runs, monkeypatch, step_gradient
    )
    assert sum(apart_rows) == 18 and sum(merged_rows) == 6  # collated rows: steps, runs
    assert (apart_metrics["train/rows"], merged_metrics["train/rows"]) == (18.0, 6.0)
    assert apart_metrics["train/experiences"] == merged_metrics["train/experiences"] == 18.0
    assert merged.keys() == apart.keys() and any(bool(g.any()) for g in apart.values())
    for name, grad in apart.items():
        scale = max(float(grad.abs().max()), 1e-12)
        torch.testing.assert_close(merged[name], grad, atol=1e-4 * scale, rtol=0, msg=name)


def test_sequence_level_losses_keep_one_row_per_step(
    step_wise_runs: list[Experience],
    tiny_model_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    step_gradient,
) -> None:
    """GSPO's ratio is per sequence and seq-mean modes count rows: merging would change
    their loss, so those settings keep one row per step."""
    _, rows, _ = _train(
        tiny_model_path,
        step_wise_runs,
        monkeypatch,
        step_gradient,
        algorithm_args={"loss_agg_mode": "seq-mean-token-mean"},
    )
    assert sum(rows) == 18
    _, rows, _ = _train(
        tiny_model_path,
        step_wise_runs,
        monkeypatch,
        step_gradient,
        algorithm_args={"policy_loss_fn": "gspo"},
    )
    assert sum(rows) == 18
