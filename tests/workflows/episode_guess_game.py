"""The guess-the-number example the episode-workflow tests share: an rLLM-style agent,
env and workflow (registered as workflows on import), its variants that hang or fail,
and the helpers that run them. A module of its own so both test files use one copy.

The environment holds a target, the agent guesses, the environment answers
"higher"/"lower" until the guess is right. The mock policy guesses 1, 2, 3, ...
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from reinforge.models import MockEngine, ModelWrapper
from reinforge.workflows import WORKFLOWS
from reinforge.workflows.episode import (
    Action,
    BaseAgent,
    BaseEnv,
    Episode,
    EpisodeWorkflow,
    ModelWrapperEngine,
    Step,
    TerminationEvent,
    TerminationReason,
    Trajectory,
    Workflow,
)

# ---- the example: an rLLM-style agent, env and workflow ---------------------------------


def count_guesses(prompt_text: str) -> int:
    """Assistant turns already in a ChatML prompt (the last one is the generation prompt)."""
    return prompt_text.count("<|im_start|>assistant\n") - 1


def guessing_policy(prompt_text: str, index: int) -> str:
    return str(count_guesses(prompt_text) + 1)


class RecordingEngine(MockEngine):
    """The mock policy, remembering every sampled completion (ids and logprobs)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(replies=guessing_policy, **kwargs)
        self.sampled: list[tuple[list[int], list[int], list[float]]] = []

    def submit(self, prompt_ids, params):
        fut = super().submit(prompt_ids, params)
        for comp in fut.result():
            self.sampled.append((list(prompt_ids), list(comp.token_ids), list(comp.logprobs)))
        return fut


class GuessEnv(BaseEnv):
    def __init__(self, explode_on_turn: int | None = None) -> None:
        self.target = 0
        self.turn = 0
        self.explode_on_turn = explode_on_turn

    def reset(self, task: dict | None = None) -> tuple[Any, dict]:
        self.target = int((task or {}).get("target", 0))
        self.turn = 0
        return "Guess my number (1-10).", {}

    def step(self, action: Any) -> tuple[Any, float, bool, dict]:
        self.turn += 1
        if self.explode_on_turn == self.turn:
            raise RuntimeError(f"the number machine broke on turn {self.turn}")
        match = re.search(r"-?\d+", str(action))
        guess = int(match.group()) if match else -1
        if guess == self.target:
            return "correct", 1.0, True, {"guess": guess}
        return ("higher" if guess < self.target else "lower"), 0.0, False, {"guess": guess}


class GuessAgent(BaseAgent):
    """Stores only the reply text, as many rLLM agents do (tokens are attached later)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._trajectory = Trajectory(name="guesser")
        self.messages: list[dict[str, Any]] = []

    @property
    def chat_completions(self) -> list[dict[str, Any]]:
        return self.messages

    @property
    def trajectory(self) -> Trajectory:
        return self._trajectory

    def update_from_env(self, observation, reward, done, info, **kwargs) -> None:
        if self._trajectory.steps:
            step = self._trajectory.steps[-1]
            step.reward, step.done = reward, done
            step.info.update(info)
        if not done:
            self.messages.append({"role": "user", "content": str(observation)})

    def update_from_model(self, response: str, **kwargs) -> Action:
        self.messages.append({"role": "assistant", "content": response})
        step = Step(chat_completions=self.messages, model_response=response, action=response)
        self._trajectory.steps.append(step)
        return Action(response)


class GuessWorkflow(Workflow):  # rLLM's ``class X(Workflow)``, imports changed only
    def __init__(self, max_turns: int = 4, explode_on_turn: int | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.agent = GuessAgent()
        self.env = GuessEnv(explode_on_turn)
        self.max_turns = max_turns

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, info = self.env.reset(task)
        self.agent.update_from_env(observation, 0.0, False, info)
        for _ in range(self.max_turns):
            output = await self.rollout_engine.get_model_response(
                self.agent.chat_completions, application_id=uid, skip_special_tokens=True
            )
            action = self.agent.update_from_model(output.text)
            observation, reward, done, info = await self.run_in_executor(
                self.env.step, action.action
            )
            self.agent.update_from_env(observation, reward, done, info)
            if done:
                raise TerminationEvent(TerminationReason.ENV_DONE)
        raise TerminationEvent(TerminationReason.MAX_TURNS_EXCEEDED)


WORKFLOWS.register_module("test_guess_number_episode")(GuessWorkflow)


@WORKFLOWS.register_module("test_guess_attached_episode")
class AttachingGuessWorkflow(GuessWorkflow):
    """Same game; the workflow puts each ModelOutput on its step itself."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, _ = self.env.reset(task)
        messages = [{"role": "user", "content": observation}]
        traj = Trajectory(name="guesser")
        for _ in range(self.max_turns):
            output = await self.rollout_engine.get_model_response(messages)
            step = Step.from_model_output(output, messages, action=output.content)
            traj.steps.append(step)
            observation, step.reward, step.done, _ = self.env.step(step.action)
            messages = [*step.chat_completions, {"role": "user", "content": observation}]
            if step.done:
                break
        self.commit(trajectory=traj)
        reason = TerminationReason.ENV_DONE if traj.steps[-1].done else TerminationReason.UNKNOWN
        raise TerminationEvent(reason)


@WORKFLOWS.register_module("test_hanging_episode")
class HangsOnOddRuns(GuessWorkflow):
    """Plays one turn, then hangs forever on odd rollouts."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, info = self.env.reset(task)
        self.agent.update_from_env(observation, 0.0, False, info)
        output = await self.rollout_engine.get_model_response(self.agent.chat_completions)
        action = self.agent.update_from_model(output.text)
        self.agent.update_from_env(*self.env.step(action.action))
        if int(uid.rpartition(":")[2]) % 2:
            await asyncio.Event().wait()
        raise TerminationEvent(TerminationReason.ENV_DONE)


@WORKFLOWS.register_module("test_always_hanging_episode")
class AlwaysHangs(GuessWorkflow):
    """Plays one turn, then hangs on every rollout: each episode times out."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        observation, info = self.env.reset(task)
        self.agent.update_from_env(observation, 0.0, False, info)
        output = await self.rollout_engine.get_model_response(self.agent.chat_completions)
        self.agent.update_from_model(output.text)
        await asyncio.Event().wait()


@WORKFLOWS.register_module("test_hanging_before_any_call_episode")
class HangsBeforeAnyCall(GuessWorkflow):
    """Times out before its first model call: the episode has no step with tokens."""

    async def run(self, task: dict, uid: str, **kwargs) -> Episode | None:
        self.reset(task=task, uid=uid)
        await asyncio.Event().wait()


def make_model(**kwargs: Any) -> ModelWrapper:
    return ModelWrapper(RecordingEngine(**kwargs))


def run_episode(workflow: EpisodeWorkflow, task: dict, uid: str = "0:0") -> Episode:
    return asyncio.run(workflow.run_with_termination_handling(task, uid))


def guess_workflow(model: ModelWrapper | None = None, **kwargs: Any) -> GuessWorkflow:
    return GuessWorkflow(rollout_engine=ModelWrapperEngine(model or make_model()), **kwargs)
