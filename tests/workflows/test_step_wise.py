"""StepWiseRewardWorkflow / RewardPropagationWorkflow and their async twins, on the mock engine."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from reinforge.core import Experience, Task
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine
from reinforge.workflows import (
    AsyncRewardPropagationWorkflow,
    AsyncStepWiseRewardWorkflow,
    RewardPropagationWorkflow,
    StepWiseRewardWorkflow,
)
from reinforge.workflows.step_wise import HistoryDisabledError

USER = [{"role": "user", "content": "move"}]


def _model(history: bool = True) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies=["left", "right"]), enable_history=history)


def _task(steps: int = 3, stop_at: int | None = None) -> Task:
    return Task(workflow_args={"steps": steps, "stop_at": stop_at})


class Walker(StepWiseRewardWorkflow):
    """Step k makes k + 1 model calls; reward of step k is k / 10."""

    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        super().__init__(
            task=task, model=model, auxiliary_models=auxiliary_models, use_openai_client=False
        )
        self.seen: list[tuple[int, int]] = []

    @property
    def max_step_num(self) -> int:
        return self.task.workflow_args["steps"]

    def step(self, step_num: int) -> bool:
        for _ in range(step_num + 1):
            self.model.chat(USER)
        return step_num != self.task.workflow_args["stop_at"]

    def reward(self, exps: list[Experience], step_num: int) -> float:
        self.seen.append((step_num, len(exps)))
        return step_num / 10


class Propagator(RewardPropagationWorkflow):
    """One call per step; the run's reward is the number of experiences."""

    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        super().__init__(
            task=task, model=model, auxiliary_models=auxiliary_models, use_openai_client=False
        )

    max_step_num = 4  # a plain attribute satisfies the abstract property too

    def step(self, step_num: int) -> bool:
        self.model.chat(USER)
        return step_num < 1  # stops after step 1

    def reward(self, exps: list[Experience]) -> float:
        return float(len(exps))


class AsyncWalker(AsyncStepWiseRewardWorkflow):
    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        super().__init__(
            task=task, model=model, auxiliary_models=auxiliary_models, use_openai_client=False
        )

    max_step_num = 2

    async def step(self, step_num: int) -> bool:
        await self.model.chat_async(USER)
        return True

    def reward(self, exps: list[Experience], step_num: int) -> float:
        return 1.0 + step_num


class AsyncPropagator(AsyncRewardPropagationWorkflow):
    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        super().__init__(
            task=task, model=model, auxiliary_models=auxiliary_models, use_openai_client=False
        )

    max_step_num = 3

    async def step(self, step_num: int) -> bool:
        await self.model.chat_async(USER)
        return True

    def reward(self, exps: list[Experience]) -> float:
        return 0.5


def test_step_wise_rewards_each_step_and_numbers_steps() -> None:
    wf = Walker(task=_task(steps=3), model=_model())
    exps = wf.run()
    assert wf.seen == [(0, 1), (1, 2), (2, 3)]
    assert [e.eid.step for e in exps] == [0, 1, 1, 2, 2, 2]
    assert [e.reward for e in exps] == [0.0, 0.1, 0.1, 0.2, 0.2, 0.2]
    assert all(e.metrics["actual_env_steps"] == 3.0 for e in exps)
    assert all(e.response_text in ("left", "right") for e in exps)
    assert wf.model.extract_experience_from_history() == []  # everything was taken
    assert not Walker.can_repeat and not Walker.is_async


def test_step_wise_stops_when_step_returns_false() -> None:
    exps = Walker(task=_task(steps=5, stop_at=1), model=_model()).run()
    assert [e.eid.step for e in exps] == [0, 1, 1]
    assert all(e.metrics["actual_env_steps"] == 2.0 for e in exps)


def test_reward_propagation_gives_the_outcome_to_every_step() -> None:
    exps = Propagator(task=_task(), model=_model()).run()
    assert [e.eid.step for e in exps] == [0, 1]
    assert [e.reward for e in exps] == [2.0, 2.0]
    assert [e.metrics["actual_env_steps"] for e in exps] == [2.0, 2.0]


