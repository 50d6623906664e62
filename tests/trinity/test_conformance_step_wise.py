"""``trinity.common.workflows.step_wise_workflow`` used the way Trinity-RFT agent code
uses it: ``StepWiseRewardWorkflow`` (a reward per step) and
``RewardPropagationWorkflow`` (one outcome reward given to every step).

What such code relies on: the keyword-only constructor (``task``, ``model``,
``auxiliary_models``, ``use_openai_client``), the history check naming
``explorer.rollout_model.enable_history`` (reinforge raises a ``ValueError`` where
Trinity asserts), ``self.client`` (an OpenAI client of the rollout model, or None),
the abstract ``step`` / ``reward`` / ``max_step_num``, ``repeatable`` being False,
``exp.eid.step`` set to the step, and the ``actual_env_steps`` metric.
"""

from __future__ import annotations

import warnings

import pytest

from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.experience import Experience
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.workflows.step_wise_workflow import (
    RewardPropagationWorkflow,
    StepWiseRewardWorkflow,
)
from reinforge.trinity.common.workflows.workflow import Task

USER = [{"role": "user", "content": "next move?"}]


def _model(enable_history: bool = True) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies=["north"]), enable_history=enable_history)


class Maze(StepWiseRewardWorkflow):
    """An agent written against the OpenAI client; step k scores k, stops after 3 steps."""

    def __init__(self, *, task: Task, model: ModelWrapper, auxiliary_models=None):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.rewarded: list[tuple[int, int]] = []

    @property
    def max_step_num(self) -> int:
        return self.task.workflow_args.get("max_steps", 5)

    def step(self, step_num: int) -> bool:
        reply = self.client.chat.completions.create(
            model=self.client.model_path, messages=USER, max_tokens=8
        )
        assert reply.choices[0].message.content == "north"
        return step_num < 2

    def reward(self, exps: list[Experience], step_num: int) -> float:
        self.rewarded.append((step_num, len(exps)))
        return float(step_num)


class Outcome(RewardPropagationWorkflow):
    """Calls the model directly (no client); the outcome is the number of calls made."""

    def __init__(self, *, task: Task, model: ModelWrapper, auxiliary_models=None):
        super().__init__(
            task=task, model=model, auxiliary_models=auxiliary_models, use_openai_client=False
        )

    @property
    def max_step_num(self) -> int:
        return 2

    def step(self, step_num: int) -> bool:
        self.model.chat(USER)
        self.model.chat(USER)
        return True

    def reward(self, exps: list[Experience]) -> float:
        return float(len(exps))


def test_step_wise_rewards_each_step_and_sets_eid_step() -> None:
    wf = Maze(task=Task(workflow_args={"max_steps": 5}), model=_model())
    assert wf.client is not None
    exps = wf.run()
    assert wf.rewarded == [(0, 1), (1, 1), (2, 1)]  # reward() sees that step's experiences
    assert [(e.eid.step, e.reward) for e in exps] == [(0, 0.0), (1, 1.0), (2, 2.0)]
    assert all(e.response_text == "north" for e in exps)


def test_step_wise_stops_at_max_step_num() -> None:
    exps = Maze(task=Task(workflow_args={"max_steps": 2}), model=_model()).run()
    assert [e.eid.step for e in exps] == [0, 1]


def test_reward_propagation_gives_every_step_the_outcome_and_counts_env_steps() -> None:
    wf = Outcome(task=Task(), model=_model())
    assert wf.client is None  # use_openai_client=False
    exps = wf.run()
    assert [e.eid.step for e in exps] == [0, 0, 1, 1]
    assert {e.reward for e in exps} == {4.0}
    assert {e.metrics["actual_env_steps"] for e in exps} == {2}


@pytest.mark.parametrize("cls", [Maze, Outcome])
def test_history_off_is_refused_with_trinitys_config_key(cls) -> None:
    with pytest.raises(ValueError, match=r"explorer\.rollout_model\.enable_history"):
        cls(task=Task(), model=_model(enable_history=False))


@pytest.mark.parametrize("cls", [Maze, Outcome])
def test_step_wise_workflows_are_not_repeatable(cls) -> None:
    wf = cls(task=Task(), model=_model())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert wf.repeatable is False
    assert cls.can_repeat is False


def test_abstract_methods_must_be_written() -> None:
    class NoMaxSteps(RewardPropagationWorkflow):
        def step(self, step_num: int) -> bool:
            return False

        def reward(self, exps: list[Experience]) -> float:
            return 0.0

    with pytest.raises(TypeError, match="max_step_num"):
        NoMaxSteps(task=Task(), model=_model(), use_openai_client=False)
