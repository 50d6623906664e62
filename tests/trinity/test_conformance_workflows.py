"""``trinity.common.workflows`` used the way Trinity-RFT code uses it: ``Task``,
``Workflow``, and each built-in workflow class reinforge has, imported from the
``reinforge.trinity.common.workflows`` mirror, built as Trinity builds them
(``task.to_workflow(model, auxiliary_models)`` or the keyword constructor) and run
once on the mock engine.

Built-in classes of Trinity-RFT that reinforge does not have yet (so migrated code
naming them fails at import; docs/migrating.md lists them too):

* ``AlfworldWorkflow``, ``StepWiseAlfworldWorkflow``, ``RAFTAlfworldWorkflow``,
  ``RAFTReflectAlfworldWorkflow`` (ALFWorld, issue 21);
* ``AgentScopeV0ReactMathWorkflow``, ``AgentScopeReactMathWorkflow``,
  ``AgentScopeV1ReactSearchWorkflow``, ``AgentScopeReActWorkflow``,
  ``AgentScopeWorkflowAdapter`` (AgentScope, issue 22).

``SimpleMMWorkflow`` / ``AsyncSimpleMMWorkflow`` need a vision-language model:
``tests/workflows/test_multimodal_workflow.py`` and
``tests/examples/test_multimodal_trains.py`` cover them.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from dataclasses import asdict
from typing import Any

import pytest

from reinforge.models.auxiliary import AuxiliaryModelConfig, build_auxiliary_model
from reinforge.models.engines.mock import MockEngine
from reinforge.trinity.common.config import FormatConfig, GenerationConfig
from reinforge.trinity.common.experience import Experience
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.rewards import MathBoxedRewardFn
from reinforge.trinity.common.workflows import (
    WORKFLOWS,
    AsyncMathBoxedWorkflow,
    AsyncMathEvalWorkflow,
    AsyncMathRMWorkflow,
    AsyncMathRULERWorkflow,
    AsyncMathWorkflow,
    AsyncSimpleWorkflow,
    EmailSearchWorkflow,
    FrozenLakeWorkflow,
    MathBoxedWorkflow,
    MathEvalWorkflow,
    MathRMWorkflow,
    MathRULERWorkflow,
    MathTrainableRULERWorkflow,
    MathWorkflow,
    RubricJudgeWorkflow,
    SciWorldWorkflow,
    SimpleWorkflow,
    Task,
    ToolCallWorkflow,
    Workflow,
)

QUESTION = {"question": "What is 2 + 3?", "answer": "5"}


def _model(replies: Any = None, **kw: Any) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies=replies or ["<think>add</think> \\boxed{5}"]), **kw)


def _judge(reply: str, name: str = "judge") -> Any:
    """An auxiliary model's OpenAI client, as Trinity hands them to workflows."""
    config = AuxiliaryModelConfig(name=name, engine="mock", mock={"replies": [reply]})
    return build_auxiliary_model(config).client


def _task(workflow: type, raw: dict | None = None, repeat: int = 3, **kw: Any) -> Task:
    return Task(
        workflow=workflow,
        repeat_times=repeat,
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(temperature=1.0),
        raw_task=dict(raw or QUESTION),
        batch_id=0,
        task_id=7,
        **kw,
    )


def _run(wf: Workflow) -> list[Experience]:
    if type(wf).can_repeat:
        wf.set_repeat_times(wf.repeat_times, run_id_base=0)
    return asyncio.run(wf.run_async()) if type(wf).is_async else wf.run()


# ---- Task ---------------------------------------------------------------------------


def test_task_has_trinitys_fields_and_defaults() -> None:
    task = Task()
    assert task.workflow is None and task.reward_fn is None
    assert task.repeat_times == 1  # Trinity: None; reinforge takes rollout_args.n (migrating.md)
    assert isinstance(task.format_args, FormatConfig)
    assert isinstance(task.rollout_args, GenerationConfig)
    assert (task.workflow_args, task.reward_fn_args, task.index) == ({}, {}, {})
    assert task.is_eval is False and task.raw_task is None
    assert (task.batch_id, task.task_id) == ("", "")