def test_async_twins() -> None:
    exps = asyncio.run(AsyncWalker(task=_task(), model=_model()).run_async())
    assert [(e.eid.step, e.reward) for e in exps] == [(0, 1.0), (1, 2.0)]
    assert AsyncWalker.is_async and AsyncPropagator.is_async
    exps = asyncio.run(AsyncPropagator(task=_task(), model=_model()).run_async())
    assert [(e.eid.step, e.reward) for e in exps] == [(0, 0.5), (1, 0.5), (2, 0.5)]
    assert all(e.metrics["actual_env_steps"] == 3.0 for e in exps)


@pytest.mark.parametrize("cls", [Walker, Propagator, AsyncWalker, AsyncPropagator])
def test_history_off_names_the_config_key(cls: type) -> None:
    with pytest.raises(HistoryDisabledError, match=r"explorer\.rollout_model\.enable_history"):
        cls(task=_task(), model=_model(history=False))
    assert issubclass(HistoryDisabledError, ValueError)  # not a bare assert


def test_missing_abstract_methods_refuse_to_instantiate() -> None:
    class NoReward(StepWiseRewardWorkflow):
        max_step_num = 1

        def step(self, step_num: int) -> bool:
            return False

    with pytest.raises(TypeError, match="reward"):
        NoReward(task=_task(), model=_model(), use_openai_client=False)


def test_calls_before_the_run_do_not_leak_into_it() -> None:
    model = _model()
    model.chat(USER)  # e.g. left over from a failed attempt on this runner's model
    exps = Walker(task=_task(steps=1), model=model).run()
    assert len(exps) == 1


def test_a_step_that_raises_fails_the_run_and_the_next_run_starts_clean() -> None:
    class Flaky(Walker):
        def step(self, step_num: int) -> bool:
            super().step(step_num)
            if step_num == 1:
                raise RuntimeError("env crashed")
            return True

    model = _model()
    with pytest.raises(RuntimeError, match="env crashed"):
        Flaky(task=_task(steps=3), model=model).run()
    exps = Walker(task=_task(steps=1), model=model).run()
    assert [e.eid.step for e in exps] == [0]


def test_openai_client_requires_a_model_that_offers_one() -> None:
    class Bare:
        enable_history = True

    class DefaultClient(StepWiseRewardWorkflow):  # use_openai_client defaults to True
        max_step_num = 1

        def step(self, step_num: int) -> bool:
            return False

        def reward(self, exps: list[Experience], step_num: int) -> float:
            return 0.0

    with pytest.raises(TypeError, match="use_openai_client=False"):
        DefaultClient(task=_task(), model=Bare())


def test_step_wise_through_the_openai_client() -> None:
    class ClientAgent(StepWiseRewardWorkflow):
        max_step_num = 2

        def step(self, step_num: int) -> bool:
            reply = self.client.chat.completions.create(
                model=self.model.model_name, messages=USER, max_tokens=8
            )
            self.replies.append(reply.choices[0].message.content)
            return True

        def reward(self, exps: list[Experience], step_num: int) -> float:
            return float(step_num)

    wf = ClientAgent(task=_task(), model=_model())
    wf.replies = []
    exps = wf.run()
    assert wf.replies == ["left", "left"]
    assert [(e.eid.step, e.reward, e.response_text) for e in exps] == [
        (0, 0.0, "left"),
        (1, 1.0, "left"),
    ]
    assert all(len(e.logprobs) == e.response_length for e in exps)


def test_async_step_wise_through_the_async_openai_client() -> None:
    class AsyncClientAgent(AsyncRewardPropagationWorkflow):
        max_step_num = 2

        async def step(self, step_num: int) -> bool:
            await self.client.chat.completions.create(
                model=self.model.model_name, messages=USER, max_tokens=8
            )
            return True

        def reward(self, exps: list[Experience]) -> float:
            return 1.0

    wf = AsyncClientAgent(task=_task(), model=_model())
    exps = asyncio.run(wf.run_async())
    assert [(e.eid.step, e.reward) for e in exps] == [(0, 1.0), (1, 1.0)]
