"""Judge-scored workflows (RULER, trainable RULER, rubric, reward model) end to end:
mock policy, mock or failing judges, the real explorer and SQLite buffer."""

import asyncio
import json
from concurrent.futures import Future

import pytest

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.config import config_from_dict
from reinforge.explorer import Explorer

SCORES4 = '{"scores": [1, 0.5, 0, 0.25]}'


def write_tasks(path, n=6, rubric=False):
    with open(path, "w") as fh:
        for i in range(n):
            row = {"question": f"What is {i} + 2?", "answer": str(i + 2)}
            if rubric:
                row["rubric"] = [
                    {"description": "states the number", "weight": 2},
                    "is polite",
                ]
            fh.write(json.dumps(row) + "\n")


def config(tmp_path, workflow, judges, *, workflow_args=None, policy_replies=None, n=4, **explorer):
    write_tasks(tmp_path / "tasks.jsonl", rubric=workflow == "rubric_judge_workflow")
    mock = {"policy": "arithmetic", "error_rate": 0.4}
    if policy_replies:
        mock["replies"] = policy_replies
    data = {
        "run_dir": str(tmp_path / "run"),
        "model": {"engine": "mock", "mock": mock},
        "buffer": {
            "batch_size": 6,
            "explorer_input": {
                "taskset": {
                    "name": "t",
                    "path": "tasks.jsonl",
                    "format": {"prompt_key": "question", "response_key": "answer"},
                    "repeat_times": n,
                    "default_workflow_type": workflow,
                    "workflow_args": workflow_args or {},
                },
            },
        },
        "explorer": {
            "runner_concurrency": 3,
            "max_timeout": 20,
            "max_retry_times": 0,
            "auxiliary_models": judges,
            **explorer,
        },
    }
    return config_from_dict(data, config_dir=str(tmp_path))


def mock_judge(reply, name="judge", **extra):
    return {"name": name, "engine": "mock", "mock": {"replies": [reply]}, **extra}


def one_step(cfg):
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )

    async def go():
        return await explorer.explore_step(explorer.open_taskset())

    try:
        return asyncio.run(go())
    finally:
        explorer.close()


def stored(cfg):
    storage = SQLiteExperienceStorage(cfg.storage_path)
    try:
        return storage.read(), storage.task_results()
    finally:
        storage.close()


def test_ruler_scores_become_rewards_gold_kept_as_metric(tmp_path):
    cfg = config(tmp_path, "math_ruler_workflow", [mock_judge(SCORES4)])
    out = one_step(cfg)
    assert out.metrics["explore/masked_experiences"] == 0
    assert out.metrics["explore/workflow/judge_success/mean"] == 1.0
    assert "explore/workflow/gold_reward/mean" in out.metrics
    by_task = {}
    for exp in out.experiences:
        by_task.setdefault(exp.eid.task, []).append(exp.reward)
        assert "gold_reward" in exp.metrics and "accuracy" in exp.metrics
    # shuffled for the judge, mapped back: each group holds exactly the judge's scores
    assert all(sorted(r) == [0, 0.25, 0.5, 1] for r in by_task.values())
    orders = {tuple(r) for r in by_task.values()}
    assert len(orders) > 1  # different tasks, different shuffles
    exps, _ = stored(cfg)
    assert len(exps) == 24


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I cannot decide.", "judge_unparseable"),
        ('{"scores": [2, 0, 0, 0]}', "judge_out_of_range"),
        ('{"scores": [1, 0]}', "judge_unparseable"),
    ],
)
def test_ruler_bad_judge_masks_groups_with_reason_and_run_goes_on(tmp_path, reply, reason):
    cfg = config(tmp_path, "math_ruler_workflow", [mock_judge(reply)])
    out = one_step(cfg)
    assert out.metrics["explore/masked_experiences"] == 24
    assert out.metrics[f"explore/masked/{reason}"] == 24
    assert out.metrics["explore/workflow/judge_success/mean"] == 0.0
    assert out.metrics["explore/workflow/judge_attempts/mean"] == 3.0  # retried
    assert out.experiences == []
    exps, records = stored(cfg)
    assert exps == []
    assert len(records) == 6 and {r.status for r in records} == {"masked"}
    assert all(r.error.startswith(reason) for r in records)


def test_ruler_position_check_reports_consistency(tmp_path):
    cfg = config(
        tmp_path,
        "math_ruler_workflow",
        [mock_judge(SCORES4)],
        workflow_args={"position_check": True},
    )
    out = one_step(cfg)
    # the same reply for two opposite orders: scores disagree wherever order matters
    consistency = out.metrics["explore/workflow/judge_position_consistency/mean"]
    assert 0.0 <= consistency < 1.0
    assert out.metrics["explore/workflow/judge_success/mean"] == 1.0


def test_async_ruler_and_judge_cache(tmp_path):
    cfg = config(tmp_path, "async_math_ruler_workflow", [mock_judge(SCORES4)])
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )

    async def go():
        first = await explorer.explore_step(explorer.open_taskset())
        second = await explorer.explore_step(explorer.open_taskset())
        return first, second

    try:
        first, second = asyncio.run(go())
    finally:
        explorer.close()
    assert first.metrics["explore/workflow/judge_cached/mean"] == 0.0
    # the mock policy repeats itself for the same prompt: identical groups cost nothing
    assert second.metrics["explore/workflow/judge_cached/mean"] == 1.0
    assert explorer.auxiliary.models[0].cache.hits == 6


