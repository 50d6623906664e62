"""``examples/webshop/*.yaml`` through the CLI: explored with a scripted mock shopper, and
trained for 2 steps on the tiny model (real episodes on the shipped catalogue)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.core.state_hash import STATE_HASH

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "webshop"
CONFIGS = ["grpo", "multi_step_grpo", "gigpo"]

# a shopper that searches the instruction, opens the first result and buys it as it is
SHOPPER = {
    r"Price: \$": "<think>buy it</think><action>click[Buy Now]</action>",
    r"\[button\] (B0[A-Z0-9]{8}) \[button_\]": "<think>open</think><action>click[\\1]</action>",
    r"Instruction:\n([^,\n]+)": "<think>search</think><action>search[\\1]</action>",
}


def _cli(config: str, run_dir: Path, mode: str, overrides: list[str]) -> None:
    args = [mode, "-c", str(EXAMPLE / f"{config}.yaml"), "--run-dir", str(run_dir)]
    for item in [*overrides, "monitor.progress=false", "monitor.tensorboard=false"]:
        args += ["--set", item]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.exception, result.output[-3000:])


def _stored(run_dir: Path) -> list:
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return storage.read()
    finally:
        storage.close()


@pytest.mark.parametrize("config", CONFIGS)
def test_example_explores_with_a_scripted_shopper(tmp_path: Path, config: str) -> None:
    run_dir = tmp_path / "run"
    overrides = [
        "model.engine=mock", "model.model_path=mock", "model.max_model_len=65536",
        "model.max_response_tokens=256",  # the mock engine's tokens are bytes
        f"model.mock.replies={json.dumps(SHOPPER)}", "buffer.total_steps=1",
    ]  # fmt: skip
    _cli(config, run_dir, "explore", overrides)
    exps = _stored(run_dir)
    step_wise = config != "grpo"
    runs = {(e.eid.tid, e.eid.rid) for e in exps}
    assert len(runs) == 2 * 4  # tasks x repeats
    assert len(exps) == len(runs) * (3 if step_wise else 1)  # search, open, buy
    assert all(e.info["termination_reason"] == "env_done" for e in exps)
    assert all(0.0 <= e.reward <= 1.0 for e in exps) and max(e.reward for e in exps) > 0
    if step_wise:
        assert sorted({e.eid.step for e in exps}) == [0, 1, 2]
        assert all(len(e.info[STATE_HASH]) == 16 for e in exps)
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    step = next(r for r in rows if "explore/tasks" in r)
    assert step["explore/workflow/env_done/mean"] == 1.0


@pytest.mark.parametrize("config", CONFIGS)
def test_example_trains_two_steps_on_the_tiny_model(
    tmp_path: Path, tiny_model_path: Path, config: str, varying_reward, assert_run_trained
) -> None:
    """Each config trains 2 steps on real episodes and its weights move. The tiny random
    model almost never buys, so every episode's reward is the same -0.1: ``grpo`` and
    ``multi_step_grpo`` are scored by ``sampled_token_reward`` instead (groups with
    variance, so nonzero advantages); ``gigpo`` keeps its reward, since its step level
    has advantages of its own (below)."""
    run_dir = tmp_path / "run"
    overrides = [
        "model.model_path=tiny-random-smollm2", "model.max_response_tokens=8",
        "model.hf.batch_window_ms=2", "buffer.batch_size=1",
        "buffer.explorer_input.taskset.repeat_times=2",
        "buffer.explorer_input.taskset.workflow_args.max_env_steps=3",
        "trainer.lr=1.0e-3", "checkpoint.save_interval=2",
        *(varying_reward if config != "gigpo" else []),
    ]  # fmt: skip
    _cli(config, run_dir, "run", overrides)
    exps = _stored(run_dir)
    for exp in exps:  # the tiny random model almost never buys: then -0.1 for not finishing
        reward = exp.info.get("original_reward", exp.reward)  # the workflow's own
        if exp.info["termination_reason"] == "max_turns_exceeded":
            assert reward == pytest.approx(-0.1)
        else:
            assert exp.info["termination_reason"] == "env_done" and reward >= 0
    for exp in exps:
        assert exp.action_mask.any()  # every experience trains on sampled tokens
        if config == "grpo":  # one conversation: the replies, the pages between masked out
            mask = "".join(str(int(m)) for m in exp.action_mask.tolist())
            assert re.fullmatch(r"1+(0+1+){0,2}", mask), mask
        else:
            assert exp.action_mask.all() and STATE_HASH in exp.info
    if config != "grpo":
        assert {e.eid.step for e in exps} <= {0, 1, 2}
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "train/loss" in r]
    assert [r["step"] for r in trained] == [1, 2]
    if config == "gigpo":
        # runs that never leave the start page: one anchor state whose steps differ in
        # discounted return, so the step level has advantages even with flat rewards
        assert all("train/anchor/group_count" in r for r in trained)
    assert_run_trained(run_dir, tiny_model_path, 2)


# ---- the warm start: demonstrations, sft.yaml, then RL from its checkpoint -------------------


def _load_make_data():
    import importlib.util

    spec = importlib.util.spec_from_file_location("webshop_make_data", EXAMPLE / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_make_data_reproduces_the_shipped_files(tmp_path: Path) -> None:
    _load_make_data().main(["--out", str(tmp_path)])
    for name in ("train.jsonl", "test.jsonl", "demonstrations.jsonl"):
        assert (tmp_path / name).read_bytes() == (EXAMPLE / "data" / name).read_bytes(), name
    assert (EXAMPLE / "data" / "demonstrations.jsonl").stat().st_size < 500_000


def test_demonstrations_are_oracle_episodes_on_goals_no_taskset_holds() -> None:
    from reinforge.envs.webshop import Catalogue
    from reinforge.envs.webshop.prompts import parse_action, system_prompt

    catalogue = Catalogue.default()
    held = {
        catalogue.goal(json.loads(line)["session_id"])["instruction_text"]
        for name in ("train.jsonl", "test.jsonl")
        for line in (EXAMPLE / "data" / name).read_text().splitlines()
    }
    test_asins = {
        catalogue.goal(json.loads(line)["session_id"])["asin"]
        for line in (EXAMPLE / "data" / "test.jsonl").read_text().splitlines()
    }
    rows = [
        json.loads(x) for x in (EXAMPLE / "data" / "demonstrations.jsonl").read_text().splitlines()
    ]
    assert 64 <= len(rows) <= 128
    for row in rows:
        messages = row["messages"]
        assert messages[0] == {"role": "system", "content": system_prompt(6)}
        instruction = messages[1]["content"].split("Instruction:\n", 1)[1].split("\n", 1)[0]
        assert instruction not in held
        replies = [parse_action(m["content"]) for m in messages if m["role"] == "assistant"]
        assert replies[0].startswith("search[") and replies[-1] == "click[Buy Now]"
        opened = [a[len("click[") : -1] for a in replies if a.startswith("click[B0")]
        assert len(opened) == 1 and opened[0] not in test_asins


@pytest.mark.parametrize("rl_config", ["grpo_from_sft.yaml", "gigpo_from_sft.yaml"])
def test_sft_then_rl_from_the_checkpoint_on_the_tiny_model(
    tmp_path: Path, tiny_model_path: Path, varying_reward, assert_run_trained, rl_config: str
) -> None:
    """The WebShop warm start in miniature: sft.yaml trains one step on the
    demonstrations and checkpoints, and the RL config starts from that checkpoint
    (model.init_from) and trains one step on nonzero advantages (the tiny model never
    buys: its runs are scored by ``sampled_token_reward``)."""
    import torch
    from safetensors.torch import load_file

    def weights(folder: Path) -> dict:
        return {k: v for f in sorted(folder.glob("*.safetensors")) for k, v in load_file(f).items()}

    sft_dir, rl_dir = tmp_path / "sft", tmp_path / "rl"
    tiny = ["model.model_path=tiny-random-smollm2", "buffer.total_steps=1"]
    _cli("sft", sft_dir, "run", [
        *tiny, "buffer.explorer_input.eval_tasksets=[]", "buffer.batch_size=2",
        "trainer.micro_batch_size=2", "checkpoint.save_interval=1",
    ])  # fmt: skip
    sft_model = sft_dir / "checkpoints" / "step_1" / "model"
    rows = [json.loads(x) for x in (sft_dir / "metrics.jsonl").read_text().splitlines()]
    (row,) = [r for r in rows if "train/sft/loss" in r]
    assert row["step"] == 1 and row["train/sft/loss"] > 0
    before, after = weights(tiny_model_path), weights(sft_model)
    assert before and any(not torch.equal(v, after[k]) for k, v in before.items())

    args = ["run", "-c", str(EXAMPLE / rl_config), "--run-dir", str(rl_dir)]
    for item in [
        *tiny, "buffer.explorer_input.eval_tasksets=[]", f"model.init_from={sft_dir}",
        "buffer.batch_size=1", "buffer.explorer_input.taskset.repeat_times=2",
        "buffer.explorer_input.taskset.workflow_args.max_env_steps=2",
        "model.max_response_tokens=8", "model.hf.batch_window_ms=2",
        "trainer.lr=1.0e-3", "checkpoint.save_interval=1", "monitor.progress=false",
        "monitor.tensorboard=false", *varying_reward,
    ]:  # fmt: skip
        args += ["--set", item]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    started = f"starting from the weights of {sft_dir / 'checkpoints' / 'step_1'}"
    assert started in " ".join(result.output.split())
    assert_run_trained(rl_dir, sft_model, 1)
