"""The WebShop workflows on the mock engine: real episodes on the shipped catalogue, scripted
to succeed and to fail; rewards, masks, step ids, state hashes, termination reasons, and
bad input (unknown product, an environment that raises or hangs)."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from reinforge.algorithms import gigpo_advantage
from reinforge.core import FormatConfig, Task
from reinforge.core.state_hash import STATE_HASH, state_hash
from reinforge.envs import StepWiseWebShopWorkflow, WebShopWorkflow
from reinforge.envs.webshop import Catalogue, CatalogueWebShopEnv
from reinforge.envs.webshop.pages import search_page
from reinforge.explorer.messages import FAILED, OK, TaskRequest
from reinforge.explorer.runner import WorkflowRunner
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine
from reinforge.workflows import WORKFLOWS

GOAL = 3  # its product is on the first results page of its instruction's search


def _model(reply, max_model_len: int = 65536) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies=reply, max_model_len=max_model_len), enable_history=True)


def _run(workflow: str, reply, *, row=None, max_model_len: int = 65536, **args):
    task = Task(
        workflow=workflow,
        raw_task=row if row is not None else {"session_id": GOAL},
        workflow_args={"max_env_steps": 8, **args},
    )
    model = _model(reply, max_model_len)
    return asyncio.run(task.to_workflow(model).run_async())


def _spans(mask: list[int]) -> int:
    """How many separate stretches of 1s the mask has (one per reply)."""
    return sum(1 for k, g in itertools.groupby(mask) if k == 1)


def test_registered_under_trinitys_name() -> None:
    assert WORKFLOWS.get("webshop_workflow") is WebShopWorkflow
    assert WORKFLOWS.get("step_wise_webshop_workflow") is StepWiseWebShopWorkflow


def test_a_successful_episode_is_one_token_exact_experience_with_reward_one(shopper) -> None:
    (exp,) = _run("webshop_workflow", shopper("buy_target"))
    goal = Catalogue.default().goal(GOAL)
    steps = 2 + len(goal["goal_options"]) + 1  # search, open, options, buy
    assert exp.reward == 1.0
    assert exp.info["termination_reason"] == "env_done"
    assert exp.metrics["env_steps"] == steps and exp.metrics["success"] == 1.0
    assert exp.metrics["invalid_actions"] == 0.0 and exp.metrics["r_type"] == 1.0
    # every reply is an action span; observations between them are masked out
    mask = exp.action_mask.tolist()
    assert _spans(mask) == steps
    assert "click[Buy Now]" in exp.response_text
    assert not exp.info.get("retokenized")  # the sampled tokens, not a re-encoding
    # the masked-out tokens hold the observations the agent saw
    prompt = exp.prompt_text or ""
    assert goal["instruction_text"] in prompt


def test_buying_the_wrong_product_earns_partial_credit(shopper) -> None:
    (exp,) = _run("webshop_workflow", shopper("buy_first"))
    assert 0.0 < exp.reward < 1.0
    assert exp.info["termination_reason"] == "env_done"
    assert exp.metrics["success"] == 0.0


def test_an_agent_that_never_acts_runs_out_of_steps_with_the_unfinished_reward(shopper) -> None:
    (exp,) = _run(
        "webshop_workflow", shopper("mumble"), row={"session_id": GOAL, "max_env_steps": 3}
    )
    assert exp.reward == pytest.approx(-0.1)
    assert exp.info["termination_reason"] == "max_turns_exceeded"
    assert exp.metrics["env_steps"] == exp.metrics["invalid_actions"] == 3.0  # the row's limit
    assert exp.metrics["env_done"] == 0.0
    assert _spans(exp.action_mask.tolist()) == 3
    assert "Wrap your action in <action> </action>" in (exp.prompt_text or "") + str(exp.messages)


def test_an_invalid_click_is_answered_with_the_valid_actions(shopper) -> None:
    (exp,) = _run("webshop_workflow", shopper("bad_click"))
    assert exp.reward == 1.0 and exp.metrics["invalid_actions"] == 1.0
    answers = [m["content"] for m in exp.messages if m["role"] == "user"]
    assert any("Buttons you can click now: ['search']" in a for a in answers)


def test_sparse_reward_and_a_row_goal() -> None:
    goal = dict(Catalogue.default().goal(GOAL))
    exps = _run(
        "webshop_workflow",
        lambda prompt, i: "<action>search[x]</action>",
        row={"goal": goal},
        max_env_steps=1,
        sparse_reward=True,
    )
    assert exps[0].info["session_id"] is None and exps[0].reward == pytest.approx(-0.1)


@pytest.mark.parametrize("workflow", ["webshop_workflow", "step_wise_webshop_workflow"])
def test_context_full_ends_the_episode(shopper, workflow: str) -> None:
    exps = _run(workflow, shopper("buy_target"), max_model_len=2600)
    assert len(exps) >= 1 and exps[0].metrics["env_steps"] < 5  # cut before buying
    for exp in exps:
        assert exp.info["termination_reason"] == "max_prompt_length_exceeded"
        assert exp.metrics["context_full"] == 1.0 and exp.reward == pytest.approx(-0.1)


def test_step_wise_gives_one_experience_per_step_with_state_hashes(shopper) -> None:
    exps = _run("step_wise_webshop_workflow", shopper("buy_target"))
    assert [e.eid.step for e in exps] == list(range(len(exps)))
    assert all(e.reward == 1.0 for e in exps)
    assert all(e.info["termination_reason"] == "env_done" for e in exps)
    assert all(e.metrics["actual_env_steps"] == len(exps) for e in exps)
    assert all(e.experience_type == "single_turn" for e in exps)
    assert all(set(e.action_mask.tolist()) == {1} for e in exps)
    goal = Catalogue.default().goal(GOAL)
    assert exps[0].info[STATE_HASH] == state_hash(search_page(goal["instruction_text"]))
    assert len({e.info[STATE_HASH] for e in exps}) == len(exps)  # a new page every step
    for before, after in itertools.pairwise(exps):  # each prompt holds the earlier tokens
        assert after.tokens[: len(before.tokens)].tolist() == before.tokens.tolist()


def test_step_wise_runs_that_share_pages_get_step_level_credit(shopper) -> None:
    good = _run("step_wise_webshop_workflow", shopper("buy_target"))
    poor = _run("step_wise_webshop_workflow", shopper("buy_first"))
    stuck = _run("step_wise_webshop_workflow", shopper("mumble"), max_env_steps=3)
    for run, exps in enumerate((good, poor, stuck)):
        for exp in exps:
            exp.eid.task, exp.eid.run = 0, run
    # the start page is shared by all three; the results page by the two that searched
    assert good[0].info[STATE_HASH] == poor[0].info[STATE_HASH] == stuck[2].info[STATE_HASH]
    assert good[1].info[STATE_HASH] == poor[1].info[STATE_HASH]
    gigpo_advantage(good + poor + stuck, std_normalize=False)
    # from the same results page, opening the right product beats opening a wrong one
    assert good[1].advantages[0] > poor[1].advantages[0]
    assert all(e.advantages[0] < 0 for e in stuck)


def test_workflows_need_history() -> None:
    for name in ("webshop_workflow", "step_wise_webshop_workflow"):
        task = Task(workflow=name, raw_task={"session_id": 0})
        with pytest.raises(ValueError, match="enable_history"):
            task.to_workflow(ModelWrapper(MockEngine()))


def test_a_row_without_a_goal_is_refused() -> None:
    task = Task(workflow="webshop_workflow", raw_task={"question": "buy socks"})
    with pytest.raises(ValueError, match="names no WebShop goal"):
        task.to_workflow(_model(None))
    # as in Trinity-RFT, the row's prompt text may be the goal number
    fmt = FormatConfig(prompt_key="id")
    desc = Task(workflow="webshop_workflow", raw_task={"id": "7"}, format_args=fmt)
    assert desc.to_workflow(_model(None)).settings.session_id == 7
    number = Task(workflow="webshop_workflow", raw_task={"id": 8}, format_args=fmt)
    assert number.to_workflow(_model(None)).settings.session_id == 8


# ---- bad input through the runner: the task fails with the reason, the run goes on ----------


def _runner_run(row: dict, reply, **args):
    runner = WorkflowRunner(MockEngine(replies=reply, max_model_len=65536), enable_history=True)
    task = Task(
        workflow="webshop_workflow", raw_task=row, workflow_args={"max_env_steps": 8, **args}
    )
    request = TaskRequest(task, repeat_times=1, run_id_base=0, timeout=60, max_retries=0)
    return asyncio.run(runner.run(request))


@pytest.fixture
def closes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the catalogue envs closed."""
    closed: list[int] = []
    real = CatalogueWebShopEnv.close

    def close(self: CatalogueWebShopEnv) -> None:
        closed.append(1)
        real(self)

    monkeypatch.setattr(CatalogueWebShopEnv, "close", close)
    return closed