def test_task_desc_truth_to_dict_and_to_workflow() -> None:
    task = _task(MathBoxedWorkflow, reward_fn=MathBoxedRewardFn, workflow_args={"k": 1})
    assert task.task_desc == "What is 2 + 3?" and task.truth == "5"
    as_dict = task.to_dict()
    assert isinstance(as_dict, dict) and as_dict["task_id"] == 7
    judge = _judge("ok")
    wf = task.to_workflow(_model(), [judge])
    assert isinstance(wf, MathBoxedWorkflow)
    assert wf.task is task and wf.auxiliary_models == [judge]
    assert judge.model_path  # Trinity adds model_path to each auxiliary client


# ---- Workflow -----------------------------------------------------------------------


class Echo(Workflow):
    """A custom workflow: one sample, rewarded by its length."""

    def run(self) -> list[Experience]:
        (exp,) = self.model.chat([{"role": "user", "content": self.task.task_desc}])
        exp.reward = float(len(exp.response_text))
        return [exp]


def test_workflow_flags_constructor_and_methods() -> None:
    assert (Workflow.can_reset, Workflow.can_repeat, Workflow.is_async) == (False, False, False)
    task = _task(Echo)
    wf = Echo(task=task, model=_model(["hi"]), auxiliary_models=None)
    assert wf.task is task and wf.auxiliary_models == []
    (exp,) = wf.run()
    assert exp.reward == 2.0
    wf.set_repeat_times(4, run_id_base=8)
    assert (wf.repeat_times, wf.run_id_base) == (4, 8)
    with pytest.raises(NotImplementedError):
        wf.reset(task)  # only workflows that set can_reset implement it
    with pytest.raises(NotImplementedError):
        asyncio.run(wf.run_async())
    with pytest.warns(DeprecationWarning):
        assert wf.resettable is False
    with pytest.warns(DeprecationWarning):
        assert wf.repeatable is False
    with pytest.warns(DeprecationWarning):
        assert wf.asynchronous is False


def test_register_module_makes_a_workflow_nameable() -> None:
    @WORKFLOWS.register_module("conformance_echo_workflow")
    class Registered(Echo):
        pass

    assert WORKFLOWS.get("conformance_echo_workflow") is Registered
    assert isinstance(_task(Registered).to_workflow(_model()), Registered)


# ---- built-in workflows -------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "is_async"),
    [
        (SimpleWorkflow, False),
        (AsyncSimpleWorkflow, True),
        (MathWorkflow, False),
        (AsyncMathWorkflow, True),
        (MathBoxedWorkflow, False),
        (AsyncMathBoxedWorkflow, True),
        (MathEvalWorkflow, False),
        (AsyncMathEvalWorkflow, True),
    ],
)
def test_single_turn_math_workflows_give_repeat_times_scored_samples(cls, is_async) -> None:
    assert cls.is_async is is_async and cls.can_repeat
    reward = None if cls in (MathEvalWorkflow, AsyncMathEvalWorkflow) else MathBoxedRewardFn
    task = _task(cls, reward_fn=reward)
    wf = task.to_workflow(_model(["<think>add</think> \\boxed{5}", "\\boxed{6}"]))
    exps = _run(wf)
    assert len(exps) == 3
    assert all(isinstance(e.reward, float) for e in exps)
    assert [e.eid.run for e in exps] == [0, 1, 2]
    assert max(e.reward for e in exps) > min(e.reward for e in exps)  # right beats wrong
    if cls.can_reset:
        wf.reset(_task(cls, reward_fn=reward, raw={"question": "1 + 1?", "answer": "2"}))
        assert wf.task.truth == "2"


def test_tool_call_workflow_scores_each_call() -> None:
    row = {
        "question": "Add 2 and 3.",
        "tools": [{"type": "function", "function": {"name": "add", "parameters": {}}}],
        "answer": {"name": "add", "arguments": {"a": 2, "b": 3}},
    }
    good = '<tool_call>[{"name": "add", "arguments": {"a": 2, "b": 3}}]</tool_call>'
    task = _task(ToolCallWorkflow, row, repeat=2)
    # reinforge's ToolCallWorkflow reads the rollout model's history (migrating.md)
    with pytest.raises(ValueError, match="enable_history"):
        ToolCallWorkflow(task=task, model=_model([good]))
    wf = ToolCallWorkflow(task=task, model=_model([good, "5"], enable_history=True))
    exps = _run(wf)
    assert [e.reward for e in exps] == [1.0, 0.0]


