"""The ``llm_judge`` operator with real auxiliary model clients over mock engines."""

import asyncio

import pytest

from reinforge.buffer.pipeline import ExperiencePipeline
from reinforge.core import Experience
from reinforge.models.auxiliary import AuxiliaryModelConfig, AuxiliaryModels


def aux(*replies_by_name):
    configs = [
        AuxiliaryModelConfig(name=name, engine="mock", mock={"replies": replies})
        for name, replies in replies_by_name
    ]
    return AuxiliaryModels.from_configs(configs)


def exps(n=4):
    return [
        Experience(
            tokens=[1, 2, 3, 4],
            prompt_length=2,
            reward=1.0,
            response_text=f"reply {i}",
            messages=[{"role": "user", "content": f"question {i}"}],
        )
        for i in range(n)
    ]


def run(pipeline, batch):
    async def go():
        await pipeline.prepare()
        try:
            return await pipeline.process(batch)
        finally:
            await pipeline.close()

    return asyncio.run(go())


def test_replace_mode_sets_the_judge_score_as_reward():
    models = aux(("judge", {"reply 0": '{"score": 0.9}', ".": '{"score": 0.2}'}))
    pipeline = ExperiencePipeline([{"name": "llm_judge"}], models.for_operators())
    out, metrics = run(pipeline, exps())
    models.close()
    assert [e.reward for e in out] == [0.9, 0.2, 0.2, 0.2]
    assert metrics["llm_judge/scored"] == 4 and metrics["llm_judge/failed"] == 0
    assert metrics["llm_judge/score_mean"] == pytest.approx(0.375)


def test_add_and_filter_modes_pick_the_named_judge():
    models = aux(
        ("other", ['{"score": 0.0}']),
        ("grader", {"reply 1": '{"score": 1}', ".": '{"score": 0.4}'}),
    )
    add = ExperiencePipeline(
        [{"name": "llm_judge", "args": {"judge": "grader", "mode": "add", "weight": 0.5}}],
        models.for_operators(),
    )
    out, _ = run(add, exps())
    assert [e.reward for e in out] == [1.2, 1.5, 1.2, 1.2]
    keep = ExperiencePipeline(
        [{"name": "llm_judge", "args": {"judge": "grader", "mode": "filter", "threshold": 0.5}}],
        models.for_operators(),
    )
    out, metrics = run(keep, exps())
    models.close()
    assert [e.response_text for e in out] == ["reply 1"]
    assert metrics["llm_judge/dropped"] == 3


def test_failures_are_dropped_and_counted_by_reason_or_kept():
    models = aux(("judge", {"reply 0": "no idea", ".": '{"score": 1.5}'}))
    out, metrics = run(ExperiencePipeline([{"name": "llm_judge"}], models.for_operators()), exps())
    assert out == []
    assert metrics["llm_judge/failed/unparseable"] == 1
    assert metrics["llm_judge/failed/out_of_range"] == 3
    keep = ExperiencePipeline(
        [{"name": "llm_judge", "args": {"on_failure": "keep"}}], models.for_operators()
    )
    out, _ = run(keep, exps())
    models.close()
    assert [e.reward for e in out] == [1.0] * 4  # unchanged


def test_unknown_judge_name_names_the_operator_and_the_declared_models():
    models = aux(("judge", ['{"score": 1}']))
    pipeline = ExperiencePipeline(
        [{"name": "llm_judge", "args": {"judge": "nope"}}], models.for_operators()
    )
    with pytest.raises(
        Exception, match=r"operator llm_judge asks for auxiliary model 'nope'.*\['judge'\]"
    ):
        run(pipeline, exps())
    models.close()


def test_bad_mode_is_a_config_error():
    from reinforge.buffer.operators import OperatorConfigError

    with pytest.raises(OperatorConfigError, match="mode must be"):
        ExperiencePipeline([{"name": "llm_judge", "args": {"mode": "maybe"}}])
