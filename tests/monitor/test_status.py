"""RunStatus: step counting, pace (ETA, rollouts/min), headline and line text."""

from __future__ import annotations

from reinforge.monitor.status import RunStatus, eval_pairs, fmt_duration, fmt_number, row_kind


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_eta_comes_from_this_invocations_pace_only() -> None:
    """A resumed run (4 of 10 steps done before) estimates from the steps it ran itself."""
    clock = Clock()
    status = RunStatus(clock)
    status.plan(10, done=4)
    assert status.eta() is None and status.current == 4
    status.begin("step 5 (epoch 1)", 8)
    assert status.current == 5 and status.step_label() == "step 5/10"
    clock.now += 60
    status.task_done(8)
    status.step_done({"step": 5, "explore/reward_mean": 0.5})
    assert status.completed == 5
    assert status.eta() == 60 * 5  # 5 steps left at 60 s each
    assert status.rollouts_per_min() == 8.0
    assert status.pace() == "elapsed 1:00, ETA 5:00, 8.0 rollouts/min"


def test_a_train_only_process_counts_trained_steps() -> None:
    status = RunStatus(Clock())
    status.plan(6, done=2)
    status.set_phase("training step 3", None, None)
    assert status.current == 3
    status.step_done({"step": 3, "train/loss": 0.5})
    assert status.completed == 3 and status.headline() == "loss=0.5"


def test_explore_steps_count_when_training_lags() -> None:
    status = RunStatus(Clock())
    status.plan(6)
    status.step_done({"step": 2, "explore/reward_mean": 0.5})
    status.step_done({"step": 1, "train/loss": 0.5})
    assert status.completed == 2 and status.current == 2


def test_headline_keeps_each_latest_value_once() -> None:
    status = RunStatus(Clock())
    status.step_done({"step": 1, "explore/reward_mean": 0.5, "explore/accuracy": 0.25})
    status.step_done({"step": 1, "train/loss": 0.75, "train/policy/loss": 0.5})
    status.step_done({"step": 2, "explore/reward_mean": 0.625})
    assert status.headline() == "reward=0.625 accuracy=0.25 loss=0.75"
    status.step_done({"step": 2, "eval/a/b/tasks": 2.0, "eval/a/b/mean@2": 0.5})
    assert status.headline().endswith("eval a/b mean@2=0.5")  # taskset names may hold '/'


def test_phases() -> None:
    status = RunStatus(Clock())
    status.begin("eval held out", 48)
    assert status.phase.text() == "evaluating held out 0/48 tasks"
    status.task_done(4)
    assert status.phase.text() == "evaluating held out 1/48 tasks"
    status.set_phase("syncing weights", None, None)
    assert status.phase.text() == "syncing weights"
    clock = status._clock
    assert isinstance(clock, Clock)
    status.set_phase("training step 2: micro-batch", 3, 8)
    assert status.phase.text() == "training step 2: micro-batch 3/8"
    clock.now += 5
    status.set_phase("training step 2: micro-batch", 4, 8)  # the same phase goes on
    assert status.phase_elapsed == 5
    status.set_phase("syncing weights", None, None)
    assert status.phase_elapsed == 0
    status.idle()
    assert status.phase.text() == ""


def test_eval_pairs_pick_the_largest_k() -> None:
    row = {
        "eval/t/mean@8": 0.5,
        "eval/t/std@8": 0.1,
        "eval/t/best@2": 0.6,
        "eval/t/best@8": 0.9,
        "eval/t/worst@8": 0.1,
        "eval/t/accuracy": 0.5,
        "eval/t/reward_mean": 0.4,
        "eval/t/failed_tasks": 1.0,
    }
    assert eval_pairs(row, "t") == [
        "mean@8=0.5",
        "std@8=0.1",
        "best@8=0.9",
        "worst@8=0.1",
        "accuracy=0.5",
        "reward=0.4",
        "failed=1",
    ]


def test_formatting() -> None:
    assert fmt_number(8.0) == "8" and fmt_number(0.123456) == "0.1235" and fmt_number(3) == "3"
    assert fmt_duration(59.6) == "1:00" and fmt_duration(3725) == "1:02:05"
    assert fmt_duration(-3) == "0:00"
    assert row_kind({"step": 1, "explore/x": 1, "reward_std_filter/dropped": 2}) == "explore"
    assert row_kind({"step": 1, "eval/t/accuracy": 1}) == "eval"
    assert row_kind({"step": 1}) == "other"
