"""Task and its per-taskset configs: plain-data round trips and name resolution."""

from __future__ import annotations

import pytest

from reinforge.core import FormatConfig, GenerationConfig, Task
from reinforge.core import task as task_module


class DummyWorkflow:
    def __init__(self, task: Task, model: object, auxiliary_models: list | None = None) -> None:
        self.task, self.model, self.auxiliary_models = task, model, auxiliary_models


def make_task() -> Task:
    return Task(
        workflow=DummyWorkflow,
        repeat_times=4,
        format_args=FormatConfig(
            prompt_key="question", response_key="answer", system_prompt="Be brief."
        ),
        rollout_args=GenerationConfig(temperature=0.7, n=4, max_tokens=64, stop=["\n\n"]),
        workflow_args={"max_turns": 3},
        reward_fn_args={"strict": True},
        is_eval=True,
        reward_fn="math_reward",
        raw_task={"question": "1 + 1?", "answer": 2},
        batch_id=3,
        task_id="q-9",
        index={"row": 9},
    )


def test_to_dict_from_dict_round_trip() -> None:
    task = make_task()
    data = task.to_dict()
    assert data["workflow"] == f"{__name__}.DummyWorkflow"
    assert data["reward_fn"] == "math_reward"
    assert data["rollout_args"]["stop"] == ["\n\n"]
    back = Task.from_dict(data)
    assert back.workflow.__qualname__ == "DummyWorkflow"  # names resolve to classes
    assert back.to_dict()["workflow"] == data["workflow"]
    assert back.format_args == task.format_args
    assert back.rollout_args == task.rollout_args
    for name in (
        "repeat_times",
        "workflow_args",
        "reward_fn_args",
        "is_eval",
        "raw_task",
        "batch_id",
        "task_id",
        "index",
    ):
        assert getattr(back, name) == getattr(task, name), name
    assert back.to_dict() == data


def test_task_desc_and_truth() -> None:
    task = make_task()
    assert task.task_desc == "1 + 1?"
    assert task.truth == "2"
    empty = Task()
    assert empty.task_desc is None and empty.truth is None


def test_workflow_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    task = Task.from_dict(make_task().to_dict())
    monkeypatch.setattr(task_module, "_resolvers", {})
    task_module.set_resolver(
        "workflow", lambda name: DummyWorkflow if name.endswith("DummyWorkflow") else None
    )
    assert task.workflow_cls is DummyWorkflow
    wf = task.to_workflow(model="m", auxiliary_models=["a"])
    assert (wf.task, wf.model, wf.auxiliary_models) == (task, "m", ["a"])
    with pytest.raises(ValueError, match="has no workflow"):
        _ = Task(task_id="t").workflow_cls


def test_generation_config_rejects_unknown_keys() -> None:
    assert GenerationConfig.from_dict(None) == GenerationConfig()
    assert GenerationConfig.from_dict({"n": 2}).n == 2
    with pytest.raises(ValueError, match=r"unknown rollout_args \['temprature'\]"):
        GenerationConfig.from_dict({"temprature": 0.5})


def test_format_config_to_dict() -> None:
    cfg = FormatConfig(prompt_key="q")
    assert cfg.to_dict()["prompt_key"] == "q"
    assert FormatConfig(**cfg.to_dict()) == cfg


def test_names_resolve_to_classes_as_trinity_workflows_expect() -> None:
    """Trinity-RFT workflows call ``self.task.reward_fn(**self.task.reward_fn_args)``."""
    from reinforge.rewards import REWARD_FUNCTIONS
    from reinforge.workflows import WORKFLOWS

    task = Task(workflow="math_workflow", reward_fn="math_reward", reward_fn_args={})
    assert task.workflow is WORKFLOWS.get("math_workflow")
    assert task.reward_fn is REWARD_FUNCTIONS.get("math_reward")
    reward = task.reward_fn(**task.reward_fn_args)
    assert callable(reward)
    assert Task.from_dict(task.to_dict()).to_dict()["reward_fn"] == "math_reward"
    unknown = Task(workflow="no_such_workflow")
    assert unknown.workflow == "no_such_workflow"  # left as given; workflow_cls names the error
    with pytest.raises(Exception, match="no_such_workflow"):
        unknown.workflow_cls  # noqa: B018


def test_a_class_set_after_construction_is_what_to_dict_sends() -> None:
    """The registered name is sent only while the field still holds the class it named."""
    task = Task(workflow="math_workflow", reward_fn="math_reward")
    task.workflow = DummyWorkflow
    task.reward_fn = "format_reward"
    assert not isinstance(task.reward_fn, str)  # resolved on assignment too
    data = task.to_dict()
    assert data["workflow"] == f"{__name__}.DummyWorkflow"
    assert data["reward_fn"] == "format_reward"
    assert Task.from_dict(data).workflow is DummyWorkflow


def test_repeat_times_is_the_number_of_rollouts_and_sets_rollout_args_n() -> None:
    shared = GenerationConfig(temperature=0.5)
    task = Task(repeat_times=4, rollout_args=shared)
    assert task.repeat_times == task.rollout_args.n == 4
    assert shared.n == 1  # a config shared by other tasks is not changed
    assert task.rollout_args.temperature == 0.5
    unset = Task(rollout_args=GenerationConfig(n=3))
    assert unset.repeat_times == unset.rollout_args.n == 3  # unset: rollout_args.n
    assert Task().repeat_times == 1
    assert Task.from_dict(task.to_dict()).repeat_times == 4


def test_a_run_gets_a_copy_it_may_change() -> None:
    task = make_task()
    run = task.for_run(1)
    assert run is not task and run.rollout_args.n == 1 and task.rollout_args.n == 4
    run.workflow_args["max_turns"] = 9
    run.reward_fn_args.clear()
    run.index["row"] = 0
    run.rollout_args.stop.append("<end>")
    run.format_args.prompt_key = "other"
    run.task_id = "changed"
    assert task.to_dict() == make_task().to_dict()
    assert run.raw_task is task.raw_task  # the row as read is shared
    assert run.workflow is task.workflow and run.to_dict()["reward_fn"] == "math_reward"
    assert task.for_run(4).to_dict() == task.to_dict()
