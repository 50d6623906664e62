"""Reading tasksets: file formats (through the real ``datasets``), bad rows, order, reasoning-gym."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reinforge.buffer import TasksetConfig, TasksetError, load_taskset, read_rows

ROWS = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(6)]


@pytest.fixture(autouse=True)
def _datasets_cache_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep ``datasets``' Arrow cache out of the home directory."""
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))


def config(path: Path | str, **kw: Any) -> TasksetConfig:
    return TasksetConfig(
        name=kw.pop("name", "arith"),
        path=str(path),
        format={"prompt_key": "question", "response_key": "answer"},
        default_workflow_type="math_boxed_workflow",
        **kw,
    )


def write_jsonl(path: Path, rows: list[dict], extra: list[str] = ()) -> Path:
    lines = [json.dumps(r) for r in rows] + list(extra)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_parquet(path: Path, rows: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def write_csv(path: Path, rows: list[dict]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def write_json(path: Path, rows: list[dict]) -> Path:
    path.write_text(json.dumps(rows), encoding="utf-8")  # one JSON array
    return path


def questions(loaded) -> list[str]:
    return [t.task_desc for t in loaded.tasks]


@pytest.mark.parametrize(
    ("suffix", "writer"),
    [
        (".jsonl", write_jsonl),
        (".parquet", write_parquet),
        (".csv", write_csv),
        (".json", write_json),
    ],
)
def test_each_file_format_loads_the_same_tasks(tmp_path: Path, suffix: str, writer) -> None:
    path = writer(tmp_path / f"train{suffix}", ROWS)
    loaded = load_taskset(config(path))
    assert loaded.invalid == []
    assert questions(loaded) == [r["question"] for r in ROWS]
    # csv columns of digits come back as ints: Task.truth is always a string
    assert [t.truth for t in loaded.tasks] == [r["answer"] for r in ROWS]
    assert [t.task_id for t in loaded.tasks] == list(range(len(ROWS)))
    assert loaded.tasks[2].index == {"taskset": "arith", "row": 2, "taskset_id": 0, "index": 2}
    assert all(t.to_dict()["workflow"] == "math_boxed_workflow" for t in loaded.tasks)


def test_directory_uses_the_split_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    write_parquet(data / "train.parquet", ROWS[:4])
    write_parquet(data / "test.parquet", ROWS[4:])
    (data / "README.md").write_text("not data")
    assert questions(load_taskset(config(data))) == [r["question"] for r in ROWS[:4]]
    assert questions(load_taskset(config(data, split="test"))) == [r["question"] for r in ROWS[4:]]


def test_directory_without_split_file_reads_all_shards(tmp_path: Path) -> None:
    data = tmp_path / "shards"
    data.mkdir()
    write_jsonl(data / "part-0.jsonl", ROWS[:3])
    write_jsonl(data / "part-1.jsonl", ROWS[3:])
    assert questions(load_taskset(config(data))) == [r["question"] for r in ROWS]


def test_relative_path_resolves_against_base_dir(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "tasks.jsonl", ROWS)
    loaded = load_taskset(config("tasks.jsonl"), base_dir=tmp_path)
    assert len(loaded.tasks) == len(ROWS)


def test_malformed_json_line_is_skipped_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text(
        json.dumps(ROWS[0]) + "\n" + '{"question": "broken", \n' + "\n" + json.dumps(ROWS[1]) + "\n"
    )
    loaded = load_taskset(config(path))
    assert questions(loaded) == [ROWS[0]["question"], ROWS[1]["question"]]
    assert len(loaded.invalid) == 1
    bad = loaded.invalid[0]
    assert bad.taskset == "arith"
    assert f"{path}:2" in bad.error  # file and 1-based line number
    assert "malformed JSON" in bad.error


def test_non_object_json_line_is_reported(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "train.jsonl", ROWS[:1], extra=["[1, 2, 3]"])
    loaded = load_taskset(config(path))
    assert len(loaded.tasks) == 1
    assert f"{path}:2" in loaded.invalid[0].error
    assert "expected a JSON object, got list" in loaded.invalid[0].error


def test_strict_stops_at_the_malformed_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "train.jsonl", ROWS[:2], extra=["{not json"])
    with pytest.raises(TasksetError) as err:
        load_taskset(config(path, strict=True))
    assert f"{path}:3" in str(err.value)
    assert "taskset 'arith'" in str(err.value)


@pytest.mark.parametrize("missing", ["question", "answer"])
def test_row_missing_prompt_or_answer_is_reported(tmp_path: Path, missing: str) -> None:
    rows = [dict(r) for r in ROWS[:3]]
    del rows[1][missing]
    loaded = load_taskset(config(write_jsonl(tmp_path / "train.jsonl", rows)))
    assert [t.task_id for t in loaded.tasks] == [0, 2]
    assert len(loaded.invalid) == 1
    bad = loaded.invalid[0]
    assert bad.row == 1 and bad.where.endswith("train.jsonl:2")
    assert "train.jsonl:2: missing" in bad.error
    assert f"missing key(s) ['{missing}']" in bad.error


def test_row_missing_key_in_strict_mode_raises(tmp_path: Path) -> None:
    rows = [dict(r) for r in ROWS[:2]]
    del rows[0]["answer"]
    with pytest.raises(TasksetError, match=r"train\.jsonl:1: missing key\(s\) \['answer'\]"):
        load_taskset(config(write_jsonl(tmp_path / "train.jsonl", rows), strict=True))


def test_limit_and_shuffle_are_deterministic(tmp_path: Path) -> None:
    rows = [{"question": f"q{i}", "answer": str(i)} for i in range(50)]
    path = write_jsonl(tmp_path / "train.jsonl", rows)

    assert questions(load_taskset(config(path, limit=5))) == [f"q{i}" for i in range(5)]

    once = questions(load_taskset(config(path, shuffle=True, seed=3)))
    again = questions(load_taskset(config(path, shuffle=True, seed=3)))
    other_seed = questions(load_taskset(config(path, shuffle=True, seed=4)))
    assert once == again
    assert sorted(once) == sorted(f"q{i}" for i in range(50))
    assert once != [f"q{i}" for i in range(50)]
    assert other_seed != once

    limited = load_taskset(config(path, shuffle=True, seed=3, limit=7))
    assert questions(limited) == once[:7]  # limit applies after the shuffle
    # a task keeps the id of its row, wherever the shuffle puts it
    assert [f"q{t.task_id}" for t in limited.tasks] == once[:7]


def test_nonexistent_path_names_taskset_and_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "train.jsonl"
    with pytest.raises(TasksetError) as err:
        load_taskset(config(missing, name="my-set"))
    assert "my-set" in str(err.value)
    assert str(missing) in str(err.value)


def test_directory_with_no_data_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(TasksetError, match=re.escape("no .jsonl/.json/.parquet/.csv files")):
        read_rows(config(tmp_path / "empty"))


def test_unreadable_parquet_is_a_taskset_error(tmp_path: Path) -> None:
    path = tmp_path / "train.parquet"
    path.write_bytes(b"this is not parquet")
    with pytest.raises(TasksetError, match="taskset 'arith': cannot read"):
        load_taskset(config(path))


def _gym_config(**kw: Any) -> TasksetConfig:
    return TasksetConfig(
        name="gym",
        reasoning_gym={"name": "basic_arithmetic", "size": 5, "seed": 1},
        format={"prompt_key": "question", "response_key": "answer"},
        default_workflow_type="math_boxed_workflow",
        **kw,
    )


def test_reasoning_gym_source_is_deterministic() -> None:
    first = load_taskset(_gym_config())
    assert first.invalid == []
    assert len(first.tasks) == 5
    for task in first.tasks:
        row = task.raw_task
        assert set(row) == {"question", "answer", "metadata"}
        assert isinstance(row["question"], str) and row["question"]
        assert isinstance(row["answer"], str) and row["answer"]
        assert row["metadata"]["source_dataset"] == "basic_arithmetic"
        json.dumps(row)  # plain data: it must cross process boundaries
    second = load_taskset(_gym_config())
    assert [t.raw_task for t in second.tasks] == [t.raw_task for t in first.tasks]


def test_reasoning_gym_unknown_dataset_names_it() -> None:
    cfg = TasksetConfig(
        name="gym",
        reasoning_gym={"name": "no_such_dataset_xyz", "size": 2},
        default_workflow_type="math_boxed_workflow",
    )
    with pytest.raises(TasksetError, match="no_such_dataset_xyz"):
        load_taskset(cfg)


def test_a_taskset_with_no_usable_row_is_an_error_with_one_summary(tmp_path: Path) -> None:
    rows = [{"prompt": f"q{i}", "answer": str(i)} for i in range(512)]
    path = write_jsonl(tmp_path / "train.jsonl", rows)
    with pytest.raises(TasksetError) as err:
        load_taskset(config(path))
    assert str(err.value) == (
        f"taskset 'arith': {path}: 0 usable tasks of 512 row(s): every row: missing key(s) "
        "['question'] (format.prompt_key='question', format.response_key='answer'; row keys: "
        "['answer', 'prompt']; first: train.jsonl:1, train.jsonl:2, train.jsonl:3, ...)"
    )
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(TasksetError, match=r"empty\.jsonl has no rows"):
        load_taskset(config(tmp_path / "empty.jsonl"))


def test_skipped_rows_are_counted_by_cause_in_one_line(tmp_path: Path) -> None:
    rows = [dict(r) for r in ROWS]
    del rows[1]["answer"], rows[3]["answer"]
    path = write_jsonl(tmp_path / "train.jsonl", rows, extra=["{oops"])
    loaded = load_taskset(config(path))
    assert [t.task_id for t in loaded.tasks] == [0, 2, 4, 5]
    assert loaded.summary() == (
        f"taskset 'arith': {path}: skipped 3 of 7 row(s): 1 row(s): malformed JSON "
        "(Expecting property name enclosed in double quotes at column 2; first: train.jsonl:7); "
        "2 row(s): missing key(s) ['answer'] (format.prompt_key='question', "
        "format.response_key='answer'; row keys: ['question']; first: train.jsonl:2, "
        "train.jsonl:4)"
    )
    assert [bad.where for bad in loaded.invalid] == [f"{path}:7", f"{path}:2", f"{path}:4"]


def test_parquet_rows_are_named_file_row_n(tmp_path: Path) -> None:
    rows = [{"question": "q0", "answer": "0"}, {"question": None, "answer": "1"}]
    path = write_parquet(tmp_path / "train.parquet", rows)
    loaded = load_taskset(config(path))
    assert [bad.where for bad in loaded.invalid] == [f"{path}:row 2"]
    assert "first: train.parquet:row 2)" in loaded.summary()


def test_a_dataset_folder_is_read_for_its_split_only(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict

    folder = tmp_path / "hf" / "data"
    folder.mkdir(parents=True)
    Dataset.from_list(ROWS[:3]).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    Dataset.from_list(ROWS[3:5]).to_parquet(str(folder / "test-00000-of-00001.parquet"))
    train = load_taskset(config(tmp_path / "hf"))
    assert [t.raw_task["question"] for t in train.tasks] == [r["question"] for r in ROWS[:3]]
    test = load_taskset(config(tmp_path / "hf", split="test"))
    assert [t.raw_task["question"] for t in test.tasks] == [r["question"] for r in ROWS[3:5]]
    with pytest.raises(TasksetError, match=r"splits \['test', 'train'\] but not 'validation'"):
        load_taskset(config(tmp_path / "hf", split="validation"))

    saved = tmp_path / "saved"
    DatasetDict(
        {"train": Dataset.from_list(ROWS[:2]), "test": Dataset.from_list(ROWS[2:3])}
    ).save_to_disk(str(saved))
    assert len(load_taskset(config(saved)).tasks) == 2
    assert len(load_taskset(config(saved, split="test")).tasks) == 1
    with pytest.raises(TasksetError, match="not 'dev'"):
        load_taskset(config(saved, split="dev"))


def test_split_folders_are_never_mixed(tmp_path: Path) -> None:
    """Splits named by folder (``train/``, ``test/``) as ``datasets`` names them."""
    folder = tmp_path / "hf"
    for split, part in (("train", ROWS[:4]), ("test", ROWS[4:])):
        (folder / split).mkdir(parents=True)
        write_jsonl(folder / split / "part-0.jsonl", part)
    assert questions(load_taskset(config(folder))) == [r["question"] for r in ROWS[:4]]
    test = load_taskset(config(folder, split="test"))
    assert questions(test) == [r["question"] for r in ROWS[4:]]
    assert test.tasks[0].raw_task == ROWS[4]


def test_an_eval_taskset_must_name_the_split_of_a_folder_with_several(tmp_path: Path) -> None:
    from datasets import Dataset, DatasetDict

    folder = tmp_path / "hf" / "data"
    folder.mkdir(parents=True)
    Dataset.from_list(ROWS[:3]).to_parquet(str(folder / "train-00000-of-00001.parquet"))
    Dataset.from_list(ROWS[3:5]).to_parquet(str(folder / "test-00000-of-00001.parquet"))
    with pytest.raises(TasksetError, match=r"holds the splits \['test', 'train'\]; set `split:`"):
        load_taskset(config(tmp_path / "hf", is_eval=True))
    evaluated = load_taskset(config(tmp_path / "hf", is_eval=True, split="test"))
    assert questions(evaluated) == [r["question"] for r in ROWS[3:5]]

    saved = tmp_path / "saved"
    DatasetDict(
        {"train": Dataset.from_list(ROWS[:2]), "test": Dataset.from_list(ROWS[2:3])}
    ).save_to_disk(str(saved))
    with pytest.raises(TasksetError, match=r"holds the splits \['test', 'train'\]; set `split:`"):
        load_taskset(config(saved, is_eval=True))

    single = tmp_path / "single"
    single.mkdir()
    write_jsonl(single / "rows.jsonl", ROWS[:2])  # no split names: one split
    assert len(load_taskset(config(single, is_eval=True)).tasks) == 2


def test_a_training_taskset_refuses_a_folder_without_a_train_split(tmp_path: Path) -> None:
    folder = tmp_path / "hf"
    folder.mkdir()
    write_jsonl(folder / "test.jsonl", ROWS[:2])
    write_jsonl(folder / "validation.jsonl", ROWS[2:4])
    with pytest.raises(TasksetError, match=r"splits \['test', 'validation'\]; set `split:`"):
        load_taskset(config(folder))
    assert len(load_taskset(config(folder, split="validation")).tasks) == 2


def test_subset_name_picks_a_readme_config(tmp_path: Path) -> None:
    folder = tmp_path / "hf"
    folder.mkdir()
    write_jsonl(folder / "easy.jsonl", ROWS[:2])
    write_jsonl(folder / "hard_train.jsonl", ROWS[2:5])
    write_jsonl(folder / "hard_test.jsonl", ROWS[5:])
    (folder / "README.md").write_text(
        "---\nconfigs:\n- config_name: easy\n  data_files: easy.jsonl\n"
        "- config_name: hard\n  data_files:\n  - split: train\n    path: hard_train.jsonl\n"
        "  - split: test\n    path: hard_test.jsonl\n---\n"
    )
    assert questions(load_taskset(config(folder, subset_name="easy"))) == [
        "What is 0 + 0?",
        "What is 1 + 1?",
    ]
    hard_test = load_taskset(config(folder, subset_name="hard", split="test"))
    assert questions(hard_test) == [ROWS[5]["question"]]
    with pytest.raises(TasksetError, match=r"easy.*hard.*set `subset_name:`"):
        load_taskset(config(folder))
    with pytest.raises(TasksetError, match="subset_name applies to a dataset folder"):
        load_taskset(config(folder / "easy.jsonl", subset_name="easy"))


def test_repeat_times_sets_rollout_args_n_of_every_task(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "train.jsonl", ROWS)
    loaded = load_taskset(config(path, repeat_times=4, rollout_args={"temperature": 0.5}))
    assert {(t.repeat_times, t.rollout_args.n) for t in loaded.tasks} == {(4, 4)}
    assert {t.rollout_args.temperature for t in loaded.tasks} == {0.5}
    assert len({id(t.rollout_args) for t in loaded.tasks}) == 1  # one config, not one per row
