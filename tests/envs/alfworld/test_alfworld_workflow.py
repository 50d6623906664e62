"""``alfworld_workflow`` and ``step_wise_alfworld_workflow`` on the mock engine, playing real
games on TextWorld: scripted to win and to lose; rewards, masks, step ids, state hashes,
termination reasons, and bad input (unknown game, an environment that raises or hangs)."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from reinforge.core import FormatConfig, Task
from reinforge.core.state_hash import STATE_HASH
from reinforge.envs import AlfworldWorkflow, StepWiseAlfworldWorkflow
from reinforge.envs.alfworld import TextWorldAlfworldEnv, shipped_games
from reinforge.explorer.messages import FAILED, OK, TaskRequest
from reinforge.explorer.runner import WorkflowRunner
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine
from reinforge.workflows import WORKFLOWS

# the real engine (the alfworld extra): without it skipped, failed under CI (tests/conftest.py)
pytestmark = pytest.mark.needs("alfworld")

GAME = "pick_clean_then_place_in_recep-0"
WALK = shipped_games()[GAME]["walkthrough"]


def _model(reply, max_model_len: int = 65536) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies=reply, max_model_len=max_model_len), enable_history=True)


def _run(workflow: str, reply, *, row=None, max_model_len: int = 65536, **args):
    task = Task(
        workflow=workflow,
        raw_task=row if row is not None else {"game": GAME},
        workflow_args={"max_env_steps": 10, **args},
    )
    return asyncio.run(task.to_workflow(_model(reply, max_model_len)).run_async())


def _spans(mask: list[int]) -> int:
    return sum(1 for k, _ in itertools.groupby(mask) if k == 1)


def test_registered_under_trinitys_names() -> None:
    assert WORKFLOWS.get("alfworld_workflow") is AlfworldWorkflow
    assert WORKFLOWS.get("step_wise_alfworld_workflow") is StepWiseAlfworldWorkflow


def test_a_won_game_is_one_token_exact_experience_with_reward_one(player) -> None:
    (exp,) = _run("alfworld_workflow", player("win"))
    assert exp.reward == 1.0
    assert exp.info["termination_reason"] == "env_done" and exp.info["game"] == GAME
    assert exp.metrics["success"] == 1.0 and exp.metrics["env_steps"] == len(WALK)
    assert exp.metrics["invalid_actions"] == 0.0 and exp.metrics["well_formed"] == 1.0
    assert _spans(exp.action_mask.tolist()) == len(WALK)  # replies trained, observations not
    assert not exp.info.get("retokenized")
    assert "Your task is to: put a clean fork in drawer." in (exp.prompt_text or "")
    assert f"<action>{WALK[-1]}</action>" in exp.response_text


def test_a_lost_game_runs_out_of_steps_with_the_unfinished_reward(player) -> None:
    (exp,) = _run("alfworld_workflow", player("lost"), row={"game": GAME, "max_env_steps": 3})
    assert exp.reward == pytest.approx(-0.1)
    assert exp.info["termination_reason"] == "max_turns_exceeded"
    assert exp.metrics["env_steps"] == exp.metrics["invalid_actions"] == 3.0  # the row's limit
    assert _spans(exp.action_mask.tolist()) == 3
    answers = [m["content"] for m in exp.messages if m["role"] == "user"]
    assert answers[-1].startswith("Observation: Nothing happens. Check that the command")


def test_admissible_commands_are_shown_on_request(player) -> None:
    (exp,) = _run(
        "alfworld_workflow", player("lost"), max_env_steps=1, show_admissible_commands=True
    )
    first = next(m["content"] for m in exp.messages if m["role"] == "user")
    assert "Available commands: go to cabinet 1, go to countertop 1" in first


def test_context_full_ends_the_episode(player) -> None:
    exps = _run("alfworld_workflow", player("win"), max_model_len=2300)
    assert exps[0].info["termination_reason"] == "max_prompt_length_exceeded"
    assert exps[0].metrics["context_full"] == 1.0 and exps[0].reward == pytest.approx(-0.1)


def test_step_wise_gives_one_experience_per_step_with_state_hashes(player) -> None:
    exps = _run("step_wise_alfworld_workflow", player("win"))
    assert [e.eid.step for e in exps] == list(range(len(WALK)))
    assert all(e.reward == 1.0 and e.info["termination_reason"] == "env_done" for e in exps)
    assert all(e.metrics["actual_env_steps"] == len(WALK) for e in exps)
    assert all(set(e.action_mask.tolist()) == {1} for e in exps)
    assert len({e.info[STATE_HASH] for e in exps}) == len(exps)  # a new state every step
    for before, after in itertools.pairwise(exps):  # each prompt holds the earlier tokens
        assert after.tokens[: len(before.tokens)].tolist() == before.tokens.tolist()


def test_step_wise_a_command_that_does_nothing_keeps_the_state(player) -> None:
    exps = _run("step_wise_alfworld_workflow", player("lost"), max_env_steps=3)
    assert [e.eid.step for e in exps] == [0, 1, 2]
    assert len({e.info[STATE_HASH] for e in exps}) == 1
    assert all(e.reward == pytest.approx(-0.1) for e in exps)
    assert all(e.info["termination_reason"] == "max_turns_exceeded" for e in exps)
    win = _run("step_wise_alfworld_workflow", player("win"))
    assert win[0].info[STATE_HASH] == exps[0].info[STATE_HASH]  # the same start


def test_workflows_need_history_and_a_game() -> None:
    for name in ("alfworld_workflow", "step_wise_alfworld_workflow"):
        with pytest.raises(ValueError, match="enable_history"):
            Task(workflow=name, raw_task={"game": GAME}).to_workflow(ModelWrapper(MockEngine()))
    with pytest.raises(ValueError, match="names no ALFWorld game"):
        Task(workflow="alfworld_workflow", raw_task={"q": "x"}).to_workflow(_model(None))
    # as in Trinity-RFT, the row's prompt text may name the game (or a game file)
    fmt = FormatConfig(prompt_key="id")
    task = Task(workflow="alfworld_workflow", raw_task={"id": GAME}, format_args=fmt)
    assert task.to_workflow(_model(None)).settings.game == GAME
    task = Task(workflow="alfworld_workflow", raw_task={"id": "/d/game.tw-pddl"}, format_args=fmt)
    assert task.to_workflow(_model(None)).settings.game_file == "/d/game.tw-pddl"


# ---- bad input through the runner: the task fails with the reason, the run goes on ----------


def _runner_run(row: dict, reply, **args):
    runner = WorkflowRunner(MockEngine(replies=reply, max_model_len=65536), enable_history=True)
    task = Task(
        workflow="alfworld_workflow", raw_task=row, workflow_args={"max_env_steps": 10, **args}
    )
    request = TaskRequest(task, repeat_times=1, run_id_base=0, timeout=120, max_retries=0)
    return asyncio.run(runner.run(request))


@pytest.fixture
def closes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    closed: list[int] = []
    real = TextWorldAlfworldEnv.close

    def close(self: TextWorldAlfworldEnv) -> None:
        closed.append(1)
        real(self)

    monkeypatch.setattr(TextWorldAlfworldEnv, "close", close)
    return closed


def test_unknown_and_unloadable_games_fail_the_task(player, tmp_path) -> None:
    result = _runner_run({"game": "no-such-game"}, player("win"))
    assert result.status == FAILED
    assert "unknown ALFWorld game 'no-such-game'" in result.error
    assert "termination: error" in result.error
    result = _runner_run({"game_file": str(tmp_path / "nowhere" / "game.tw-pddl")}, player("win"))
    assert result.status == FAILED and "no ALFWorld game file" in result.error
    broken = tmp_path / "game.tw-pddl"
    broken.write_text('{"pddl_domain": "(define", "grammar": "g", "pddl_problem": "p"}')
    result = _runner_run({"game_file": str(broken)}, player("win"))
    assert result.status == FAILED and "failed in loading the game" in result.error


def test_an_env_that_raises_fails_the_task_and_is_closed(player, closes, monkeypatch) -> None:
    def broken(self, command):
        raise RuntimeError("planner crashed")

    monkeypatch.setattr(TextWorldAlfworldEnv, "step", broken)
    result = _runner_run({"game": GAME}, player("win"))
    assert result.status == FAILED
    assert "failed in step: RuntimeError: planner crashed" in result.error
    assert closes == [1]


def test_an_env_that_hangs_fails_the_task_and_the_run_goes_on(player, closes, monkeypatch) -> None:
    real_step = TextWorldAlfworldEnv.step

    def slow(self, command):
        time.sleep(6)
        return real_step(self, command)

    monkeypatch.setattr(TextWorldAlfworldEnv, "step", slow)
    # a timeout well above a game load (~0.5 s, seconds on a loaded machine) and well
    # below the hang, so that only the step can be what times out
    result = _runner_run({"game": GAME}, player("win"), env_timeout=3)
    assert result.status == FAILED and "did not answer step within 3s" in result.error
    assert closes == [1]
    monkeypatch.setattr(TextWorldAlfworldEnv, "step", real_step)
    again = _runner_run({"game": GAME}, player("win"))
    assert again.status == OK and again.experiences[0].reward == 1.0
    assert closes == [1, 1]
