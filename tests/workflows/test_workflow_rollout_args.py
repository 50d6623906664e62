"""What every Workflow has for Trinity-RFT code: ``self.rollout_args`` and ``self.logger``."""

from __future__ import annotations

import logging
from dataclasses import asdict
from typing import Any

from reinforge.core import Experience, FormatConfig, GenerationConfig, Task
from reinforge.models import MockEngine, ModelWrapper
from reinforge.workflows import SimpleWorkflow, Workflow


def make_task(**rollout: Any) -> Task:
    return Task(
        workflow=SimpleWorkflow,
        reward_fn="math_boxed_reward",
        format_args=FormatConfig(prompt_key="q", response_key="a"),
        rollout_args=GenerationConfig(**rollout),
        raw_task={"q": "What is 2 + 3?", "a": "5"},
        repeat_times=3,
    )


def model() -> ModelWrapper:
    return ModelWrapper(MockEngine(policy="arithmetic", error_rate=0.0))


class Plain(Workflow):
    def run(self) -> list[Experience]:
        return self.model.chat([{"role": "user", "content": "What is 2 + 3?"}], **self.rollout_args)


class OwnReset(SimpleWorkflow):
    """A reset that neither calls the base class nor sets rollout_args."""

    def reset(self, task: Task) -> None:
        self.task = task
        self.format_args = task.format_args
        self.system_prompt = self.reply_prefix = None
        self.task_desc, self.truth = task.task_desc, task.truth


class DictReset(OwnReset):
    def reset(self, task: Task) -> None:
        super().reset(task)
        self.rollout_args = asdict(task.rollout_args)


class ReadOnlyProperty(SimpleWorkflow):
    @property
    def rollout_args(self) -> dict[str, Any]:
        return asdict(self.task.rollout_args)


class ResetBeforeInit(Workflow):
    """Trinity's order: reset (which logs) before the base class's __init__."""

    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        self.reset(task)
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)

    def reset(self, task: Task) -> None:
        self.logger.debug("reset")


def test_a_plain_workflow_reads_the_tasks_rollout_args() -> None:
    task = make_task(temperature=0.5, max_tokens=8)
    workflow = Plain(task=task, model=model())
    assert workflow.rollout_args is task.rollout_args
    assert workflow.rollout_args.n == workflow.rollout_args["n"] == 3
    assert len(workflow.run()) == 3  # **self.rollout_args: n from repeat_times


def test_a_reset_of_its_own_still_has_rollout_args() -> None:
    task = make_task(temperature=0.5)
    workflow = OwnReset(task=task, model=model())
    assert workflow.rollout_args.temperature == 0.5
    other = make_task(temperature=0.25)
    workflow.reset(other)
    assert workflow.rollout_args is other.rollout_args


def test_an_assigned_dict_is_what_the_workflow_spreads_and_repeat_times_sets_its_n() -> None:
    workflow = DictReset(task=make_task(), model=model())
    assert type(workflow.rollout_args) is dict
    workflow.set_repeat_times(2, run_id_base=0)
    assert workflow.rollout_args["n"] == 2
    assert (
        len(workflow.model.chat([{"role": "user", "content": "1 + 1"}], **workflow.rollout_args))
        == 2
    )


def test_a_read_only_property_of_a_subclass_is_respected() -> None:
    task = make_task()
    workflow = ReadOnlyProperty(task=task, model=model())
    workflow.set_repeat_times(3, run_id_base=0)
    assert workflow.rollout_args == asdict(task.rollout_args)
    assert len(workflow.run()) == 3


def test_simple_workflow_changes_a_copy_not_the_tasks_config() -> None:
    task = make_task()
    workflow = SimpleWorkflow(task=task, model=model())
    workflow.set_repeat_times(5, run_id_base=0)
    assert workflow.rollout_args.n == 5 and task.rollout_args.n == 3


def test_the_logger_is_named_for_the_class_and_may_be_replaced() -> None:
    workflow = Plain(task=make_task(), model=model())
    assert isinstance(workflow.logger, logging.Logger)
    assert workflow.logger.name == f"{__name__}.Plain"
    workflow.logger = logging.getLogger("mine")
    assert workflow.logger.name == "mine"
    early = ResetBeforeInit(task=make_task(), model=model())
    assert early.logger.name.endswith("ResetBeforeInit")
