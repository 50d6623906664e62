"""The explorer loop end to end with the mock engine and a real SQLite buffer."""

import asyncio
import json

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
