"""The explorer loop end to end with the mock engine and a real SQLite buffer."""

import asyncio
import json
import threading
from collections import Counter

import pytest

from reinforge import REWARD_FUNCTIONS, WORKFLOWS, RewardFn, Workflow
from reinforge.buffer import SQLiteExperienceStorage
from reinforge.config import config_from_dict
from reinforge.core import Experience
from reinforge.explorer import Explorer


@REWARD_FUNCTIONS.register_module("test_boxed_int")
class BoxedInt(RewardFn):
    def __call__(self, response, truth=None, prompt=None, **kwargs):
        return {"accuracy": float(f"\\boxed{{{truth}}}" in response)}


@WORKFLOWS.register_module("test_fails_on_odd")
class FailsOnOdd(Workflow):
    def run(self):
        if int(self.task.raw_task["answer"]) % 2:
            raise ValueError("odd answers are not supported")
        return [Experience(tokens=[5, 6, 7], prompt_length=1, reward=1.0)]


def write_taskset(path, n, extra_lines=()):
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"question": f"What is {i} + 1?", "answer": str(i + 1)}) + "\n")
        for line in extra_lines:
            fh.write(line + "\n")
    return path


def make_config(tmp_path, workflow="simple_workflow", reward="test_boxed_int", **buffer):
    data = {
        "run_dir": str(tmp_path / "run"),
        "model": {"engine": "mock", "mock": {"policy": "arithmetic", "error_rate": 0.3}},
        "buffer": {
            "batch_size": 8,
            "explorer_input": {
                "taskset": {
                    "name": "arith",
                    "path": "tasks.jsonl",
                    "format": {"prompt_key": "question", "response_key": "answer"},
                    "repeat_times": 4,
                    "default_workflow_type": workflow,
                    "default_reward_fn_type": reward,
                },
                "eval_tasksets": [
                    {
                        "name": "arith-eval",
                        "path": "tasks.jsonl",
                        "limit": 5,
                        "format": {"prompt_key": "question", "response_key": "answer"},
                        "repeat_times": 4,
                        "default_workflow_type": "simple_workflow",
                        "default_reward_fn_type": "test_boxed_int",
                    }
                ],
            },
            **buffer,
        },
        "explorer": {"runner_concurrency": 4, "max_timeout": 10},
    }
    return config_from_dict(data, config_dir=str(tmp_path))


def run_explore(cfg):
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )
    try:
        return asyncio.run(explorer.explore())
    finally:
        explorer.close()


def test_explore_stores_every_experience_with_ids(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 20)
    cfg = make_config(tmp_path)
    summary = run_explore(cfg)
    assert summary.steps == 3 and summary.tasks == 20 and summary.experiences == 80
    assert summary.status_counts == {"ok": 20}
    storage = SQLiteExperienceStorage(cfg.storage_path)
    exps = storage.read()
    assert len(exps) == 80
    groups = Experience.group_by(exps, "task")
    assert len(groups) == 20 and all(len(g) == 4 for g in groups.values())
    assert {e.eid.batch for e in exps} == {1, 2, 3}
    assert all(e.info["model_version"] == 0 for e in exps)
    assert 0 < summary.metrics["explore/accuracy"] < 1


def test_total_steps_limits_the_run(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 40)
    summary = run_explore(make_config(tmp_path, total_steps=2))
    assert summary.steps == 2 and summary.experiences == 64


def test_epochs_repeat_the_taskset(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 8)
    summary = run_explore(make_config(tmp_path, total_epochs=2))
    assert summary.steps == 2 and summary.tasks == 16


def test_failures_and_malformed_rows_are_recorded_and_run_continues(tmp_path):
    write_taskset(
        tmp_path / "tasks.jsonl",
        10,
        extra_lines=['{"question": "broken', '{"question": "no answer"}'],
    )
    cfg = make_config(tmp_path, workflow="test_fails_on_odd", reward=None)
    summary = run_explore(cfg)
    storage = SQLiteExperienceStorage(cfg.storage_path)
    failed = storage.task_results("failed")
    invalid = storage.task_results("invalid")
    ok = storage.task_results("ok")
    assert len(ok) == 5 * 4 and len(failed) == 5 * 4  # not can_repeat: one request per repeat
    assert all("odd answers are not supported" in r.error for r in failed)
    assert len(invalid) == 2
    assert any("tasks.jsonl:11: malformed JSON" in r.error for r in invalid)
    assert any("tasks.jsonl:12: missing key(s) ['answer']" in r.error for r in invalid)
    assert storage.count() == summary.experiences == 20


def test_unknown_workflow_fails_before_any_work(tmp_path):
    from reinforge.core import RegistryError

    write_taskset(tmp_path / "tasks.jsonl", 4)
    with pytest.raises(RegistryError, match="unknown workflow 'nope'"):
        run_explore(make_config(tmp_path, workflow="nope"))


def test_second_run_appends_and_loses_nothing(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path)
    run_explore(cfg)
    run_explore(cfg)
    assert SQLiteExperienceStorage(cfg.storage_path).count() == 64


