"""FrozenLake: maps, action mapping, rendering, parsing, and both workflows on the mock engine."""

from __future__ import annotations

import asyncio
import itertools
import re

import pytest

from reinforge.core import Task
from reinforge.envs import FrozenLakeWorkflow, StepWiseFrozenLakeWorkflow
from reinforge.envs.frozen_lake import env as fl
from reinforge.envs.frozen_lake import prompts
from reinforge.envs.frozen_lake.workflow import FrozenLakeSettings, demonstration
from reinforge.explorer.messages import FAILED, OK, TaskRequest
from reinforge.explorer.runner import WorkflowRunner
from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine
from reinforge.workflows import WORKFLOWS

MAP = ["SFF", "FHF", "FFG"]  # start top-left, hole in the middle, goal bottom-right
DELTA = fl.MOVE_DELTAS


def _scripted(replies: list[str]) -> ModelWrapper:
    """A mock policy that gives ``replies[k]`` on the k-th turn of a conversation."""

    def reply(prompt: str, index: int) -> str:
        turn = prompt.count("<|im_start|>assistant") - 1
        return replies[min(turn, len(replies) - 1)]

    return ModelWrapper(MockEngine(replies=reply), enable_history=True)


def _task(**row: object) -> Task:
    return Task(workflow="frozen_lake_workflow", raw_task=dict(row), workflow_args={"max_steps": 6})


def _run(task: Task, model: ModelWrapper) -> list:
    return asyncio.run(task.to_workflow(model).run_async())


# ---- the environment ------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_random_maps_are_solvable_and_seeded(seed: int) -> None:
    desc = fl.generate_map(5, 0.7, seed)
    assert desc == fl.generate_map(5, 0.7, seed)
    assert len(desc) == 5 and all(len(row) == 5 for row in desc)
    text = "".join(desc)
    assert text.count("S") == 1 and text.count("G") == 1
    assert set(text) <= set("SFHG")
    fl.shortest_moves(desc)


def _walk(desc: list[str], moves: tuple[int, ...]) -> str:
    """The tile a move sequence ends on (stopping at a hole or the goal)."""
    size = len(desc)
    r, c = next((r, c) for r in range(size) for c in range(size) if desc[r][c] == "S")
    for move in moves:
        dr, dc = DELTA[move]
        r, c = min(max(r + dr, 0), size - 1), min(max(c + dc, 0), size - 1)
        if desc[r][c] in "HG":
            break
    return desc[r][c]


@pytest.mark.parametrize("seed", range(8))
def test_shortest_moves_reach_the_goal_and_none_shorter_does(seed: int) -> None:
    desc = fl.generate_map(4, 0.8, seed)
    moves = fl.shortest_moves(desc)
    env = fl.TextFrozenLake(desc=desc)
    for move in moves:
        env.step(move)
    assert env.success()
    for length in range(len(moves)):
        shorter = itertools.product(fl.MOVES, repeat=length)
        assert not any(_walk(desc, seq) == "G" for seq in shorter)


def test_shortest_moves_of_an_unreachable_goal_raise() -> None:
    with pytest.raises(ValueError, match="cannot be reached"):
        fl.shortest_moves(["SH", "HG"])


def test_a_demonstration_is_the_conversation_the_workflow_has() -> None:
    """Replaying a demonstration's replies through the workflow wins and shows the
    very observations the demonstration holds (so SFT on it teaches the real game)."""
    demo = demonstration(FrozenLakeSettings(seed=11, size=4, p=0.8))
    messages = demo["messages"]
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    assert messages[-1]["role"] == "assistant"
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    assert len(replies) == len(fl.shortest_moves(fl.generate_map(4, 0.8, 11)))
    model = _scripted(replies)
    (exp,) = _run(_task(seed=11, size=4, p=0.8), model)
    assert exp.reward == 1.0 and exp.metrics["env_steps"] == len(replies)
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    position = 0
    for message in messages:
        found = text.find(message["content"], position)
        assert found >= 0, message
        position = found + len(message["content"])


