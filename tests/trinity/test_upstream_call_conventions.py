"""Trinity-RFT's call conventions, exercised the way Trinity-RFT code relies on them.

* A ``Task`` built in Python with an explicit ``rollout_args.n`` keeps it: the guide's
  workflow samples ``n=self.rollout_args.n`` replies even where ``repeat_times``
  differs; only an ``n`` left unset follows ``repeat_times``.
* Reward functions are called as Trinity calls them, by their own signature: a reward
  class written like Trinity's ``CountDownRewardFn`` (no ``**kwargs``) gets no
  ``raw_task`` keyword; one that names ``raw_task`` or takes ``**kwargs`` still does.
* ``Workflow.auxiliary_model_wrappers``: the auxiliary models as ``ModelWrapper``s,
  as Trinity's on-policy distillation workflows take the teacher, and
  ``logprobs(tokens, temperature=...)`` / ``logprobs_async`` on them.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any, Optional

import pytest
import torch

from reinforge.models.auxiliary import AuxiliaryModelConfig, build_auxiliary_model
from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.config import FormatConfig, GenerationConfig
from reinforge.trinity.common.experience import Experience
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.rewards.reward_fn import RewardFn
from reinforge.trinity.common.workflows import SimpleWorkflow, Task, Workflow

# ---- rollout_args.n and repeat_times --------------------------------------------------


class CapitalQuiz(Workflow):
    """The workflow guide's example: ``n`` and ``temperature`` from ``rollout_args``."""

    def __init__(self, task: Task, model: ModelWrapper, auxiliary_models: list) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.rollout_args = task.rollout_args
        self.country = task.raw_task.get(task.format_args.prompt_key)
        self.city = task.raw_task.get(task.format_args.response_key)

    def run(self) -> list[Experience]:
        messages = [{"role": "user", "content": f"Capital of {self.country}?"}]
        replies = self.model.chat(
            messages, n=self.rollout_args.n, temperature=self.rollout_args.temperature
        )
        return [
            Experience(
                tokens=r.tokens,
                prompt_length=r.prompt_length,
                reward=float(r.response_text.strip() == self.city),
                logprobs=r.logprobs,
            )
            for r in replies
        ]


def _quiz(**kw: Any) -> Task:
    return Task(
        workflow=CapitalQuiz,
        format_args=FormatConfig(prompt_key="country", response_key="city"),
        raw_task={"country": "France", "city": "Paris"},
        **kw,
    )


def _paris() -> ModelWrapper:
    return ModelWrapper(MockEngine(replies={"France": "Paris"}))


def test_an_explicit_n_wins_over_repeat_times() -> None:
    task = _quiz(repeat_times=1, rollout_args=GenerationConfig(n=2))
    assert task.rollout_args.n == 2 and task.repeat_times == 1
    exps = task.to_workflow(_paris()).run()
    assert len(exps) == 2 and [e.reward for e in exps] == [1.0, 1.0]
    # an explicit 1 is explicit too, as in Trinity-RFT
    assert (
        len(_quiz(repeat_times=3, rollout_args=GenerationConfig(n=1)).to_workflow(_paris()).run())
        == 1
    )


def test_an_unset_n_follows_repeat_times() -> None:
    shared = GenerationConfig(temperature=1.0)
    task = _quiz(repeat_times=3, rollout_args=shared)
    assert task.rollout_args.n == 3 and len(task.to_workflow(_paris()).run()) == 3
    assert shared.n == 1 and not shared.n_is_set()  # the caller's config is untouched
    assert _quiz(rollout_args=GenerationConfig(n=4)).repeat_times == 4  # and the other way
    assigned = GenerationConfig()
    assigned.n = 1
    assert assigned.n_is_set()  # assigning counts as setting


def test_the_explorer_still_runs_repeat_times_rollouts() -> None:
    """``for_run`` (what the explorer hands each run) sets n from repeat_times."""
    task = _quiz(repeat_times=3, rollout_args=GenerationConfig(n=2))
    assert len(task.for_run(task.repeat_times).to_workflow(_paris()).run()) == 3


# ---- reward functions by their own signature -------------------------------------------


