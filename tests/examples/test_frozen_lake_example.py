"""``examples/frozen_lake``: reproducible maps and demonstrations, and the SFT-then-GRPO
configs chain on the tiny model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from reinforge.envs.frozen_lake import env as fl

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
    assert sum((EXAMPLE / "data" / name).stat().st_size for name in FILES) < 800_000


def test_demonstrations_are_on_maps_no_taskset_holds() -> None:
    taskset_boards = {
        fl.TextFrozenLake(size=r["size"], p=r["p"], seed=r["seed"]).render()
        for name in ("train.jsonl", "test.jsonl")
        for r in read_jsonl(EXAMPLE / "data" / name)
    }
    demos = read_jsonl(EXAMPLE / "data" / "demonstrations.jsonl")
    assert len(demos) >= 100
    for demo in demos:
        first = demo["messages"][1]["content"]  # "Current map:\n<4 board rows>\n..."
        board = "\n".join(first.split("\n")[1:5])
        assert board not in taskset_boards
        moves = [m["content"] for m in demo["messages"] if m["role"] == "assistant"]
        assert all(fl.parse_action(move) in fl.MOVES for move in moves)


def test_sft_then_grpo_configs_chain_on_the_tiny_model(sft_then_grpo) -> None:
    """The FrozenLake warm start in miniature: sft.yaml trains and checkpoints, and
    grpo.yaml as shipped starts from that checkpoint."""
    sft_then_grpo(EXAMPLE)


def test_sft_then_gigpo_configs_chain_on_the_tiny_model(sft_then_grpo) -> None:
    """What ``make demo-agent-env`` runs, in miniature: sft.yaml, then gigpo.yaml as
    shipped (one experience per move, the step-wise workflow) from its checkpoint."""
    sft_then_grpo(EXAMPLE, "gigpo.yaml")
