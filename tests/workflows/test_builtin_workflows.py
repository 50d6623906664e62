import asyncio

import pytest

from reinforge import REWARD_FUNCTIONS, WORKFLOWS, RewardFn, Task
from reinforge.core import FormatConfig, GenerationConfig, RegistryError
from reinforge.models import MockEngine, ModelWrapper


@REWARD_FUNCTIONS.register_module("test_exact_number")
class ExactNumber(RewardFn):
    def __call__(self, response, truth=None, prompt=None, **kwargs):
        return {"accuracy": float(truth is not None and f"{{{truth}}}" in response), "bonus": 0.5}


def make_task(workflow: str, reward: str | None = "test_exact_number", **raw) -> Task:
    return Task(
        workflow=workflow,
        reward_fn=reward,
        format_args=FormatConfig(prompt_key="q", response_key="a"),
        rollout_args=GenerationConfig(n=1),
        raw_task=raw or {"q": "What is 2 + 3?", "a": "5"},
        task_id=3,
        repeat_times=4,
    )


@pytest.fixture
def model():
    return ModelWrapper(MockEngine(policy="arithmetic", error_rate=0.5, seed=1))


@pytest.mark.parametrize(
    "name",
    [
        "simple_workflow",
        "async_simple_workflow",
        "math_workflow",
        "async_math_workflow",
        "math_boxed_workflow",
        "async_math_boxed_workflow",
        "math_eval_workflow",
        "async_math_eval_workflow",
    ],
)
def test_builtin_workflow_produces_scored_group(name):
    model = ModelWrapper(MockEngine(replies=["so \\boxed{5}", "maybe \\boxed{4}"]))
    cls = WORKFLOWS.get(name)
    assert cls.can_repeat and cls.can_reset
    wf = make_task(name).to_workflow(model)
    wf.set_repeat_times(4, run_id_base=10)
    exps = asyncio.run(wf.run_async()) if cls.is_async else wf.run()
    assert len(exps) == 4
    assert sorted(e.eid.run for e in exps) == [10, 11, 12, 13]
    for e in exps:
        assert e.reward == e.metrics["accuracy"] + 0.5
        assert e.messages[-1]["role"] == "assistant"
        assert e.prompt_text.endswith("assistant\n")
    # replies alternate right / wrong by sample index
    assert [e.metrics["accuracy"] for e in sorted(exps, key=lambda e: e.eid.run)] == [
        1.0,
        0.0,
        1.0,
        0.0,
    ]


def test_reset_switches_task(model):
    wf = make_task("simple_workflow").to_workflow(model)
    wf.reset(make_task("simple_workflow", q="What is 7 * 6?", a="42"))
    wf.set_repeat_times(1, 0)
    model.engine.error_rate = 0.0
    (exp,) = wf.run()
    assert "42" in exp.response_text and exp.metrics["accuracy"] == 1.0


def test_system_prompt_and_default_reward(model):
    task = make_task("math_boxed_workflow", reward=None)
    wf = task.to_workflow(model)
    assert "boxed" in wf.format_messages()[0]["content"]
    assert type(wf.reward_fn).__name__ != "ExactNumber"


def test_missing_prompt_key_names_task_and_key(model):
    with pytest.raises(ValueError, match=r"task 3.*prompt key 'q'"):
        make_task("simple_workflow", other="x").to_workflow(model)


def test_simple_workflow_without_reward_fn_is_an_error(model):
    with pytest.raises(ValueError, match="default_reward_fn_type"):
        make_task("simple_workflow", reward=None).to_workflow(model)


def test_unknown_workflow_lists_known_names(model):
    with pytest.raises(
        RegistryError, match=r"unknown workflow 'simpel_workflow'.*Did you mean 'simple_workflow'"
    ):
        make_task("simpel_workflow").to_workflow(model)


def test_dotted_path_workflow(model):
    task = make_task("reinforge.workflows.simple.SimpleWorkflow")
    assert task.workflow_cls is WORKFLOWS.get("simple_workflow")


def test_deprecated_flags_still_answer(model):
    wf = make_task("async_simple_workflow").to_workflow(model)
    with pytest.warns(DeprecationWarning):
        assert wf.asynchronous is True
    with pytest.warns(DeprecationWarning):
        assert wf.resettable is True
    with pytest.warns(DeprecationWarning):
        assert wf.repeatable is True


def test_prompt_template_wraps_the_row_prompt():
    task = make_task("simple_workflow")
    task.format_args.prompt_template = "{prompt} Answer with just the number."
    wf = task.to_workflow(ModelWrapper(MockEngine()))
    assert wf.format_messages()[-1] == {
        "role": "user",
        "content": "What is 2 + 3? Answer with just the number.",
    }


@REWARD_FUNCTIONS.register_module("test_checker_that_kills_its_worker")
class CheckerThatKillsItsWorker(RewardFn):
    """Scores through a guarded checker that always kills its worker process."""

    def __call__(self, response, truth=None, prompt=None, **kwargs):
        from reinforge.rewards import call_with_timeout

        outcome = call_with_timeout("dying_checker:check", (response,), timeout=20)
        return {"accuracy": float(outcome.value_or(0.0))}


def test_a_reward_worker_that_always_dies_fails_the_task_with_the_reason(tmp_path, monkeypatch):
    from reinforge.explorer import Scheduler, WorkflowRunner, make_requests
    from reinforge.rewards.timeout import shutdown_workers

    (tmp_path / "dying_checker.py").write_text("import os\n\ndef check(r):\n    os._exit(7)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    shutdown_workers()  # new workers copy this sys.path
    task = make_task("simple_workflow", reward="test_checker_that_kills_its_worker")
    requests = make_requests([task], taskset="t", timeout=60, max_retries=0)
    try:
        results = asyncio.run(Scheduler([WorkflowRunner(MockEngine())]).run(requests))
    finally:
        shutdown_workers()
    assert results and all(not r.ok and not r.experiences for r in results)
    assert all("dying_checker:check" in r.error and "exit code 7" in r.error for r in results)