class TrinityCountDownRewardFn(RewardFn):
    """Written as Trinity-RFT writes ``CountDownRewardFn``: no ``**kwargs``."""

    def __init__(self):
        pass

    def __call__(  # type: ignore[override]
        self,
        response: str,
        prompt: Optional[str] = None,  # noqa: UP045 (Trinity's spelling)
        truth: Optional[str] = None,  # noqa: UP045
    ) -> dict[str, float]:
        truth = json.loads(truth)  # type: ignore[arg-type]
        found = re.findall(r"<answer>(.*?)</answer>", response)
        if not found:
            return {"score": 0.0}
        try:
            value = eval(found[-1], {"__builtins__": {}})  # as TinyZero does
        except Exception:
            return {"score": 0.1}
        return {"score": 1.0 if abs(value - truth["target"]) < 1e-5 else 0.1}


class ResponseTruthOnly(RewardFn):
    """The narrowest signature Trinity's SimpleWorkflow call fits."""

    def __init__(self):
        pass

    def __call__(self, response, truth=None):  # type: ignore[override]
        return {"exact": float(response.strip() == truth)}


class WantsRawTask(RewardFn):
    def __init__(self):
        self.seen: list[Any] = []

    def __call__(self, response, truth=None, raw_task=None):  # type: ignore[override]
        self.seen.append(raw_task)
        return {"row_seen": float(raw_task is not None)}


def _countdown_task(reward_fn: type, reply_truth: dict, repeat: int = 2) -> Task:
    return Task(
        workflow=SimpleWorkflow,
        repeat_times=repeat,
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(temperature=1.0),
        reward_fn=reward_fn,
        raw_task={"question": "Make 13 from 3, 5, 2", "answer": json.dumps(reply_truth)},
    )


def test_a_trinity_reward_class_without_kwargs_is_called_as_trinity_calls_it() -> None:
    model = ModelWrapper(MockEngine(replies=["<answer>3 * 5 - 2</answer>"]))
    truth = {"target": 13, "numbers": [3, 5, 2]}
    exps = _countdown_task(TrinityCountDownRewardFn, truth).to_workflow(model).run()
    assert [e.reward for e in exps] == [1.0, 1.0]
    assert exps[0].metrics["score"] == 1.0
    wrong = _countdown_task(TrinityCountDownRewardFn, {**truth, "target": 14}).to_workflow(model)
    assert [e.reward for e in wrong.run()] == [0.1, 0.1]
    narrow = _countdown_task(ResponseTruthOnly, truth).to_workflow(model).run()
    assert [e.reward for e in narrow] == [0.0, 0.0]  # called with response and truth only


def test_a_reward_that_names_raw_task_or_takes_kwargs_still_gets_it() -> None:
    from reinforge.rewards import call_reward_fn

    model = ModelWrapper(MockEngine(replies=["x"]))
    workflow = _countdown_task(WantsRawTask, {"target": 1}).to_workflow(model)
    assert [e.reward for e in workflow.run()] == [1.0, 1.0]
    assert workflow.reward_fn.seen[0]["question"].startswith("Make 13")

    def anything(response, **kwargs):
        return kwargs

    got = call_reward_fn(anything, response="r", optional={"raw_task": {"a": 1}, "prompt": "p"})
    assert got == {"raw_task": {"a": 1}, "prompt": "p"}


# ---- auxiliary models as ModelWrappers, logprobs at a temperature -----------------------


class TeacherScores(Workflow):
    """Trinity's on-policy distillation pattern: the teacher from
    ``auxiliary_model_wrappers``, its log-probs of the student's reply at a temperature."""

    is_async = True

    def __init__(self, *, task: Task, model: ModelWrapper, auxiliary_models=None) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        assert self.auxiliary_model_wrappers is not None and len(self.auxiliary_model_wrappers) >= 1
        self.teacher_model = self.auxiliary_model_wrappers[0]
        self.temperature = task.workflow_args.get("temperature", 1.0)

    async def run_async(self) -> list[Experience]:
        messages = [{"role": "user", "content": self.task.raw_task["question"]}]
        responses = await self.model.chat_async(messages, n=1)
        for response in responses:
            teacher = await self.teacher_model.logprobs_async(
                tokens=response.tokens.tolist(), temperature=self.temperature
            )
            response.teacher_logprobs = teacher[response.prompt_length - 1 :]
            assert len(response.teacher_logprobs) == len(response.logprobs)
        return responses