def test_evaluate_reports_pass_metrics(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path)
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )
    try:
        metrics = asyncio.run(explorer.evaluate())
    finally:
        explorer.close()
    p = "eval/arith-eval/"
    for key in ("mean@4", "std@4", "best@2", "worst@2", "best@4", "worst@4"):
        assert p + key in metrics
    assert metrics[p + "worst@4"] <= metrics[p + "mean@4"] <= metrics[p + "best@4"]
    assert metrics[p + "tasks"] == 5


@WORKFLOWS.register_module("test_trinity_reward_call", force=True)
class TrinityRewardCall(Workflow):
    """Written as Trinity-RFT's guide writes it: the task's reward_fn is a class."""

    def run(self):
        reward_fn = self.task.reward_fn(**self.task.reward_fn_args)
        exps = self.model.chat([{"role": "user", "content": self.task.raw_task["question"]}])
        for exp in exps:
            exp.reward = float(reward_fn(exp.response_text, self.task.truth)["accuracy"])
        return exps


def test_trinity_workflows_call_the_tasks_reward_fn(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path, workflow="test_trinity_reward_call", reward="math_boxed_reward")
    summary = run_explore(cfg)
    assert summary.status_counts == {"ok": 32}
    assert summary.metrics["explore/reward_mean"] > 0


RELEASE = threading.Event()


@WORKFLOWS.register_module("test_hangs_in_a_thread", force=True)
class HangsInAThread(Workflow):
    """Odd questions hand a call that never returns to the loop's default executor,
    through ``asyncio.to_thread`` or ``loop.run_in_executor(None, ...)``."""

    is_async = True
    can_repeat = True

    async def run_async(self):
        answer = int(self.task.raw_task["answer"])
        if answer % 4 == 1:
            await asyncio.to_thread(RELEASE.wait)
        elif answer % 4 == 3:
            await asyncio.get_running_loop().run_in_executor(None, RELEASE.wait)
        exps = await self.model.chat_async(
            [{"role": "user", "content": self.task.raw_task["question"]}], n=self.repeat_times
        )
        for exp in exps:
            exp.reward = 1.0
        return exps


def test_hung_threads_of_async_workflows_time_out_and_the_run_finishes(tmp_path):
    """More hung calls than the default executor has threads (6 on 2 cores): the
    explorer's own writes must not queue behind them, and each task times out."""
    RELEASE.clear()
    write_taskset(tmp_path / "tasks.jsonl", 16)
    cfg = make_config(tmp_path, workflow="test_hangs_in_a_thread", reward=None, total_steps=2)
    cfg.explorer.max_timeout = 1.0
    cfg.explorer.max_retry_times = 0
    try:
        summary = run_explore(cfg)
    finally:
        RELEASE.set()
    assert summary.status_counts == {"ok": 8, "timeout": 8}
    storage = SQLiteExperienceStorage(cfg.storage_path)
    assert storage.count() == 8 * 4
    assert len(storage.task_results("timeout")) == 8


def test_each_task_is_recorded_once_when_a_step_runs_again(tmp_path, monkeypatch):
    """A process killed while it stores a step runs that step again on resume: its
    tasks must end with one record each, not one per attempt."""
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path, total_steps=1)
    real_write = SQLiteExperienceStorage.write

    def killed_while_storing(self, experiences, state=None, task_records=None):
        if experiences:
            raise SystemExit("killed")
        return real_write(self, experiences, state, task_records)

    monkeypatch.setattr(SQLiteExperienceStorage, "write", killed_while_storing)
    with pytest.raises(SystemExit):
        run_explore(cfg)
    monkeypatch.setattr(SQLiteExperienceStorage, "write", real_write)
    run_explore(cfg)  # the resumed run does step 1 again
    storage = SQLiteExperienceStorage(cfg.storage_path)
    records = storage.task_results()
    assert len(records) == 8  # simple_workflow makes its 4 repeats in one request
    assert storage.count() == 8 * 4


def test_eval_run_again_at_the_same_step_records_each_task_once(tmp_path):
    """An eval pass repeated after a resume replaces its records instead of adding more."""
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path)
    for _ in range(2):
        explorer = Explorer.from_config(
            cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
        )
        try:
            asyncio.run(explorer.evaluate(step=3))
        finally:
            explorer.close()
    records = SQLiteExperienceStorage(cfg.storage_path).task_results()
    assert sorted(r.task for r in records if r.taskset == "arith-eval") == [
        str(i) for i in range(5)
    ]


def test_eval_records_each_tasks_mean_score(tmp_path):
    """Each eval task's record holds the mean score of its runs, so two policies can be
    compared task by task; together they give the eval's mean@n."""
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path)
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )
    try:
        metrics = asyncio.run(explorer.evaluate(step=2))
    finally:
        explorer.close()
    records = [
        r for r in SQLiteExperienceStorage(cfg.storage_path).task_results() if r.batch == "eval2"
    ]
    scores = [r.score for r in records]
    assert len(scores) == 5 and all(s in (0.0, 0.25, 0.5, 0.75, 1.0) for s in scores)
    assert len(set(scores)) > 1  # the mock policy errs on 30% of answers
    assert sum(scores) / len(scores) == pytest.approx(metrics["eval/arith-eval/mean@4"])


