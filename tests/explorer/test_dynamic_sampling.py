"""``explorer.dynamic_sampling``: a step explores further batches until the experience
pipeline kept ``min_groups`` task groups (mock engine, real SQLite buffer)."""

import asyncio
import json

import pytest

from reinforge import WORKFLOWS, Workflow
from reinforge.buffer import SQLiteExperienceStorage
from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.config import ConfigError, config_from_dict
from reinforge.core import EID, Experience
from reinforge.explorer import Explorer


@WORKFLOWS.register_module("test_mixed_when_flagged", force=True)
class MixedWhenFlagged(Workflow):
    """A group's rewards differ (0, 1, 0, 1) when its row says ``mixed``, else all are 1:
    which groups ``reward_std_filter`` keeps is fixed by the taskset."""

    can_repeat = True

    def run(self):
        mixed = self.task.raw_task["mixed"]
        return [
            Experience(
                tokens=[5, 6, 7],
                prompt_length=1,
                reward=float(i % 2) if mixed else 1.0,
                eid=EID(run=self.run_id_base + i),
            )
            for i in range(self.repeat_times)
        ]


def write_tasks(path, n, mixed_every=4):
    """``n`` rows; every ``mixed_every``-th one (3, 7, 11, ...) has a mixed group."""
    with open(path, "w") as fh:
        for i in range(n):
            row = {"question": f"q{i}", "answer": "1", "mixed": i % mixed_every == mixed_every - 1}
            fh.write(json.dumps(row) + "\n")


def make_config(tmp_path, sampling, **buffer):
    return config_from_dict(
        {
            "run_dir": str(tmp_path / "run"),
            "model": {"engine": "mock"},
            "buffer": {
                "batch_size": 8,
                "explorer_input": {
                    "taskset": {
                        "name": "flags",
                        "path": "tasks.jsonl",
                        "format": {"prompt_key": "question", "response_key": "answer"},
                        "repeat_times": 4,
                        "default_workflow_type": "test_mixed_when_flagged",
                    }
                },
                **buffer,
            },
            "explorer": {"runner_concurrency": 4, "max_timeout": 10, "dynamic_sampling": sampling},
        },
        config_dir=str(tmp_path),
    )


def open_explorer(cfg, rows=None):
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir,
        reporter=rows,
    )  # fmt: skip
    explorer.pipeline = ExperiencePipeline([{"name": "reward_std_filter"}])
    return explorer


def explore_steps(cfg, steps, rows=None):
    """Run ``steps`` explore steps (resuming after what is stored); the step outputs."""
    explorer = open_explorer(cfg, rows)

    async def go():
        cursor = explorer.open_taskset()
        stored = explorer.storage.read_state("explorer")
        if stored:
            cursor.restore(stored)
        return [await explorer.explore_step(cursor) for _ in range(steps)]

    try:
        return asyncio.run(go())
    finally:
        explorer.close()


def stored_tasks(cfg):
    storage = SQLiteExperienceStorage(cfg.storage_path)
    try:
        exps = storage.read()
        return {(e.eid.batch, e.eid.task) for e in exps}, exps, storage.read_state("explorer")
    finally:
        storage.close()


def test_a_step_explores_batches_until_it_kept_min_groups(tmp_path, rows):
    write_tasks(tmp_path / "tasks.jsonl", 48)
    cfg = make_config(tmp_path, {"min_groups": 5, "max_batches": 4})
    (out,) = explore_steps(cfg, 1, rows)
    # 2 mixed groups per batch of 8: 2, 4, 6 >= 5 after the third batch
    assert out.step == 1 and out.num_tasks == 24
    groups, exps, state = stored_tasks(cfg)
    assert groups == {(1, t) for t in (3, 7, 11, 15, 19, 23)}
    assert len(exps) == 6 * 4 and all(e.eid.batch == 1 for e in exps)
    assert state == {"epoch": 0, "offset": 24, "step": 1}
    (row,) = rows.rows
    assert row["explore/batches"] == 3 and row["explore/kept_groups"] == 6
    assert row["explore/tasks"] == 24 and row["explore/stored"] == 24
    # the pipeline's metrics are those of the three batches together
    assert row["reward_std_filter/groups"] == 24 and row["reward_std_filter/dropped_groups"] == 18
    assert row["pipeline/experiences_in"] == 96 and row["pipeline/experiences_out"] == 24
    assert row["pipeline/empty_batch"] == 0
    assert rows.phases == [
        "step 1 (epoch 1)",
        "step 1 (epoch 1), batch 2",
        "step 1 (epoch 1), batch 3",
    ]


