"""The RAFT ALFWorld workflows on the mock engine, playing real games on TextWorld: which
trajectories are kept for SFT, the three-identical-commands stop, and the reflecting
retry whose clean conversation keeps the replies' sampled tokens."""

from __future__ import annotations

import asyncio
import itertools

import pytest
import torch

from reinforge.core import Task
from reinforge.envs import RAFTAlfworldWorkflow, RAFTReflectAlfworldWorkflow
from reinforge.envs.alfworld import shipped_games
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine
from reinforge.workflows import WORKFLOWS

# the real engine (the alfworld extra): without it skipped, failed under CI (tests/conftest.py)
pytestmark = pytest.mark.needs("alfworld")

GAME = "pick_heat_then_place_in_recep-1"
WALK = shipped_games()[GAME]["walkthrough"]


def _run(workflow: str, reply, *, is_eval: bool = False, **args):
    model = ModelWrapper(MockEngine(replies=reply, max_model_len=65536), enable_history=True)
    task = Task(workflow=workflow, raw_task={"game": GAME}, workflow_args=args, is_eval=is_eval)
    exps = asyncio.run(task.to_workflow(model).run_async())
    return exps, model


def _spans(mask: torch.Tensor) -> int:
    return sum(1 for k, _ in itertools.groupby(mask.tolist()) if k == 1)


def test_registered_under_trinitys_names() -> None:
    assert WORKFLOWS.get("RAFT_alfworld_workflow") is RAFTAlfworldWorkflow
    assert WORKFLOWS.get("RAFT_reflect_alfworld_workflow") is RAFTReflectAlfworldWorkflow


@pytest.mark.parametrize("workflow", ["RAFT_alfworld_workflow", "RAFT_reflect_alfworld_workflow"])
def test_a_well_formed_win_is_kept(player, workflow: str) -> None:
    (exp,), _ = _run(workflow, player("win", "raft"))
    assert exp.reward == 1.0 and exp.info["raft_kept"] is True
    assert exp.info["termination_reason"] == "env_done"
    assert exp.metrics["raft_kept"] == 1.0 and exp.metrics["well_formed"] == 1.0
    assert _spans(exp.action_mask) == len(WALK) and not exp.info.get("retokenized")


def test_a_win_without_the_experience_part_is_not_kept(player) -> None:
    (exp,), _ = _run("RAFT_alfworld_workflow", player("win_sloppy", "raft"))
    assert exp.reward == 1.0 and exp.metrics["success"] == 1.0
    assert exp.info["raft_kept"] is False and exp.metrics["well_formed"] == 0.0
    assert not exp.action_mask.any()  # nothing to train on


def test_three_identical_commands_stop_the_episode(player) -> None:
    (exp,), _ = _run("RAFT_alfworld_workflow", player("repeat", "raft"))
    assert exp.info["termination_reason"] == "repeated_action"
    assert exp.metrics["env_steps"] == 3.0 and exp.metrics["repeated_action"] == 1.0
    assert exp.reward == 0.0 and exp.info["raft_kept"] is False
    # evaluation plays once and masks nothing
    (ev,), _ = _run("RAFT_alfworld_workflow", player("repeat", "raft"), is_eval=True)
    assert ev.action_mask.any() and ev.info["raft_kept"] is False


def test_raft_default_step_limit_is_trinitys_and_a_row_may_change_it(player) -> None:
    model = ModelWrapper(MockEngine(), enable_history=True)
    wf = Task(workflow="RAFT_alfworld_workflow", raw_task={"game": GAME}).to_workflow(model)
    assert wf.settings.max_env_steps == 50 and wf.settings.repeat_limit == 3
    (exp,), _ = _run("RAFT_alfworld_workflow", player("lost", "raft"), max_env_steps=2)
    assert exp.info["termination_reason"] == "max_turns_exceeded" and exp.reward == 0.0


def test_a_failed_attempt_is_retried_with_feedback_and_the_clean_retry_kept(player) -> None:
    (exp,), model = _run("RAFT_reflect_alfworld_workflow", player("repeat_then_win", "raft"))
    assert exp.reward == 1.0 and exp.info["raft_kept"] is True
    assert exp.metrics["first_reward"] == 0.0 and exp.metrics["second_reward"] == 1.0
    assert exp.metrics["improved"] == 1.0 and exp.metrics["second_steps"] == len(WALK)
    # the kept conversation is the retry alone, as if it were a first try
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert "first attempt" not in text and text.count("Observation:") == len(WALK)
    assert exp.messages[0]["role"] == "system" and "first attempt" not in str(exp.messages)
    assert _spans(exp.action_mask) == len(WALK) and exp.info["spliced"] is True
    # its trained tokens are the replies exactly as sampled, with their log-probs
    trained = exp.tokens[exp.prompt_length :][exp.action_mask].tolist()
    replies = [m["content"] for m in exp.messages if m["role"] == "assistant"]
    sampled = [model.tokenizer.encode(r) for r in replies]
    assert [t for ids in sampled for t in ids] == [
        t for t in trained if t not in model.tokenizer.eos_token_ids
    ]
    assert (exp.logprobs[exp.action_mask] < 0).all()
    # the spliced prompt is exactly the template's rendering of the clean first turn
    assert exp.prompt_text == model.chat_prompts.render_text(exp.messages[:2])


def test_a_retry_that_does_not_improve_is_not_kept(player) -> None:
    (exp,), _ = _run("RAFT_reflect_alfworld_workflow", player("repeat", "raft"))
    assert exp.info["raft_kept"] is False and exp.metrics["improved"] == 0.0
    assert not exp.action_mask.any() and exp.reward == 0.0


def test_a_retry_whose_prompt_does_not_fit_keeps_nothing(player) -> None:
    model = ModelWrapper(
        MockEngine(replies=player("repeat_then_win", "raft"), max_model_len=3400),
        enable_history=True,
    )
    task = Task(workflow="RAFT_reflect_alfworld_workflow", raw_task={"game": GAME})
    (exp,) = asyncio.run(task.to_workflow(model).run_async())
    assert exp.info["raft_kept"] is False and not exp.action_mask.any()
    assert exp.info["termination_reason"] == "repeated_action"  # the first attempt's