def test_show_surroundings_says_where_the_goal_is_and_what_each_move_reaches() -> None:
    """With ``show_surroundings`` every observation says where the goal lies and what
    each move reaches, the system prompt says so, the workflow shows the very text its
    demonstrations hold, and a replay of one wins."""
    settings = FrozenLakeSettings(desc=MAP, show_surroundings=True)
    messages = demonstration(settings)["messages"]
    assert "what one move in each direction reaches" in messages[0]["content"]
    users = [m["content"] for m in messages if m["role"] == "user"]
    # MAP: start top-left, a hole in the middle, the goal bottom-right
    assert "The goal is 2 rows down and 2 columns right of you." in users[0]
    assert "One move away: Left edge, Down ice, Right ice, Up edge." in users[0]
    env = fl.TextFrozenLake(desc=["FSF", "FHF", "FFG"])  # above the hole, one column off
    assert prompts.surroundings(env) == (
        "The goal is 2 rows down and 1 column right of you.\n"
        "One move away: Left ice, Down hole, Right ice, Up edge."
    )
    plain = demonstration(FrozenLakeSettings(desc=MAP))["messages"]
    assert not any("One move away" in m["content"] for m in plain)
    assert prompts.start_messages(env, "")[0]["content"] == prompts.SYSTEM_PROMPT  # empty: default
    assert [env.tile_after(m) for m in fl.MOVES] == ["F", "H", "F", None]
    replies = [m["content"] for m in messages if m["role"] == "assistant"]
    model = _scripted(replies)
    task = Task(
        workflow="frozen_lake_workflow",
        raw_task={"desc": MAP},
        workflow_args={"max_steps": 6, "show_surroundings": True},
    )
    (exp,) = _run(task, model)
    assert exp.reward == 1.0
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert all(m["content"] in text for m in messages)


def test_map_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        fl.generate_map(1, 0.8, 0)
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        fl.generate_map(4, 0.0, 0)
    assert len({tuple(fl.generate_map(4, 0.8, s)) for s in range(10)}) > 5


def test_actions_map_onto_gymnasium_and_render() -> None:
    env = fl.TextFrozenLake(desc=MAP)
    assert env.render() == "P _ _\n_ O _\n_ _ G"
    assert fl.TO_GYM == {1: 0, 2: 1, 3: 2, 4: 3}  # Left, Down, Right, Up in gymnasium's numbering
    still = env.step(fl.STILL)
    assert (still.action_is_valid, still.action_is_effective, still.done) == (False, False, False)
    wall = env.step(fl.UP)  # the edge: valid but no movement
    assert (wall.action_is_valid, wall.action_is_effective) == (True, False)
    assert env.step(fl.RIGHT).action_is_effective and env.position == (0, 1)
    fell = env.step(fl.DOWN)
    assert fell.done and fell.reward == 0.0 and env.finished() and not env.success()
    assert env.render().splitlines()[1] == "_ P _"
    with pytest.raises(RuntimeError, match="over"):
        env.step(fl.LEFT)


def test_reaching_the_goal_rewards_one() -> None:
    env = fl.TextFrozenLake(desc=MAP)
    results = [env.step(a) for a in fl.shortest_moves(MAP)]
    assert [r.reward for r in results] == [0.0, 0.0, 0.0, 1.0]
    assert results[-1].done and env.success() and env.total_reward == 1.0


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("I think so. ```Left```", fl.LEFT),
        ("```down``` no wait ```Up```", fl.UP),
        ("``` Right ```", fl.RIGHT),
        ("```2```", fl.DOWN),
        ("Up.", fl.UP),
        ("```Still```", fl.INVALID_ACTION),
        ("```7```", fl.INVALID_ACTION),
        ("```Left``` is wrong, I mean right", fl.LEFT),  # the block wins over loose words
        ("I will go LEFT, then down", fl.LEFT),  # no block: the first move word
        ("leftover upward", fl.INVALID_ACTION),  # words, not substrings
        ("", fl.INVALID_ACTION),
    ],
)
def test_parse_action(text: str, action: int) -> None:
    assert fl.parse_action(text) == action


# ---- the workflows --------------------------------------------------------------------


def test_settings_come_from_the_row_then_workflow_args() -> None:
    task = Task(
        raw_task={"seed": 7, "size": 5, "question": "unused"},
        workflow_args={"seed": 1, "p": 0.6, "agent_max_steps": 3},
    )
    s = FrozenLakeSettings.from_task(task)
    assert (s.seed, s.size, s.p, s.max_steps, s.is_slippery) == (7, 5, 0.6, 3, False)
    with pytest.raises(ValueError, match="max_steps"):
        FrozenLakeSettings.from_task(Task(workflow_args={"max_steps": 0}))


