"""MultiTurnWorkflow as Trinity-RFT workflows use it: the model called directly
(``self.model.chat_async``), the messages assembled by hand, then
``process_messages_to_experience(_async)`` with ``truncate_status=``."""

from __future__ import annotations

import asyncio
import re
from dataclasses import asdict
from typing import Any

import pytest

from reinforge.core import Experience, Task
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.workflows.workflow import MultiTurnWorkflow


def _guesses(prompt: str, index: int) -> str:
    """The mock policy: 5, then 7, then 6, then 6 again."""
    turn = prompt.count("<|im_start|>assistant") - 1
    return f"My guess: ```{['5', '7', '6', '6'][min(turn, 3)]}```"


class GuessTheNumber(MultiTurnWorkflow):
    """A Trinity-style environment loop: guess, hear "higher"/"lower", guess again."""

    is_async = True

    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.secret = int(task.raw_task["secret"])
        self.max_steps = task.workflow_args.get("max_steps", 4)
        self.max_response_tokens = task.workflow_args.get("max_response_tokens", 10240)

    @property
    def rollout_args(self) -> dict[str, Any]:
        return asdict(self.task.rollout_args)

    async def run_async(self) -> list[Experience]:
        messages = [
            {"role": "system", "content": "Guess the number between 1 and 9."},
            {"role": "user", "content": "Your first guess?"},
        ]
        steps, solved, truncate_status = 0, False, None
        init_len = None
        for _ in range(self.max_steps):
            length = await self.model.get_message_token_len(messages)
            init_len = length if init_len is None else init_len
            max_tokens = self.max_response_tokens - (length - init_len)
            if max_tokens <= 0:
                messages = messages[:-1]
                truncate_status = "response_truncated"
                break
            rollout_args = self.rollout_args.copy()
            rollout_args["n"] = 1
            rollout_args["max_tokens"] = max_tokens
            responses = await self.model.chat_async(messages, **rollout_args)
            text = responses[0].response_text
            messages.append({"role": "assistant", "content": text})
            steps += 1
            found = re.findall(r"```(\d)```", text)
            guess = int(found[-1]) if found else 0
            if guess == self.secret:
                solved = True
                break
            hint = "higher" if guess < self.secret else "lower"
            messages.append({"role": "user", "content": f"{guess} is wrong, go {hint}."})
        return [
            await self.process_messages_to_experience_async(
                messages=messages,
                reward=1.0 if solved else 0.0,
                info={"env_steps": steps, "success": 1 if solved else 0},
                truncate_status=truncate_status,
            )
        ]


def _run(secret: int, **workflow_args: Any) -> Experience:
    model = ModelWrapper(MockEngine(replies=_guesses))
    task = Task(raw_task={"secret": secret}, workflow_args=workflow_args)
    (exp,) = asyncio.run(GuessTheNumber(task=task, model=model).run_async())
    return exp


def test_direct_chat_calls_give_one_retokenized_experience() -> None:
    exp = _run(6)
    assert exp.info["retokenized"] is True
    assert exp.reward == 1.0 and exp.metrics == {"env_steps": 3.0, "success": 1.0}
    assert exp.truncate_status is None
    assert exp.response_text == "My guess: ```5```\nMy guess: ```7```\nMy guess: ```6```"
    replies = exp.response_tokens[exp.action_mask].tolist()
    assert MockEngine().tokenizer.decode(replies).count("My guess") == 3
    assert not bool(exp.action_mask.all())  # the hints are masked out


def test_a_failed_episode_scores_zero() -> None:
    exp = _run(9, max_steps=2)
    assert exp.reward == 0.0 and exp.metrics["success"] == 0.0
    assert exp.messages[-1]["content"] == "7 is wrong, go higher."


def test_truncate_status_marks_an_episode_out_of_budget() -> None:
    # the first reply and hint take more than the budget: the second turn is not asked
    exp = _run(6, max_response_tokens=30)
    assert exp.truncate_status == "response_truncated"
    assert exp.metrics["env_steps"] == 1.0
    assert exp.messages[-1]["role"] == "assistant"


def test_a_conversation_cut_at_the_context_length_scores_zero() -> None:
    class LongTalk(MultiTurnWorkflow):
        def run(self) -> list[Experience]:
            messages = [{"role": "user", "content": "talk"}]
            reply = self.model.chat(messages, n=1)[0].response_text
            messages += [{"role": "assistant", "content": reply * 20}]
            return [self.process_messages_to_experience(messages, 1.0, {})]

    model = ModelWrapper(MockEngine(default_reply="blah " * 4, max_model_len=200))
    (exp,) = LongTalk(task=Task(), model=model).run()
    assert exp.truncate_status == "response_truncated" and exp.reward == 0.0


def test_recorded_turns_stay_token_exact_and_take_the_truncate_status() -> None:
    class Recorded(MultiTurnWorkflow):
        def run(self) -> list[Experience]:
            messages = [{"role": "user", "content": "go"}]
            reply = self.get_model_response_text(messages)
            messages.append({"role": "assistant", "content": reply})
            return [
                self.process_messages_to_experience(
                    messages, 0.5, {"steps": 1}, truncate_status="response_truncated"
                )
            ]

    model = ModelWrapper(MockEngine(default_reply="fine"))
    (exp,) = Recorded(task=Task(), model=model).run()
    assert "retokenized" not in exp.info and exp.info["turns"] == 1
    assert exp.truncate_status == "response_truncated" and exp.reward == 0.5


def test_history_on_does_not_change_the_direct_path() -> None:
    """With ``enable_history`` the wrapper records the calls for the step-wise
    workflows; a multi-turn workflow that called the model itself still re-tokenizes."""
    model = ModelWrapper(MockEngine(replies=_guesses), enable_history=True)
    task = Task(raw_task={"secret": 5})
    (exp,) = asyncio.run(GuessTheNumber(task=task, model=model).run_async())
    assert exp.info["retokenized"] is True and exp.reward == 1.0
    assert len(model.extract_experience_from_history()) == 1


def test_no_assistant_turn_is_a_clear_error() -> None:
    wf = GuessTheNumber(task=Task(raw_task={"secret": 1}), model=ModelWrapper(MockEngine()))
    with pytest.raises(ValueError, match="no assistant message"):
        wf.process_messages_to_experience([{"role": "user", "content": "hi"}], 1.0)