def _teacher_client() -> Any:
    config = AuxiliaryModelConfig(name="teacher", engine="mock", mock={"replies": ["4"]})
    return build_auxiliary_model(config).client


def test_auxiliary_model_wrappers_are_model_wrappers_of_the_auxiliary_models() -> None:
    client = _teacher_client()
    task = Task(workflow=TeacherScores, raw_task={"question": "2 + 2?"})
    workflow = task.to_workflow(ModelWrapper(MockEngine(replies=["4"])), [client])
    assert workflow.auxiliary_models == [client]  # still the OpenAI clients
    (teacher,) = workflow.auxiliary_model_wrappers
    assert isinstance(teacher, ModelWrapper) and teacher is client.auxiliary.wrapper
    assert teacher.chat([{"role": "user", "content": "2 + 2?"}])[0].response_text == "4"
    (exp,) = asyncio.run(workflow.run_async())
    expected = teacher.logprobs(exp.tokens)[exp.prompt_length - 1 :]
    assert torch.equal(exp.teacher_logprobs, expected)


def test_model_wrappers_given_as_auxiliary_models_become_clients_and_wrappers() -> None:
    """Newer Trinity-RFT hands workflows ModelWrappers and derives the clients."""
    teacher = ModelWrapper(MockEngine(replies=["4"]))
    workflow = Task(workflow=TeacherScores, raw_task={"question": "?"}).to_workflow(
        ModelWrapper(MockEngine()), [teacher]
    )
    assert workflow.auxiliary_model_wrappers == [teacher]
    (client,) = workflow.auxiliary_models
    reply = client.chat.completions.create(
        model=client.model_path, messages=[{"role": "user", "content": "?"}]
    )
    assert reply.choices[0].message.content == "4"
    with pytest.raises(TypeError, match="no ModelWrapper"):
        Workflow(task=Task(), model=None, auxiliary_models=[object()]).auxiliary_model_wrappers  # noqa: B018


def test_logprobs_take_trinitys_temperature_keyword() -> None:
    model = ModelWrapper(MockEngine())
    tokens = model.chat([{"role": "user", "content": "hi"}])[0].tokens
    plain = model.logprobs(tokens)
    assert len(plain) == len(tokens) - 1
    assert torch.equal(model.logprobs(tokens, temperature=None), plain)
    assert torch.equal(model.logprobs(tokens, temperature=1.0), plain)
    hot = asyncio.run(model.logprobs_async(tokens=tokens, temperature=2.0))
    assert torch.allclose(hot, plain / 2.0)  # the mock's made-up values, rescaled
    with pytest.raises(ValueError, match="temperature must be > 0"):
        model.logprobs(tokens, temperature=0.0)


def test_a_server_engine_refuses_another_temperature_clearly() -> None:
    class ServerLike(MockEngine):
        scores_with_temperature = False

    model = ModelWrapper(ServerLike())
    assert len(model.logprobs([1, 2, 3], temperature=1.0)) == 2
    with pytest.raises(NotImplementedError, match="temperature 1 only"):
        model.logprobs([1, 2, 3], temperature=0.5)


def test_the_hf_engine_scores_under_temperature_scaled_logits(tiny_model_and_tokenizer) -> None:
    from reinforge.models.engines.hf import HFEngine

    model_, tokenizer = tiny_model_and_tokenizer
    tokens = [1, 5, 9, 14, 3, 7]
    ids = torch.tensor([tokens])
    with torch.no_grad():
        logits = model_(input_ids=ids, use_cache=False).logits[0, :-1].float()
    with HFEngine(model=model_, tokenizer=tokenizer, device="cpu", seed=0) as engine:
        model = ModelWrapper(engine)
        for temperature in (1.0, 0.7):
            want = torch.log_softmax(logits / temperature, -1).gather(-1, ids[0, 1:, None])[:, 0]
            got = model.logprobs(tokens, temperature=temperature)
            assert torch.allclose(got, want, atol=1e-5), temperature
        cold = float(model.logprobs(tokens, temperature=0.7).sum())
        assert not math.isclose(cold, float(model.logprobs(tokens).sum()))