def test_settings_read_strings_as_their_types_and_name_a_bad_value() -> None:
    """Values from a CSV row or ``--set`` arrive as strings: "false" must be False (a
    non-empty string is truthy), and a value that is no bool names its setting."""
    task = Task(workflow_args={"show_surroundings": "false", "is_slippery": "0", "size": "5"})
    s = FrozenLakeSettings.from_task(task)
    assert (s.show_surroundings, s.is_slippery, s.size) == (False, False, 5)
    assert FrozenLakeSettings.from_task(
        Task(workflow_args={"show_surroundings": "true"})
    ).show_surroundings
    with pytest.raises(ValueError, match="show_surroundings"):
        FrozenLakeSettings.from_task(Task(workflow_args={"show_surroundings": "sometimes"}))


def test_workflow_env_helpers() -> None:
    wf = _task(desc=MAP).to_workflow(ModelWrapper(MockEngine()))
    assert wf.render() == "P _ _\n_ O _\n_ _ G" and not wf.finished()
    obs, reward, done, info = wf.env_step(fl.RIGHT)
    assert obs == "_ P _\n_ O _\n_ _ G" and (reward, done) == (0.0, False)
    assert info == {"action_is_valid": True, "action_is_effective": True}
    assert wf.env_step(fl.UP)[3]["action_is_effective"] is False
    for action in (fl.RIGHT, fl.DOWN, fl.DOWN):
        obs, reward, done, _ = wf.env_step(action)
    assert (reward, done) == (1.0, True) and wf.success() and wf.finished()


def test_registered() -> None:
    assert WORKFLOWS.get("frozen_lake_workflow") is FrozenLakeWorkflow
    assert WORKFLOWS.get("step_wise_frozen_lake_workflow") is StepWiseFrozenLakeWorkflow
    assert FrozenLakeWorkflow.is_async and not FrozenLakeWorkflow.can_repeat


def test_solving_agent_gets_one_multi_turn_experience_with_reward_one() -> None:
    moves = fl.shortest_moves(MAP)
    model = _scripted([f"Thinking. ```{fl.ACTION_NAMES[a]}```" for a in moves])
    (exp,) = _run(_task(desc=MAP), model)
    assert exp.reward == 1.0
    assert exp.metrics["success"] == 1.0 and exp.metrics["env_steps"] == len(moves)
    assert exp.metrics["invalid_actions"] == 0.0 and exp.metrics["fell_in_hole"] == 0.0
    assert exp.info["turns"] == len(moves) and exp.info["map"] == MAP
    mask = exp.action_mask.int().tolist()
    spans = re.findall(r"1+", "".join(map(str, mask)))
    assert len(spans) == len(moves)  # one trained span per reply, observations masked between
    assert mask[0] == 1 and mask[-1] == 1
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert "Current map:\nP _ _\n_ O _\n_ _ G" in text
    assert text.count("You moved") == len(moves) - 1  # the last move ends the game


def test_invalid_replies_are_counted_not_fatal() -> None:
    model = _scripted(["I would rather not say", "```Up```", "```Fly```"])  # no move word
    (exp,) = _run(_task(desc=MAP), model)
    assert exp.reward == 0.0 and exp.metrics["success"] == 0.0
    assert exp.metrics["env_steps"] == 6.0  # max_steps: never finished
    assert exp.metrics["fell_in_hole"] == 0.0  # lost by running out of moves
    assert exp.metrics["invalid_actions"] == 5.0  # all but the one Up
    assert exp.metrics["invalid_action_ratio"] == pytest.approx(5 / 6)
    assert exp.metrics["effective_action_ratio"] == 0.0  # Up hits the edge
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert "names no valid move" in text and "could not move that way" in text


