"""``run_both`` syncs weights into the engine after a trained step and never after a
skipped one, deciding from the typed ``StepResult.skipped`` (not from a metric name)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any
from unittest.mock import MagicMock

import pytest

from reinforge.launcher import modes, training_loop
from reinforge.trainer.step_result import StepResult


class _Trainer:
    """Skips the steps in ``skipped`` (reporting no ``train/skipped`` metric, so only
    the typed field can tell), trains the others."""

    def __init__(self, skipped: set[int]) -> None:
        self.skipped = skipped
        self.world_size = 1  # one process, as TrainerHandle says
        self.global_step = 0
        self.model_version = 0
        self.calls = 0

    def train_step(
        self, exps: list[Any], on_micro_batch: Any = None, demonstrations: Any = None
    ) -> StepResult:
        self.calls += 1
        if self.calls in self.skipped:
            return StepResult(skipped=True, metrics={})
        self.global_step += 1
        self.model_version += 1
        return StepResult(skipped=False, metrics={"train/step_time": 0.0})


class _Explorer:
    def __init__(self, steps: int) -> None:
        self.engine = SimpleNamespace(model_version=0)
        self.cursor = SimpleNamespace(step=0, total=steps, restore=lambda state: None)

    def open_taskset(self) -> Any:
        return self.cursor

    async def explore_step(self, cursor: Any) -> Any:
        if cursor.step == cursor.total:
            return None
        cursor.step += 1
        return SimpleNamespace(step=cursor.step, metrics={"explore/tasks": 1.0}, experiences=[])


def _session(steps: int) -> Any:
    cfg = SimpleNamespace(
        synchronizer=SimpleNamespace(
            sync_interval=1,
            sync_offset=0,
            overlap=False,
            verify_weights=True,
            verify_tolerance=None,
            weight_transport="buckets",
            bucket_mb=256,
        ),
        explorer=SimpleNamespace(eval_on_start=False, eval_interval=0),
        checkpoint=SimpleNamespace(save_interval=0),
        buffer=SimpleNamespace(
            explorer_input=SimpleNamespace(eval_tasksets=[]),
            experience_pipeline=SimpleNamespace(operators=[]),
        ),
    )
    storage = SimpleNamespace(read_state=lambda key: None, read_batch=lambda step: ["exp"])
    return SimpleNamespace(
        cfg=cfg, explorer=_Explorer(steps), storage=storage, reporter=MagicMock()
    )


@pytest.mark.parametrize(
    ("skipped", "synced_after"),
    [(set(), [1, 2, 3]), ({2}, [1, 3]), ({1, 3}, [2])],
)
def test_weights_are_synced_after_trained_steps_only(
    monkeypatch: pytest.MonkeyPatch, skipped: set[int], synced_after: list[int]
) -> None:
    session = _session(steps=3)
    trainer = _Trainer(skipped)
    synced: list[int] = []

    def sync(
        trainer: _Trainer, engine: Any, check: Any = None, transport: Any = None, share: Any = None
    ) -> None:
        assert check is not None and check.enabled  # the run's weight check goes along
        synced.append(trainer.calls)
        engine.model_version = trainer.model_version

    monkeypatch.setattr(training_loop, "make_trainer", lambda session: (trainer, 0))
    monkeypatch.setattr(modes, "load_aux_demonstrations", lambda session: None)
    monkeypatch.setattr(training_loop, "save_run_checkpoint", lambda session, trainer, step: None)
    monkeypatch.setattr(training_loop, "sync_in_process", sync)
    monkeypatch.setattr(modes, "sync_in_process", sync)
    result = asyncio.run(modes.run_both(session))
    assert synced == synced_after
    assert result["steps"] == 3
    rows = [call.args[0] for call in session.reporter.step_done.call_args_list]
    trained = [row for row in rows if "explore/tasks" not in row]
    assert [row["step"] for row in trained] == [1, 2, 3]
    assert [row["step"] for row in trained if "train/sync_time" in row] == synced_after
