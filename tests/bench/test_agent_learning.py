"""bench/agent_learning.py: its statistics on known numbers, and a tiny end-to-end run
(the tiny random model, one seed, one step of everything) writing every stage."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def al() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_learning", BENCH / "agent_learning.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_summary_is_the_mean_with_its_t_interval(al) -> None:
    row = al.summary([0.1, 0.2, 0.3])
    # sd 0.1, n 3: half width t(0.975, 2) * 0.1 / sqrt(3) = 4.303 * 0.057735 = 0.24844
    assert row["mean"] == pytest.approx(0.2) and row["n"] == 3
    assert row["low"] == pytest.approx(0.2 - 0.24844, abs=1e-4)
    assert row["high"] == pytest.approx(0.2 + 0.24844, abs=1e-4)
    assert row["values"] == [0.1, 0.2, 0.3]
    one = al.summary([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["low"]) and math.isnan(one["high"])


def test_paired_difference_is_seed_by_seed(al) -> None:
    diff = al.paired_difference([0.5, 0.25, 0.75], [0.25, 0.25, 0.5])
    assert diff["values"] == [0.25, 0.0, 0.25]
    # mean 1/6, sd sqrt(1/48) = 0.144338; half width 4.303 * 0.144338 / sqrt(3) = 0.35858
    assert diff["mean"] == pytest.approx(1 / 6)
    assert diff["high"] - diff["mean"] == pytest.approx(0.35858, abs=1e-4)
    with pytest.raises(ValueError):
        al.paired_difference([0.1], [0.1, 0.2])


def test_mean_curve_and_analysis(al) -> None:
    assert al.mean_curve([[(0, 0.1), (2, 0.3)], [(0, 0.3), (2, 0.5), (4, 0.6)]]) == [
        (0, pytest.approx(0.2), 2), (2, pytest.approx(0.4), 2), (4, 0.6, 1),
    ]  # fmt: skip
    runs = [
        al.Run("base", 1, 0, 0, [(0, 0.0)]), al.Run("sft", 1, 1, 1, [(6, 0.2)]),
        al.Run("multi_step_grpo", 1, 1, 1, [(0, 0.2), (2, 0.25)]),
        al.Run("gigpo", 1, 1, 1, [(0, 0.2), (2, 0.5)]),
        al.Run("base", 2, 0, 0, [(0, 0.1)]), al.Run("sft", 2, 1, 1, [(6, 0.3)]),
        al.Run("multi_step_grpo", 2, 1, 1, [(0, 0.3), (2, 0.25)]),
        al.Run("gigpo", 2, 1, 1, [(0, 0.3), (2, 0.25)]),
    ]  # fmt: skip
    result = al.analyse(runs, ["base", "sft", "multi_step_grpo", "gigpo"])
    assert result["seeds"] == [1, 2]
    assert result["stages"]["sft"]["mean"] == pytest.approx(0.25)
    # t(0.975, 1) = 12.706; the two differences 0.25 and 0.0: sd 0.17678, half 1.5883
    assert result["difference"]["values"] == [0.25, 0.0]
    assert result["difference"]["high"] == pytest.approx(0.125 + 1.5883, abs=1e-3)
    assert result["curves"]["gigpo"] == [(0, pytest.approx(0.25), 2), (2, 0.375, 2)]


def test_a_tiny_run_writes_every_stage(al, tmp_path: Path, tiny_model_path: Path) -> None:
    out = tmp_path / "out"
    al.main([
        "--seeds", "1", "--sft-steps", "1", "--rl-steps", "1", "--eval-games", "2",
        "--batch-size", "1", "--repeat-times", "2", "--model", "tiny-random-smollm2",
        "--out", str(out), "--in-process",
    ])  # fmt: skip
    result = json.loads((out / "results.json").read_text())
    assert set(result["stages"]) == {"base", "sft", "multi_step_grpo", "gigpo"}
    assert all(row["n"] == 1 for row in result["stages"].values())
    assert result["difference"]["name"] == "gigpo - multi_step_grpo"
    names = [(r["name"], r["seed"]) for r in result["runs"]]
    assert names == [("base", 1), ("sft", 1), ("multi_step_grpo", 1), ("gigpo", 1)]
    for run in result["runs"][1:]:
        assert run["wall_s"] > 0 and run["peak_rss_mb"] > 0
    for name in ("multi_step_grpo", "gigpo"):
        steps = [point[0] for point in result["curves"][name]]
        assert steps == [0, 1]  # the warm start, then the eval after the RL step
        # the warm start's level is the RL run's own step-0 eval, on the same games
        assert result["curves"][name][0][1] == result["stages"]["sft"]["values"][0]
    assert (out / "curves.png").stat().st_size > 0
    # --reuse-sft: the RL stages again from the same warm start, which is not retrained
    checkpoint = next((out / "runs" / "seed1" / "sft" / "checkpoints").iterdir())
    stamp = (checkpoint / "state.json").stat().st_mtime_ns
    again = al.main([
        "--seeds", "1", "--sft-steps", "1", "--rl-steps", "1", "--eval-games", "2",
        "--batch-size", "1", "--repeat-times", "2", "--model", "tiny-random-smollm2",
        "--out", str(out), "--in-process", "--reuse-sft", "--algorithms", "gigpo",
    ])  # fmt: skip
    assert (checkpoint / "state.json").stat().st_mtime_ns == stamp
    assert set(again["stages"]) == {"base", "sft", "gigpo"}
    assert again["stages"]["sft"]["values"] == result["stages"]["sft"]["values"]
    assert again["runs"][1]["wall_s"] == result["runs"][1]["wall_s"]  # the recorded cost


def test_players_without_a_model_set_the_scale(al, tmp_path: Path) -> None:
    """On the shipped held-out maps an optimal walker always wins in the allowed moves,
    random moves rarely, and stepping toward the goal in between; on a map whose
    holes lie off every shortening move, stepping toward the goal always wins."""
    shipped = al.frozen_lake_references(
        BENCH.parent / "examples" / "frozen_lake" / "grpo.yaml", games_per_map=50
    )
    assert shipped["shortest"] == 1.0
    assert 0.02 < shipped["random"] < shipped["toward_goal"] < shipped["toward_goal_safe"] < 1.0
    # seed 2's map needs one move (make_data.py's "shortest": 1), so toward_goal wins it
    (tmp_path / "test.jsonl").write_text('{"seed": 2, "size": 4, "p": 0.8}\n')
    config = {"buffer": {"explorer_input": {"eval_tasksets": [
        {"path": "test.jsonl", "workflow_args": {"max_steps": 1}},
    ]}}}  # fmt: skip
    (tmp_path / "c.yaml").write_text(json.dumps(config))
    one = al.frozen_lake_references(tmp_path / "c.yaml", games_per_map=40)
    assert one["toward_goal"] == 1.0 and one["shortest"] == 1.0
    assert 0.0 < one["random"] < 0.6  # one move in four reaches it


def test_rl_stage_runs_every_step_it_is_asked_for(al, tmp_path: Path) -> None:
    """More steps x tasks than the training maps hold: the RL run passes over them again
    rather than stopping after one epoch (it stopped at 3 of 6 steps before)."""
    from reinforge.config import load_config
    from reinforge.explorer.cursor import TasksetCursor

    spec = al.ENVS["frozen_lake"]
    args = al.parse_args(["--rl-steps", "6", "--batch-size", "16", "--repeat-times", "8"])
    items = al.rl_overrides(args, spec, tmp_path / "sft", "gigpo")
    cfg = load_config(spec.example / spec.rl, items)
    taskset = cfg.buffer.explorer_input.taskset
    rows = sum(1 for line in (spec.example / taskset.path).read_text().splitlines() if line)
    assert rows < 6 * 16  # the case this test is about
    cursor = TasksetCursor(
        rows, cfg.buffer.batch_size, cfg.buffer.total_epochs, cfg.buffer.total_steps
    )
    assert cursor.total == 6
    assert cfg.trainer.algorithm == "gigpo" and taskset.repeat_times == 8


def test_new_maps_are_none_of_the_shipped_ones(al, tmp_path: Path) -> None:
    """--eval-maps: maps outside the training, test and demonstration rows, and the
    eval overrides that point the eval taskset at them."""
    from reinforge.envs.frozen_lake.env import TextFrozenLake, generate_map

    example = BENCH.parent / "examples" / "frozen_lake"
    path = al.new_frozen_lake_maps(40, tmp_path / "maps.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    new = {tuple(generate_map(r["size"], r["p"], r["seed"])) for r in rows}
    assert len(new) == 40
    shipped = [
        json.loads(line)
        for name in ("train.jsonl", "test.jsonl")
        for line in (example / "data" / name).read_text().splitlines()
    ]
    assert not new & {tuple(generate_map(r["size"], r["p"], r["seed"])) for r in shipped}
    demos = (example / "data" / "demonstrations.jsonl").read_text()  # first boards shown

    def shown(row: dict) -> str:  # a game's first board as it is written in the jsonl
        board = TextFrozenLake(size=row["size"], p=row["p"], seed=row["seed"]).render()
        return json.dumps(f"Current map:\n{board}")[1:-1]

    assert not any(shown(row) in demos for row in rows)
    first_demo = {"size": 4, "p": 0.8, "seed": len(shipped)}  # seeds 0-63 make distinct maps
    assert al.make_data_module().distinct_maps(len(shipped) + 1, 4, 0.8)[-1]["seed"] == len(shipped)
    assert shown(first_demo) in demos  # the check can see a shipped board
    items = al.eval_overrides(example / "grpo.yaml", 80, path)
    first = "buffer.explorer_input.eval_tasksets[0]"
    assert items == [
        f"{first}.path={path.resolve()}",
        f"{first}.limit=40",
        f"{first}.repeat_times=2",
    ]
    # --train-maps: the maps after those, for the RL stages
    train = al.new_frozen_lake_maps(10, tmp_path / "train.jsonl", skip=40)
    train_rows = [json.loads(line) for line in train.read_text().splitlines()]
    assert min(r["seed"] for r in train_rows) > max(r["seed"] for r in rows)
    for bad in (
        ["--eval-maps", "-1"],
        ["--train-maps", "-3"],
        ["--env", "webshop", "--eval-maps", "8"],
    ):
        with pytest.raises(SystemExit):
            al.parse_args(bad)
    args = al.parse_args(["--train-maps", "10", "--eval-maps", "40"])
    args.train_tasks, args.eval_tasks = train, path
    cfg_items = al.rl_overrides(args, al.ENVS["frozen_lake"], tmp_path / "sft", "gigpo")
    assert f"buffer.explorer_input.taskset.path={train.resolve()}" in cfg_items