def test_an_unknown_product_fails_the_task(shopper, closes) -> None:
    goal = {**Catalogue.default().goal(GOAL), "asin": "B0NOSUCH00"}
    result = _runner_run({"goal": goal}, shopper("buy_target"))
    assert result.status == FAILED
    assert "unknown product 'B0NOSUCH00'" in result.error and "termination: error" in result.error
    assert closes == [1]


def test_a_setting_of_the_wrong_type_fails_the_task_naming_it(shopper) -> None:
    row = {"session_id": GOAL, "sparse_reward": "sometimes"}
    result = _runner_run(row, shopper("buy_target"))
    assert result.status == FAILED
    assert "bad webshop setting" in result.error and "sparse_reward" in result.error
    assert _runner_run({**row, "sparse_reward": "false"}, shopper("buy_target")).status == OK


def test_an_env_that_raises_fails_the_task_and_is_closed(shopper, closes, monkeypatch) -> None:
    def broken(self, action):
        raise OSError("search server went away")

    monkeypatch.setattr(CatalogueWebShopEnv, "step", broken)
    result = _runner_run({"session_id": GOAL}, shopper("buy_target"))
    assert result.status == FAILED
    assert "failed in step: OSError: search server went away" in result.error
    assert closes == [1]


def test_an_env_that_hangs_fails_the_task_and_the_run_goes_on(shopper, closes, monkeypatch) -> None:
    real_step = CatalogueWebShopEnv.step

    def slow(self, action):
        time.sleep(6)
        return real_step(self, action)

    monkeypatch.setattr(CatalogueWebShopEnv, "step", slow)
    # well above what opening the store takes on a loaded machine, well below the hang
    result = _runner_run({"session_id": GOAL}, shopper("buy_target"), env_timeout=3)
    assert result.status == FAILED and "did not answer step within 3s" in result.error
    assert closes == [1]
    monkeypatch.setattr(CatalogueWebShopEnv, "step", real_step)
    again = _runner_run({"session_id": GOAL}, shopper("buy_target"))
    assert again.status == OK and again.experiences[0].reward == 1.0