# ---- repeat_times: the number of rollouts per task, however a workflow makes them ----


@WORKFLOWS.register_module("test_samples_rollout_args_n")
class SamplesRolloutArgsN(Workflow):
    """A Trinity-RFT style workflow: all rollouts in one call, ``n=self.rollout_args.n``."""

    can_repeat = True

    def __init__(self, *, task, model, auxiliary_models=None):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.rollout_args = task.rollout_args

    def run(self):
        exps = self.model.chat(
            [{"role": "user", "content": self.task.raw_task["question"]}],
            n=self.rollout_args.n,
        )
        for i, exp in enumerate(exps):
            exp.reward = 1.0
            exp.eid.run = self.run_id_base + i
        return exps


@WORKFLOWS.register_module("test_one_rollout_per_run")
class OneRolloutPerRun(Workflow):
    """Not ``can_repeat``: one rollout per call, sampled with the task's ``rollout_args.n``."""

    def run(self):
        return self.model.chat(
            [{"role": "user", "content": self.task.raw_task["question"]}],
            n=self.task.rollout_args.n,
        )


def test_a_workflow_sampling_rollout_args_n_gets_repeat_times_rollouts(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path, workflow="test_samples_rollout_args_n", reward=None, total_steps=1)
    assert cfg.buffer.explorer_input.taskset.rollout_args.n == 1  # not set in the YAML
    summary = run_explore(cfg)
    assert summary.status_counts == {"ok": 8}
    exps = SQLiteExperienceStorage(cfg.storage_path).read()
    per_task = Counter(e.eid.task for e in exps)
    assert len(per_task) == 8 and set(per_task.values()) == {4}  # repeat_times: 4
    assert {e.eid.run for e in exps} == {0, 1, 2, 3}


def test_the_explorer_runs_a_non_repeating_workflow_repeat_times_times(tmp_path):
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path, workflow="test_one_rollout_per_run", reward=None, total_steps=1)
    summary = run_explore(cfg)
    assert summary.tasks == 8 and summary.status_counts == {"ok": 32}  # one request per run
    exps = SQLiteExperienceStorage(cfg.storage_path).read()
    runs = {(e.eid.task, e.eid.run) for e in exps}
    assert len(exps) == len(runs) == 32  # each run makes one rollout: its copy's n is 1
    assert {run for _, run in runs} == {0, 1, 2, 3}


@pytest.mark.parametrize(
    ("buffer", "steps"),
    [({}, 3), ({"total_epochs": 2}, 6), ({"total_steps": 2}, 2), ({"batch_size": 5}, 4)],
)
def test_the_explorer_says_how_many_steps_it_plans(tmp_path, buffer, steps):
    """Asked before the taskset is opened (a train-only process), the explorer counts
    its tasks without recording its invalid rows; after, it counts what it opened."""
    write_taskset(tmp_path / "tasks.jsonl", 20, extra_lines=['{"question": "no answer"}'])
    cfg = make_config(tmp_path, **buffer)
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )
    try:
        assert explorer.planned_steps() == steps
        assert explorer.storage.task_results() == []
        cursor = explorer.open_taskset()
        assert explorer.planned_steps() == cursor.total == steps
        assert len(explorer.storage.task_results("invalid")) == 1
    finally:
        explorer.close()


def test_a_step_stored_while_the_run_is_interrupted_is_logged(tmp_path, monkeypatch, rows):
    """Ctrl-C lands while a step is being stored: the write finishes in its thread, so
    the step is stored and a resumed run starts after it; its row must be logged
    before the interrupt goes on, or no run ever logs it."""
    write_taskset(tmp_path / "tasks.jsonl", 8)
    cfg = make_config(tmp_path, total_steps=2)
    real_write = SQLiteExperienceStorage.write
    writing, release = threading.Event(), threading.Event()

    def slow_write(self, experiences, state=None, task_records=None):
        if experiences:
            writing.set()
            release.wait(10)
        return real_write(self, experiences, state, task_records)

    monkeypatch.setattr(SQLiteExperienceStorage, "write", slow_write)
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir,
        reporter=rows,
    )  # fmt: skip

    async def interrupted_while_storing():
        cursor = explorer.open_taskset()
        step = asyncio.ensure_future(explorer.explore_step(cursor))
        await asyncio.to_thread(writing.wait, 10)
        step.cancel()
        await asyncio.sleep(0.05)
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await step

    try:
        asyncio.run(interrupted_while_storing())
    finally:
        explorer.close()
    storage = SQLiteExperienceStorage(cfg.storage_path)
    assert storage.read_state("explorer")["step"] == 1 and storage.count() == 8 * 4
    assert [row["step"] for row in rows.rows] == [1]