def test_falling_into_a_hole_ends_with_reward_zero() -> None:
    (exp,) = _run(_task(desc=MAP), _scripted(["```Right```", "```Down```"]))
    assert exp.reward == 0.0 and exp.metrics["env_steps"] == 2.0
    assert exp.metrics["fell_in_hole"] == 1.0 and exp.metrics["success"] == 0.0
    step_wise = Task(workflow="step_wise_frozen_lake_workflow", raw_task={"desc": MAP})
    exps = step_wise.to_workflow(_scripted(["```Right```", "```Down```"])).run()
    assert [e.reward for e in exps] == [0.0, 0.0]
    assert all(e.metrics["fell_in_hole"] == 1.0 for e in exps)


def test_random_map_from_the_row_seed() -> None:
    task = _task(seed=11, size=4, p=0.8)
    desc = fl.generate_map(4, 0.8, 11)
    moves = fl.shortest_moves(desc)
    (exp,) = _run(task, _scripted([f"```{fl.ACTION_NAMES[a]}```" for a in moves]))
    assert exp.info["map"] == desc and exp.info["seed"] == 11
    assert exp.reward == 1.0


def test_env_that_raises_mid_episode_fails_the_attempt_through_the_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = {"n": 0}
    real_step = fl.TextFrozenLake.step

    def flaky(self: fl.TextFrozenLake, action: int) -> fl.StepResult:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("simulator went away")
        return real_step(self, action)

    monkeypatch.setattr(fl.TextFrozenLake, "step", flaky)
    runner = WorkflowRunner(MockEngine(default_reply="```Right```"), enable_history=True)
    task = _task(desc=MAP)

    def request(retries: int) -> TaskRequest:
        return TaskRequest(task, repeat_times=1, run_id_base=0, timeout=30, max_retries=retries)

    failed = asyncio.run(runner.run(request(0)))
    assert failed.status == FAILED and "OSError: simulator went away" in failed.error
    calls["n"] = 1  # the next step raises again; the retry then runs on a healthy env
    retried = asyncio.run(runner.run(request(1)))
    assert retried.status == OK and retried.attempts == 2
    (exp,) = retried.experiences
    # only the successful attempt's turns: Right, Right, then Right into the wall...
    assert exp.info["turns"] == exp.metrics["env_steps"] == 6.0
    assert exp.reward == 0.0


def test_step_wise_variant_gives_one_experience_per_move() -> None:
    moves = fl.shortest_moves(MAP)
    replies = ["nonsense", *[f"```{fl.ACTION_NAMES[a]}```" for a in moves]]
    task = Task(
        workflow="step_wise_frozen_lake_workflow",
        raw_task={"desc": MAP},
        workflow_args={"max_steps": 8, "invalid_action_penalty": -0.1},
    )
    exps = task.to_workflow(_scripted(replies)).run()
    assert [e.eid.step for e in exps] == list(range(len(moves) + 1))
    assert [e.reward for e in exps] == [-0.1, 0.0, 0.0, 0.0, 1.0]
    assert all(e.metrics["success"] == 1.0 and e.metrics["fell_in_hole"] == 0.0 for e in exps)
    assert all(e.metrics["actual_env_steps"] == len(moves) + 1 for e in exps)
    assert all(e.experience_type == "single_turn" for e in exps)  # one reply each
    # each move carries the hash of the board it was made on (for gigpo): the invalid
    # first reply left the player in place, so moves 0 and 1 share a board
    hashes = [e.info["state_hash"] for e in exps]
    assert hashes[0] == hashes[1] and len(set(hashes)) == len(moves)
    # every step's prompt holds the earlier steps' exact tokens
    for before, after in itertools.pairwise(exps):
        assert after.tokens[: len(before.tokens)].tolist() == before.tokens.tolist()


def test_step_wise_variant_shows_surroundings_when_asked() -> None:
    task = Task(
        workflow="step_wise_frozen_lake_workflow",
        raw_task={"desc": MAP},
        workflow_args={"max_steps": 1, "show_surroundings": True},
    )
    model = _scripted(["```Right```"])
    (exp,) = task.to_workflow(model).run()
    prompt = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert "The goal is 2 rows down and 2 columns right of you." in prompt


def test_step_wise_variant_needs_history() -> None:
    task = Task(workflow="step_wise_frozen_lake_workflow", raw_task={"desc": MAP})
    with pytest.raises(ValueError, match="enable_history"):
        task.to_workflow(ModelWrapper(MockEngine()))
