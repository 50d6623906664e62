"""Task selectors and the scheduler (Trinity-RFT's ``trinity.buffer.task_scheduler``), in
the style of upstream's tests/buffer/task_scheduler_test.py: read a taskset batch by
batch, rebuild the scheduler from its ``state_dict`` every third batch (a resumed run),
and check the order each selector produces."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from reinforge.buffer import load_taskset
from reinforge.buffer.task_scheduler import TaskScheduler, build_scheduler, task_pass_rates
from reinforge.buffer.taskset_config import DataSelectorConfig, TasksetConfig
from reinforge.core import Experience

N = 7  # tasks, as upstream's subset_2
BATCH = 2
EPOCHS = 2


def _taskset(tmp_path: Path, selector: dict | None) -> list:
    path = tmp_path / "tasks.jsonl"
    rows = [
        {
            "question": f"Question {i + 1}.",
            "answer": f"Answer {i + 1}.",
            "feature_offline": [0.3, 0.1, 0.6, 0.9, 0.8, 0.2, 0.5][i],
            "feat_1": i / 10,
            "feat_2": (i + 3) / 10,
        }
        for i in range(N)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = TasksetConfig.model_validate(
        {
            "name": "subset",
            "path": str(path),
            "format": {"prompt_key": "question", "response_key": "answer"},
            "default_workflow_type": "math_workflow",
            **({"data_selector": selector} if selector is not None else {}),
        }
    )
    return load_taskset(config).tasks, config


def _read(tasks, config: DataSelectorConfig, resume_every: int | None) -> list[int]:
    """Positions read over EPOCHS epochs, in batches; resumed from state every few."""
    scheduler = TaskScheduler(tasks, config)
    order: list[int] = []
    for batch in range(EPOCHS * N // BATCH):
        picked = scheduler.select(BATCH)
        for i in picked:  # what the batch's tasks say they are
            assert tasks[i].index["index"] == i and tasks[i].index["taskset_id"] == 0
            assert tasks[i].raw_task["question"] == f"Question {i + 1}."
        order += picked
        if resume_every and batch % resume_every == resume_every - 1:
            state = json.loads(json.dumps(scheduler.state_dict()))  # as stored: JSON
            scheduler = TaskScheduler(tasks, config)
            scheduler.load_state_dict(state)
    return order


@pytest.mark.parametrize(
    ("selector", "check"),
    [
        ({"selector_type": "shuffle", "seed": 42}, "epochs_are_permutations"),
        ({"selector_type": "random", "seed": 42}, "batches_have_no_repeat"),
        (
            {"selector_type": "offline_easy2hard", "feature_keys": ["feature_offline"]},
            "easy_to_hard",
        ),
        (
            {"selector_type": "difficulty_based", "feature_keys": ["feat_1", "feat_2"]},
            "batches_have_no_repeat",
        ),
    ],
)
def test_each_selector_reads_in_its_order_and_resumes_from_its_state(
    tmp_path: Path, selector: dict, check: str
) -> None:
    tasks, config = _taskset(tmp_path, selector)
    straight = _read(tasks, config.data_selector, resume_every=None)
    assert _read(tasks, config.data_selector, resume_every=3) == straight
    assert len(straight) == EPOCHS * N // BATCH * BATCH
    batches = [straight[i : i + BATCH] for i in range(0, len(straight), BATCH)]
    assert all(len(set(b)) == len(b) for b in batches)
    if check == "epochs_are_permutations":
        assert sorted(straight[:N]) == list(range(N)) and straight[:N] != list(range(N))
        assert straight[N : 2 * N] != straight[:N]  # a new permutation each epoch
    elif check == "easy_to_hard":  # higher feature = easier, first
        assert straight[:N] == [3, 4, 2, 6, 0, 5, 1]


def test_sequential_is_the_cursors_own_order(tmp_path: Path) -> None:
    tasks, config = _taskset(tmp_path, {"selector_type": "sequential"})
    assert build_scheduler(tasks, config.data_selector) is None  # the cursor reads in order
    scheduler = TaskScheduler(tasks, config.data_selector)
    assert [scheduler.select(3) for _ in range(3)] == [[0, 1, 2], [3, 4, 5], [6, 0, 1]]


def test_trinity_0_3_to_0_5_section_name_task_selector_is_accepted(tmp_path: Path) -> None:
    _, config = _taskset(tmp_path, None)
    section = config.model_dump(by_alias=True, exclude={"data_selector"})
    old = TasksetConfig.model_validate({**section, "task_selector": {"selector_type": "shuffle"}})
    assert old.data_selector is not None and old.data_selector.selector_type == "shuffle"


def _rollouts(index: int, rewards: list[float]) -> list[Experience]:
    return [
        Experience(
            tokens=[1, 2, 3],
            prompt_length=1,
            reward=r,
            info={"task_index": {"taskset": "subset", "taskset_id": 0, "index": index}},
        )
        for r in rewards
    ]


def test_pass_rates_are_read_from_each_experiences_task_index() -> None:
    exps = _rollouts(4, [1.0, 0.0, 1.0, 1.0]) + _rollouts(1, [0.0, 0.0]) + [Experience()]
    assert task_pass_rates(exps) == ([1, 4], [0.0, 0.75])


@pytest.mark.parametrize(("target", "expected"), [(1.0, {0, 1}), (0.0, {5, 6}), (0.5, {2, 3})])
def test_difficulty_based_picks_the_band_its_target_names_from_measured_pass_rates(
    tmp_path: Path, target: float, expected: set[int]
) -> None:
    """Measured pass rates 1, 1, .5, .5, .25, 0, 0: easy-first (target 1.0) picks tasks 0
    and 1, hard-first (0.0) tasks 5 and 6, the band around 0.5 tasks 2 and 3."""
    selector = {"selector_type": "difficulty_based", "kwargs": {"target_reward": target, "tau": 0}}
    tasks, config = _taskset(tmp_path, selector)
    scheduler = TaskScheduler(tasks, config.data_selector)
    rates = [1.0, 1.0, 0.5, 0.5, 0.25, 0.0, 0.0]
    exps = [e for i, r in enumerate(rates) for e in _rollouts(i, [r] * 4)]
    metrics = scheduler.feedback(exps)
    assert metrics["selection/mean_pass_rate"] == pytest.approx(np.mean(rates))
    assert set(scheduler.select(2)) == expected
    # the estimates are part of the state: a scheduler rebuilt from it picks the same
    state = json.loads(json.dumps(scheduler.state_dict()))
    again = TaskScheduler(tasks, config.data_selector)
    again.load_state_dict(state)
    again.selector.current_index = 0
    scheduler.selector.current_index = 0
    assert again.select(2) == scheduler.select(2)
    assert set(again.select(2, exclude=expected)).isdisjoint(expected)


def test_a_run_cannot_resume_with_another_selector(tmp_path: Path) -> None:
    tasks, config = _taskset(tmp_path, {"selector_type": "shuffle"})
    state = TaskScheduler(tasks, config.data_selector).state_dict()
    other = TaskScheduler(tasks, DataSelectorConfig(selector_type="random"))
    with pytest.raises(ValueError, match="resumes with the selector it began with"):
        other.load_state_dict(state)
