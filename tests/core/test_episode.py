"""Episode records: rLLM-compatible names and values, token backfill, storage round trips."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reinforge.core import (
    Action,
    Episode,
    ModelOutput,
    Step,
    TerminationEvent,
    TerminationReason,
    Trajectory,
)


def test_termination_reasons_carry_rllm_values() -> None:
    assert {r.name: r.value for r in TerminationReason} == {
        "MAX_PROMPT_LENGTH_EXCEEDED": "max_prompt_length_exceeded",
        "MAX_RESPONSE_LENGTH_EXCEEDED": "max_response_length_exceeded",
        "ENV_DONE": "env_done",
        "MAX_TURNS_EXCEEDED": "max_turns_exceeded",
        "TIMEOUT": "timeout",
        "UNKNOWN": "unknown",
        "ERROR": "error",
    }
    assert TerminationReason.parse("timeout") is TerminationReason.TIMEOUT
    assert TerminationReason.parse("ENV_DONE") is TerminationReason.ENV_DONE
    assert TerminationReason.parse(TerminationReason.ERROR) is TerminationReason.ERROR
    with pytest.raises(ValueError, match="unknown termination reason 'later'"):
        TerminationReason.parse("later")


def test_termination_event_carries_its_reason() -> None:
    assert TerminationEvent().reason is TerminationReason.UNKNOWN
    event = TerminationEvent(TerminationReason.MAX_TURNS_EXCEEDED)
    assert event.reason is TerminationReason.MAX_TURNS_EXCEEDED
    assert isinstance(event, Exception)


def test_model_output_lengths_and_consistency() -> None:
    out = ModelOutput(text="hi", prompt_ids=[1, 2, 3], completion_ids=[4, 5], logprobs=[-0.1, -0.2])
    assert (out.prompt_length, out.completion_length) == (3, 2)
    assert ModelOutput.from_dict(json.loads(json.dumps(out.to_dict()))) == out
    with pytest.raises(ValueError, match="1 logprobs for 2 completion ids"):
        ModelOutput(completion_ids=[4, 5], logprobs=[-0.1])


def test_step_takes_tokens_from_model_output() -> None:
    out = ModelOutput(
        text="<think>hm</think>7",
        content="7",
        reasoning="hm",
        prompt_ids=[10, 11],
        completion_ids=[12, 13, 14],
        logprobs=[-0.5, -0.25, -0.125],
        weight_version=3,
    )
    step = Step.from_model_output(out, messages=[{"role": "user", "content": "guess"}], action=7)
    assert step.prompt_ids == [10, 11] and step.response_ids == [12, 13, 14]
    assert step.logprobs == [-0.5, -0.25, -0.125]
    assert step.weight_version == 3 and step.has_tokens
    assert step.model_response == "7" and step.thought == "hm"
    assert step.chat_completions[-1] == {"role": "assistant", "content": "7", "reasoning": "hm"}
    assert step.messages is step.chat_completions
    assert not Step(model_response="text only").has_tokens
    with pytest.raises(ValueError, match="2 logprobs for 1 response ids"):
        Step(prompt_ids=[1], response_ids=[2], logprobs=[-0.1, -0.2])


def test_step_copies_the_conversation_it_is_given() -> None:
    messages = [{"role": "user", "content": "a"}]
    step = Step(chat_completions=messages)
    messages.append({"role": "assistant", "content": "b"})
    messages[0]["content"] = "changed"
    assert step.chat_completions == [{"role": "user", "content": "a"}]


def test_episode_accepts_named_trajectories() -> None:
    solver, judge = Trajectory(), Trajectory()
    pairs = Episode(trajectories=[("solver", solver), ("judge", judge)])
    assert [t.name for t in pairs.trajectories] == ["solver", "judge"]
    mapping = Episode(trajectories={"solver": Trajectory()})
    assert mapping.trajectories[0].name == "solver"
    assert Trajectory().name == "default_traj_name"


def test_episode_id_parts() -> None:
    assert (Episode(id="gsm8k/12:3").task_id, Episode(id="gsm8k/12:3").rollout_idx) == (
        "gsm8k/12",
        "3",
    )
    assert (Episode(id="plain").task_id, Episode(id="plain").rollout_idx) == ("plain", "")


def test_episode_round_trips_through_json() -> None:
    out = ModelOutput(text="5", content="5", prompt_ids=[1, 2], completion_ids=[3], logprobs=[-1.0])
    step = Step(
        model_output=out,
        chat_completions=[{"role": "user", "content": "q"}],
        observation={"board": (1, 2)},
        action=Action(5),
        reward=0.5,
        done=True,
        info={"turn": 1},
    )
    episode = Episode(
        id="7:1",
        task={"question": "q"},
        termination_reason=TerminationReason.ENV_DONE,
        is_correct=True,
        trajectories=[Trajectory(name="solver", steps=[step], reward=0.5, info={"k": 1})],
        metrics={"solver_acc": 0.5},
        info={"note": object()},
    )
    data = json.loads(json.dumps(episode.to_dict()))
    assert data["termination_reason"] == "env_done"
    assert data["trajectories"][0]["steps"][0]["action"] == 5
    assert data["trajectories"][0]["steps"][0]["observation"] == {"board": [1, 2]}
    assert data["info"]["note"].startswith("<object object")
    back = Episode.from_dict(data)
    assert back.termination_reason is TerminationReason.ENV_DONE
    assert back.is_correct and back.id == "7:1" and back.metrics == {"solver_acc": 0.5}
    traj = back.trajectories[0]
    assert traj.uid == episode.trajectories[0].uid and traj.name == "solver" and traj.reward == 0.5
    got = traj.steps[0]
    assert got.model_output == out
    assert (got.prompt_ids, got.response_ids, got.logprobs) == ([1, 2], [3], [-1.0])
    assert (got.reward, got.done, got.info) == (0.5, True, {"turn": 1})


def test_trajectory_is_cumulative() -> None:
    a = [{"role": "user", "content": "a"}]
    ab = [*a, {"role": "assistant", "content": "b"}]
    assert Trajectory(steps=[Step(chat_completions=a), Step(chat_completions=ab)]).is_cumulative()
    assert not Trajectory(
        steps=[Step(chat_completions=ab), Step(chat_completions=[{"role": "user", "content": "x"}])]
    ).is_cumulative()


def test_episode_module_stays_light() -> None:
    """reinforge.core imports nothing above it, and the episode records need no torch."""
    code = (
        "import sys, reinforge.core.episode, reinforge.core.model_output\n"
        "bad = [m for m in sys.modules if m == 'torch' or "
        "(m.startswith('reinforge.') and not m.startswith('reinforge.core'))]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
