"""``examples/alfworld/*.yaml`` through the CLI on the real TextWorld engine: explored with a
scripted mock player that wins; the GRPO configs trained for 2 steps on the tiny model
(weights moved), the RAFT configs shown to skip the steps where nothing was won."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.core.state_hash import STATE_HASH

# the real engine (the alfworld extra): without it skipped, failed under CI (tests/conftest.py)
pytestmark = pytest.mark.needs("alfworld")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "alfworld"
CONFIGS = ["grpo", "multi_step_grpo", "raft", "raft_reflect"]
GAME = "pick_and_place_simple-0"
# the last observation decides the command: the most advanced one seen wins
SCRIPT = {
    "You arrive at toilet 1": "move spraybottle 1 to toilet 1",
    "You pick up the spraybottle 1": "go to toilet 1",
    "You open the cabinet 2": "take spraybottle 1 from cabinet 2",
    "You arrive at cabinet 2": "open cabinet 2",
    "Your task is to": "go to cabinet 2",
}


def _replies(raft: bool) -> dict[str, str]:
    lesson = "<experience>Sprays are kept in cabinets.</experience>\n" if raft else ""
    return {k: f"{lesson}<think>next</think>\n<action>{v}</action>" for k, v in SCRIPT.items()}


def _cli(config: str, run_dir: Path, mode: str, overrides: list[str], code: int = 0) -> str:
    args = [mode, "-c", str(EXAMPLE / f"{config}.yaml"), "--run-dir", str(run_dir)]
    for item in [*overrides, "monitor.progress=false", "monitor.tensorboard=false"]:
        args += ["--set", item]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == code, (result.exception, result.output[-3000:])
    return result.output


def _stored(run_dir: Path) -> list:
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return storage.read()
    finally:
        storage.close()


@pytest.mark.parametrize("config", CONFIGS)
def test_example_explores_with_a_scripted_player(tmp_path: Path, config: str) -> None:
    taskset = tmp_path / "tasks.jsonl"
    taskset.write_text(json.dumps({"game": GAME}) + "\n")
    run_dir = tmp_path / "run"
    replies = _replies(raft=config.startswith("raft"))
    overrides = [
        "model.engine=mock", "model.model_path=mock", "model.max_model_len=65536",
        "model.max_response_tokens=256",  # the mock engine's tokens are bytes
        f"model.mock.replies={json.dumps(replies)}", "buffer.total_steps=1",
        "buffer.batch_size=1", f"buffer.explorer_input.taskset.path={taskset}",
        "buffer.explorer_input.taskset.repeat_times=2",
    ]  # fmt: skip
    _cli(config, run_dir, "explore", overrides)
    exps = _stored(run_dir)
    step_wise = config == "multi_step_grpo"
    assert len(exps) == 2 * (len(SCRIPT) if step_wise else 1)
    assert all(e.reward == 1.0 and e.info["termination_reason"] == "env_done" for e in exps)
    assert all(e.info["game"] == GAME and e.action_mask.any() for e in exps)
    if step_wise:
        assert sorted({e.eid.step for e in exps}) == list(range(len(SCRIPT)))
        assert all(len(e.info[STATE_HASH]) == 16 for e in exps)
    if config.startswith("raft"):
        assert all(e.info["raft_kept"] for e in exps)
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    step = next(r for r in rows if "explore/tasks" in r)
    assert step["explore/workflow/success/mean"] == 1.0


TINY = [
    "model.model_path=tiny-random-smollm2", "model.max_response_tokens=8",
    "model.hf.batch_window_ms=2", "buffer.batch_size=1",
    "buffer.explorer_input.taskset.repeat_times=2",
    "buffer.explorer_input.taskset.workflow_args.max_env_steps=3",
    "trainer.lr=1.0e-3",
]  # fmt: skip


@pytest.mark.parametrize("config", ["grpo", "multi_step_grpo"])
def test_example_trains_two_steps_on_the_tiny_model(
    tmp_path: Path, tiny_model_path: Path, config: str, varying_reward, assert_run_trained
) -> None:
    """Each GRPO config trains 2 steps on real games and its weights move. The tiny
    random model never wins, so every game's reward is the same -0.1: the runs are
    scored by ``sampled_token_reward`` instead (groups with variance, so nonzero
    advantages); the game's own reward is kept in ``info["original_reward"]``."""
    run_dir = tmp_path / "run"
    overrides = [*TINY, "checkpoint.save_interval=2", *varying_reward]
    _cli(config, run_dir, "run", overrides)
    exps = _stored(run_dir)
    assert exps
    for exp in exps:  # the tiny random model never wins
        assert exp.metrics["success"] == 0.0 and exp.action_mask.any()
        assert exp.info["original_reward"] == pytest.approx(-0.1)
        assert exp.info["termination_reason"] == "max_turns_exceeded"
        assert 0.0 < exp.reward < 1.0  # the sampled-token reward
    if config == "grpo":  # one conversation: the replies, the observations between masked out
        for exp in exps:
            mask = "".join(str(int(m)) for m in exp.action_mask.tolist())
            assert re.fullmatch(r"1+(0+1+){0,2}", mask), mask
    if config == "multi_step_grpo":
        assert {e.eid.step for e in exps} <= {0, 1, 2}
        assert all(e.action_mask.all() and STATE_HASH in e.info for e in exps)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "train/loss" in r] == [1, 2]
    assert_run_trained(run_dir, tiny_model_path, 2)


@pytest.mark.parametrize("config", ["raft", "raft_reflect"])
def test_raft_example_skips_every_step_when_no_game_is_won(
    tmp_path: Path, tiny_model_path: Path, config: str
) -> None:
    """RAFT keeps only won games, and the tiny random model wins none: every run is
    reported but not kept (reward 0, nothing to learn from), every step is skipped, and
    the run says so as its error (exit 2). A reward from the sampled tokens cannot
    change that (RAFT keeps by the game's outcome). That a kept run trains (SFT loss,
    weights moved) is tested with a scripted winner on the tiny model's tokenizer in
    ``tests/envs/alfworld/test_alfworld_raft_trains.py``."""
    run_dir = tmp_path / "run"
    out = _cli(config, run_dir, "run", TINY, code=2)
    assert "all 2 training steps of this run were skipped" in out
    exps = _stored(run_dir)
    assert exps
    for exp in exps:  # not kept: nothing to learn from, reward 0
        assert exp.metrics["success"] == 0.0
        assert exp.reward == 0.0 and not exp.info["raft_kept"] and not exp.action_mask.any()
        assert exp.info["termination_reason"] in {"max_turns_exceeded", "repeated_action"}
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert not [r for r in rows if "train/loss" in r]