def test_max_batches_ends_a_step_short_of_min_groups(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", 48)
    cfg = make_config(tmp_path, {"min_groups": 5, "max_batches": 2})
    outs = explore_steps(cfg, 2)
    assert [o.num_tasks for o in outs] == [16, 16]
    assert [o.metrics["explore/kept_groups"] for o in outs] == [4, 4]
    groups, _, state = stored_tasks(cfg)
    assert groups == {(1, t) for t in (3, 7, 11, 15)} | {(2, t) for t in (19, 23, 27, 31)}
    assert state["offset"] == 32


def test_a_step_with_enough_groups_explores_one_batch(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", 16, mixed_every=1)  # every group mixed
    cfg = make_config(tmp_path, {"min_groups": 8})
    outs = explore_steps(cfg, 2)
    assert [o.metrics["explore/batches"] for o in outs] == [1, 1]
    assert [o.num_tasks for o in outs] == [8, 8]


def test_a_step_stops_at_the_end_of_its_epoch(tmp_path):
    """20 tasks: step 1 takes 8 + 8 + 4 and keeps 5 groups; step 2 starts epoch 2, so
    no task is in a step twice (a group id is step/task)."""
    write_tasks(tmp_path / "tasks.jsonl", 20)
    cfg = make_config(tmp_path, {"min_groups": 8, "max_batches": 10}, total_epochs=2)
    outs = explore_steps(cfg, 3)
    assert [o.num_tasks for o in outs[:2]] == [20, 20] and outs[2] is None
    assert [o.metrics["explore/kept_groups"] for o in outs[:2]] == [5, 5]
    groups, exps, _ = stored_tasks(cfg)
    assert {t for b, t in groups if b == 1} == {t for b, t in groups if b == 2}
    assert len(exps) == 2 * 5 * 4


def test_a_resumed_run_continues_after_the_stored_step(tmp_path):
    """The cursor stored with a step is past every batch it explored: a new process
    starts the next step there, taking no task twice."""
    write_tasks(tmp_path / "tasks.jsonl", 48)
    cfg = make_config(tmp_path, {"min_groups": 3})
    explore_steps(cfg, 1)  # 2 batches: 16 tasks, 4 groups
    (out,) = explore_steps(cfg, 1)
    assert out.step == 2 and out.num_tasks == 16
    groups, _, state = stored_tasks(cfg)
    assert groups == {(1, t) for t in (3, 7, 11, 15)} | {(2, t) for t in (19, 23, 27, 31)}
    assert state == {"epoch": 0, "offset": 32, "step": 2}


def test_without_dynamic_sampling_a_step_is_one_batch(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", 16)
    cfg = make_config(tmp_path, None)
    outs = explore_steps(cfg, 2)
    assert [o.num_tasks for o in outs] == [8, 8]
    assert "explore/batches" not in outs[0].metrics
    assert [o.stored for o in outs] == [8, 8]  # 2 mixed groups of 4 each


@pytest.mark.parametrize(
    ("sampling", "message"),
    [
        ({"min_groups": 0}, "min_groups"),
        ({"max_batches": 2}, "min_groups"),
        ({"min_groups": 4, "max_batches": 0}, "max_batches"),
        ({"min_groups": 4, "batches": 2}, "batches"),
    ],
)
def test_a_bad_dynamic_sampling_section_names_its_field(tmp_path, sampling, message):
    with pytest.raises(ConfigError, match=message):
        make_config(tmp_path, sampling)