@pytest.mark.parametrize("cls", [MathRMWorkflow, AsyncMathRMWorkflow])
def test_reward_model_workflows_take_the_auxiliary_models_score(cls) -> None:
    wf = cls(task=_task(cls), model=_model(), auxiliary_models=[_judge('{"score": 0.75}')])
    exps = _run(wf)
    assert len(exps) == 3 and {e.reward for e in exps} == {0.75}
    assert all("gold_reward" in e.metrics for e in exps)


@pytest.mark.parametrize("cls", [MathRULERWorkflow, AsyncMathRULERWorkflow])
def test_ruler_workflows_reward_with_the_judges_group_scores(cls) -> None:
    judge = _judge('{"scores": [1, 0.5, 0]}')
    exps = _run(cls(task=_task(cls), model=_model(), auxiliary_models=[judge]))
    assert sorted(e.reward for e in exps) == [0.0, 0.5, 1.0]


def test_trainable_ruler_judges_with_the_policy_itself() -> None:
    task = _task(MathTrainableRULERWorkflow, workflow_args={"gold_probability": 0.0})
    model = _model({"Candidate 1": '{"scores": [1, 0.5, 0]}', ".*": "\\boxed{5}"})
    exps = _run(MathTrainableRULERWorkflow(task=task, model=model))
    assert sorted(e.reward for e in exps) == [0.0, 0.5, 1.0]


def test_rubric_judge_maps_the_rating_to_a_reward() -> None:
    row = {**QUESTION, "rubric": ["gives the number"]}
    judge = _judge('{"rating": 10}')
    task = _task(RubricJudgeWorkflow, row)
    exps = _run(RubricJudgeWorkflow(task=task, model=_model(), auxiliary_models=[judge]))
    assert len(exps) == 3 and {e.reward for e in exps} == {1.0}


def test_frozen_lake_workflow_as_trinity_builds_it() -> None:
    assert (FrozenLakeWorkflow.is_async, FrozenLakeWorkflow.can_repeat) == (True, False)
    task = _task(FrozenLakeWorkflow, {"seed": 0, "size": 2, "p": 1.0}, repeat=1)
    task.workflow_args = {"max_steps": 3, "desc": ["SG", "FF"]}
    wf = FrozenLakeWorkflow(model=_model(["```Right```"]), task=task, auxiliary_models=None)
    assert not wf.finished() and not wf.success()
    (exp,) = _run(wf)
    assert exp.reward == 1.0 and wf.success() and wf.finished()
    assert asdict(task.rollout_args)["temperature"] == 1.0  # Trinity's rollout_args property


def test_email_search_workflow_answers_with_its_tools() -> None:
    row = {
        "question": "When is the offsite?",
        "answer": "Friday",
        "message_ids": ["<m1>"],
        "inbox_address": "me@example.com",
        "query_date": "2001-05-01",
    }
    answer = {"name": "return_final_answer", "arguments": {"answer": "Friday", "sources": []}}
    reply = f"<tool_call>[{json.dumps(answer)}]</tool_call>"
    task = _task(EmailSearchWorkflow, row, repeat=1, workflow_args={"max_turns": 2})
    wf = EmailSearchWorkflow(task=task, model=_model([reply], enable_history=True))
    exps = _run(wf)
    assert len(exps) == 1 and exps[0].reward >= 1.0  # right answer, found without a judge


@pytest.mark.needs("scienceworld")  # skipped without it, failed under CI (tests/conftest.py)
def test_sciworld_workflow_is_built_like_trinitys() -> None:
    """Runs one real ScienceWorld step: an error from the workflow itself is a failure,
    never a skip."""
    assert SciWorldWorkflow.is_async
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        task = _task(SciWorldWorkflow, {"task_name": "lifespan-longest-lived", "variation": 0})
        task.workflow_args = {"max_steps": 1}
        exps = _run(SciWorldWorkflow(model=_model(["look around"]), task=task))
    assert len(exps) == 1 and 0.0 <= exps[0].reward <= 1.0