def test_unknown_judge_name_fails_the_task_naming_both(tmp_path):
    cfg = config(
        tmp_path, "math_ruler_workflow", [mock_judge(SCORES4)], workflow_args={"judge": "grader"}
    )
    out = one_step(cfg)
    assert out.metrics["explore/failed_tasks"] == 6
    error = out.results[0].error
    assert "MathRULERWorkflow" in error and "'grader'" in error and "['judge']" in error


def test_no_auxiliary_model_is_a_clear_error(tmp_path):
    out = one_step(config(tmp_path, "math_ruler_workflow", []))
    assert "declares none" in out.results[0].error


def test_judge_timeout_masks_the_group(tmp_path):
    # an in-process judge that needs far longer than its request_timeout
    judge = mock_judge(SCORES4, request_timeout=0.2, max_judge_attempts=2)
    cfg = config(tmp_path, "math_ruler_workflow", [judge])
    explorer = Explorer.from_config(
        cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path, config_dir=cfg.config_dir
    )
    engine = explorer.auxiliary.models[0].engine
    engine.submit = lambda ids, params: Future()  # never answers

    async def go():
        return await explorer.explore_step(explorer.open_taskset())

    try:
        out = asyncio.run(go())
    finally:
        explorer.close()
    assert out.metrics["explore/masked/judge_timeout"] == 24


def test_unreachable_judge_masks_the_group(tmp_path):
    judge = {
        "name": "remote",
        "engine": "openai",
        "model_path": "some-judge",
        "openai": {"base_url": "http://127.0.0.1:9"},
        "max_judge_attempts": 1,
    }
    out = one_step(config(tmp_path, "math_ruler_workflow", [judge]))
    assert out.metrics["explore/masked/judge_unreachable"] == 24


def test_trainable_ruler_with_gold_puts_the_judgements_in_their_own_group(tmp_path):
    cfg = config(
        tmp_path,
        "math_trainable_ruler_workflow",
        [],
        workflow_args={"gold_probability": 1.0},
        policy_replies={"Candidate 1": "Ranked. " + SCORES4},
    )
    out = one_step(cfg)
    groups = {}
    for exp in out.experiences:
        groups.setdefault(str(exp.eid.task), []).append(exp)
    judge_groups = [g for k, g in groups.items() if k.endswith("-ruler")]
    answer_groups = [g for k, g in groups.items() if not k.endswith("-ruler")]
    assert len(judge_groups) == 6 and len(answer_groups) == 6
    for group in judge_groups:
        assert len(group) == 4 and len({e.eid.run for e in group}) == 4
        assert all(0.0 <= e.reward <= 1.0 for e in group)
        assert all(e.metrics["reward_for_judge"] == e.reward for e in group)
    for group in answer_groups:  # answers keep the gold reward
        assert all(e.reward == e.metrics["gold_reward"] for e in group)
    exps, _ = stored(cfg)
    assert len(exps) == 48


def test_trainable_ruler_without_gold_uses_its_own_scores(tmp_path):
    cfg = config(
        tmp_path,
        "math_trainable_ruler_workflow",
        [],
        workflow_args={"gold_probability": 0.0},
        policy_replies={"Candidate 1": SCORES4},
    )
    out = one_step(cfg)
    assert len(out.experiences) == 24
    assert all(not str(e.eid.task).endswith("-ruler") for e in out.experiences)
    assert {e.reward for e in out.experiences} == {0, 0.25, 0.5, 1}


def test_trainable_ruler_unparseable_self_judgement_is_masked(tmp_path):
    cfg = config(
        tmp_path, "math_trainable_ruler_workflow", [], workflow_args={"gold_probability": 0.0}
    )
    out = one_step(cfg)
    assert out.metrics["explore/masked/judge_unparseable"] == 24


def test_rubric_judge_maps_rating_to_unit_interval(tmp_path):
    cfg = config(tmp_path, "rubric_judge_workflow", [mock_judge('```json\n{"rating": 10}\n```')])
    out = one_step(cfg)
    assert {e.reward for e in out.experiences} == {1.0}
    assert out.metrics["explore/workflow/judge_rating/mean"] == 10.0


def test_rubric_judge_out_of_range_rating_is_masked(tmp_path):
    cfg = config(tmp_path, "rubric_judge_workflow", [mock_judge('{"rating": 11}')])
    out = one_step(cfg)
    assert out.metrics["explore/masked/judge_out_of_range"] == 24


def test_rubric_prompt_carries_the_weighted_criteria(tmp_path):
    from reinforge.workflows.judged.rubric import rubric_lines

    text = rubric_lines([{"description": "states the number", "weight": 2}, "is polite"])
    assert text == "1. (weight 2) states the number\n2. (weight 1) is polite"
    with pytest.raises(ValueError, match="rubric item 1 has no 'description'"):
        rubric_lines([{"weight": 2}])


@pytest.mark.parametrize("workflow", ["math_rm_workflow", "async_math_rm_workflow"])
def test_math_rm_uses_the_reward_model_score_and_keeps_gold(tmp_path, workflow):
    cfg = config(tmp_path, workflow, [mock_judge('{"score": 0.75}', name="rm")])
    out = one_step(cfg)
    assert {e.reward for e in out.experiences} == {0.75}
    assert all("gold_reward" in e.metrics for e in out.experiences)
    assert out.metrics["explore/workflow/judge_success/mean"] == 1.0
