"""Reward functions written for Trinity-RFT 0.1.x under the simple workflows.

0.1.x reward functions returned a float unless the caller passed ``return_dict=True``;
0.1.x's ``SimpleWorkflow`` passed ``return_dict=task.is_eval``, summed a dict into the
reward and recorded its entries as metrics, and took a float as the reward itself. From
0.2.0 reward functions return a dict. Both shapes must score a task.
"""

from __future__ import annotations

import re
from typing import Optional

from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.config import FormatConfig, GenerationConfig
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.rewards.reward_fn import RewardFn
from reinforge.trinity.common.workflows import SimpleWorkflow, Task


class V01MathReward(RewardFn):
    """Written as Trinity-RFT 0.1.x wrote ``MathRewardFn``: accuracy plus a format bonus,
    a float unless ``return_dict``."""

    def __init__(self):
        pass

    def __call__(  # type: ignore[override]
        self,
        response: str,
        prompt: Optional[str] = None,  # noqa: UP045 (0.1.x's spelling)
        truth: Optional[str] = None,  # noqa: UP045
        return_dict: Optional[bool] = False,  # noqa: UP045
    ):
        found = re.search(r"<answer>(.*?)</answer>", response)
        accuracy = 1.0 if found and found.group(1).strip() == truth else 0.0
        format_score = 0.1 if re.match(r".*?<think>.*?</think>\s*<answer>", response) else -0.1
        if return_dict:
            return {"accuracy": accuracy, "format_score": format_score}
        return accuracy + format_score


class FloatOnly(RewardFn):
    """The narrowest 0.1.x shape: a float, no ``return_dict``."""

    def __init__(self):
        pass

    def __call__(self, response, prompt=None, truth=None):  # type: ignore[override]
        return float(truth in response)


def _task(reward_fn: type, is_eval: bool = False) -> Task:
    return Task(
        workflow=SimpleWorkflow,
        repeat_times=2,
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(temperature=1.0),
        reward_fn=reward_fn,
        raw_task={"question": "2+2?", "answer": "4"},
        is_eval=is_eval,
    )


def _model(reply: str) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies=[reply]))


def test_a_float_reward_is_the_reward() -> None:
    exps = _task(V01MathReward).to_workflow(_model("<think>2+2</think> <answer>4</answer>")).run()
    assert [round(e.reward, 6) for e in exps] == [1.1, 1.1]
    assert "accuracy" not in exps[0].metrics  # a float has no components, as in 0.1.x
    wrong = _task(V01MathReward).to_workflow(_model("<answer>5</answer>")).run()
    assert [round(e.reward, 6) for e in wrong] == [-0.1, -0.1]
    plain = _task(FloatOnly).to_workflow(_model("it is 4")).run()
    assert [e.reward for e in plain] == [1.0, 1.0]


def test_an_eval_task_asks_for_the_dict_and_records_it() -> None:
    exps = (
        _task(V01MathReward, is_eval=True)
        .to_workflow(_model("<think>2+2</think> <answer>4</answer>"))
        .run()
    )
    assert round(exps[0].reward, 6) == 1.1
    assert exps[0].metrics["accuracy"] == 1.0 and exps[0].metrics["format_score"] == 0.1
