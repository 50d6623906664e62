"""bench/paired_eval.py: task-by-task comparison on known numbers, the stored per-task
scores it reads, its argument checks, and a tiny end-to-end run of two policies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_differences_are_task_by_task(paired) -> None:
    scores = {
        "warm": {"0": 1.0, "1": 0.0, "2": 0.5, "3": 1.0},
        "rl": {"0": 1.0, "1": 1.0, "2": 1.0, "3": 0.5, "9": 1.0},  # task 9: rl only
    }
    result = paired.compare(scores)
    assert result["policies"]["warm"]["mean"] == pytest.approx(0.625)
    assert result["policies"]["rl"]["tasks"] == 5
    diff = result["differences"]["rl - warm"]
    # the 4 common tasks: 0, +1, +0.5, -0.5 -> mean 0.25, sd 0.6455; t(0.975, 3) = 3.182
    assert diff["tasks"] == 4 and diff["better"] == 2 and diff["worse"] == 1
    assert diff["mean"] == pytest.approx(0.25)
    assert diff["high"] - diff["mean"] == pytest.approx(3.182 * 0.645497 / 2, abs=1e-4)


def test_task_scores_average_a_tasks_records(paired, tmp_path: Path) -> None:
    """Records of one task (a task run in several requests) are averaged; a failed
    one, which has no score, counts as 0; other tasksets and rows that were never run
    (invalid, batch '') are not read."""
    from reinforge.buffer import SQLiteExperienceStorage, TaskRecord

    storage = SQLiteExperienceStorage(tmp_path / "buffer.db")
    storage.write_task_results([
        TaskRecord("test", "eval0", "0", "ok", None, 1, 1, 0.1, 1.0),
        TaskRecord("test", "eval0", "0", "ok", None, 1, 1, 0.1, 0.0),
        TaskRecord("test", "eval0", "1", "failed", "boom", 2, 0, 0.1, None),
        TaskRecord("test", "", "7", "invalid", "row 7: bad", 0, 0, 0.0),
        TaskRecord("train", "1", "0", "ok", None, 1, 1, 0.1, 1.0),
    ])  # fmt: skip
    storage.close()
    assert paired.task_scores(tmp_path, "test") == {"0": 0.5, "1": 0.0}
    with pytest.raises(SystemExit, match="no eval records"):
        paired.task_scores(tmp_path, "other")


def test_bad_arguments_are_refused(paired, tmp_path: Path) -> None:
    for bad in (
        ["a"],  # not NAME=WEIGHTS
        [f"a={tmp_path}", f"a={tmp_path}"],  # the same name twice
        [f"a={tmp_path / 'missing'}"],
        [f"a={tmp_path}", "--games", "0"],
        [f"a={tmp_path}", "--env", "webshop", "--maps", "4"],
    ):
        with pytest.raises(SystemExit):
            paired.parse_args(bad)


def test_two_policies_play_the_same_new_maps(paired, tmp_path: Path, tiny_model_path) -> None:
    """The tiny random model as both policies, in process: each plays every new map
    twice, its records hold a score per map, and the comparison pairs them all."""
    out = tmp_path / "out"
    result = paired.main([
        "--maps", "3", "--skip", "5", "--games", "2", "--model", "tiny-random-smollm2",
        "--out", str(out), "--in-process", f"a={tiny_model_path}", f"b={tiny_model_path}",
    ])  # fmt: skip
    assert [json.loads(line)["seed"] for line in (out / "maps.jsonl").read_text().splitlines()]
    for name in ("a", "b"):
        assert result["policies"][name]["tasks"] == 3
        scores = paired.task_scores(out / "runs" / name, "frozen-lake-test")
        assert sorted(scores) == ["0", "1", "2"]
    assert result["differences"]["b - a"]["tasks"] == 3
    assert json.loads((out / "paired.json").read_text())["differences"].keys() == {"b - a"}
    # a later call with one more policy reuses the evals already made
    stamp = (out / "runs" / "a" / "buffer.db").stat().st_mtime_ns
    again = paired.main([
        "--maps", "3", "--skip", "5", "--games", "2", "--model", "tiny-random-smollm2",
        "--out", str(out), "--in-process", f"a={tiny_model_path}", f"c={tiny_model_path}",
    ])  # fmt: skip
    assert (out / "runs" / "a" / "buffer.db").stat().st_mtime_ns == stamp
    assert again["differences"]["c - a"]["tasks"] == 3
    with pytest.raises(SystemExit, match="holds another eval"):  # other settings, same name
        paired.main([
            "--maps", "3", "--skip", "6", "--games", "2", "--model", "tiny-random-smollm2",
            "--out", str(out), "--in-process", f"a={tiny_model_path}",
        ])  # fmt: skip
