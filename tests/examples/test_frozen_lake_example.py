"""``examples/frozen_lake``: reproducible maps and demonstrations, and the SFT-then-GRPO
configs chain on the tiny model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.workflows.envs import frozen_lake_env as fl

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "frozen_lake"
FILES = ("train.jsonl", "test.jsonl", "demonstrations.jsonl")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_make_data_reproduces_the_shipped_files(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("frozen_lake_make_data", EXAMPLE / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--out", str(tmp_path)])
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (EXAMPLE / "data" / name).read_bytes(), name
    assert sum((EXAMPLE / "data" / name).stat().st_size for name in FILES) < 200_000


def test_demonstrations_are_on_maps_no_taskset_holds() -> None:
    taskset_boards = {
        fl.TextFrozenLake(size=r["size"], p=r["p"], seed=r["seed"]).render()
        for name in ("train.jsonl", "test.jsonl")
        for r in read_jsonl(EXAMPLE / "data" / name)
    }
    demos = read_jsonl(EXAMPLE / "data" / "demonstrations.jsonl")
    assert len(demos) >= 100
    for demo in demos:
        first = demo["messages"][1]["content"]  # "Current map:\n<board>\nWhich move ...?"
        board = first.split("\n", 1)[1].rsplit("\n", 1)[0]
        assert board not in taskset_boards
        moves = [m["content"] for m in demo["messages"] if m["role"] == "assistant"]
        assert all(fl.parse_action(move) in fl.MOVES for move in moves)


def test_sft_then_grpo_configs_chain_on_the_tiny_model(tmp_path: Path) -> None:
    """The FrozenLake warm start in miniature: sft.yaml trains and checkpoints, and
    grpo.yaml as shipped starts from that checkpoint (the tiny model's weights stand in
    for SmolLM2's; one step each, no evals)."""
    tiny = ("--set", "model.model_path=tiny-random-smollm2", "--set", "buffer.total_steps=1")
    no_eval = ("--set", "buffer.explorer_input.eval_tasksets=[]")
    sft_dir, grpo_dir = tmp_path / "sft", tmp_path / "grpo"
    sft = CliRunner().invoke(
        app,
        ["run", "-c", str(EXAMPLE / "sft.yaml"), "--run-dir", str(sft_dir), *tiny, *no_eval],
    )
    assert sft.exit_code == 0, sft.output
    (row,) = [r for r in read_jsonl(sft_dir / "metrics.jsonl") if "train/sft/loss" in r]
    assert row["step"] == 1

    grpo = CliRunner().invoke(
        app,
        [
            "run", "-c", str(EXAMPLE / "grpo.yaml"), "--run-dir", str(grpo_dir), *tiny, *no_eval,
            "--set", f"model.init_from={sft_dir}", "--set", "buffer.batch_size=2",
            "--set", "buffer.explorer_input.taskset.repeat_times=2",
            "--set", "buffer.experience_pipeline.operators=[]",
        ],
    )  # fmt: skip
    assert grpo.exit_code == 0, grpo.output
    assert f"starting from the weights of {sft_dir / 'checkpoints' / 'step_1'}" in " ".join(
        grpo.output.split()
    )
    (trained,) = [r for r in read_jsonl(grpo_dir / "metrics.jsonl") if "train/loss" in r]
    assert trained["step"] == 1
