"""ExperiencePipeline: order, metric merge, fault policy, empty batches, sync use."""

from __future__ import annotations

import asyncio
import logging
import math

import pytest

from reinforge.buffer.operators import (
    ExperienceOperator,
    ExperienceOperatorV1,
    OperatorConfigError,
    RewardFilter,
)
from reinforge.buffer.pipeline import ExperiencePipeline, PipelineError
from reinforge.core import EID, Experience, RegistryError


def make_exp(task: int, reward: float | None) -> Experience:
    return Experience(tokens=[1, 2, 3], prompt_length=1, reward=reward, eid=EID(task=task))


class Recorder(ExperienceOperatorV1):
    """Appends its tag to a shared log in every lifecycle call."""

    def __init__(self, tag: str, log: list[str]) -> None:
        self.tag, self.log = tag, log

    async def prepare(self) -> None:
        self.log.append(f"prepare:{self.tag}")

    async def process(self, exps: list[Experience]) -> tuple[list[Experience], dict]:
        self.log.append(f"process:{self.tag}")
        return exps, {f"{self.tag}/seen": float(len(exps)), "shared": self.tag}

    async def close(self) -> None:
        self.log.append(f"close:{self.tag}")


class Exploding(ExperienceOperatorV1):
    """Drops half the batch from its input list, then raises."""

    async def process(self, exps: list[Experience]) -> tuple[list[Experience], dict]:
        del exps[: len(exps) // 2]
        raise RuntimeError("judge timed out")

    async def close(self) -> None:
        raise OSError("socket already closed")


class BadReturn(ExperienceOperator):
    """A legacy operator returning the wrong shape."""

    def process(self, exps):  # type: ignore[override]
        return exps


def test_operators_run_in_order_and_metrics_merge() -> None:
    log: list[str] = []
    pipeline = ExperiencePipeline.from_operators(
        [Recorder("a", log), Recorder("b", log)], names=["a", "b"]
    )
    exps = [make_exp(0, 1.0), make_exp(0, 0.0)]

    async def run() -> tuple[list[Experience], dict]:
        async with pipeline:
            return await pipeline.process(exps)

    out, metrics = asyncio.run(run())
    assert out == exps
    assert log == ["prepare:a", "prepare:b", "process:a", "process:b", "close:a", "close:b"]
    assert metrics == {
        "pipeline/experiences_in": 2.0,
        "a/seen": 2.0,
        "b/seen": 2.0,
        "a/shared": "a",  # each operator's keys under its name: no clash
        "b/shared": "b",
        "pipeline/experiences_out": 2.0,
        "pipeline/errors": 0.0,
        "pipeline/empty_batch": 0.0,
    }


def test_configured_builtins_filter_then_compute_advantages() -> None:
    pipeline = ExperiencePipeline(
        [
            {"name": "invalid_reward_filter"},
            {"name": "reward_std_filter"},
            {"name": "pass_rate_calculator"},
            {"name": "group_advantage", "args": {"algorithm": "grpo"}},
        ]
    )
    assert pipeline.operator_names == [
        "invalid_reward_filter",
        "reward_std_filter",
        "pass_rate_calculator",
        "group_advantage",
    ]
    exps = [
        make_exp(0, 1.0),
        make_exp(0, 0.0),
        make_exp(0, math.nan),
        make_exp(1, 1.0),
        make_exp(1, None),
    ]
    out, metrics = pipeline.process_sync(exps)
    assert out == exps[:2]
    assert [e.info["pass_rate"] for e in out] == [0.5, 0.5]
    assert float(out[0].advantages[0]) > 0 > float(out[1].advantages[0])
    assert metrics["invalid_reward_filter/dropped"] == 2.0
    assert metrics["reward_std_filter/dropped_groups"] == 1.0
    assert metrics["pass_rate_calculator/mean"] == 0.5
    assert metrics["group_advantage/group/count"] == 1.0
    assert metrics["pipeline/experiences_out"] == 2.0


def test_skip_policy_keeps_batch_and_reports_error(caplog: pytest.LogCaptureFixture) -> None:
    log: list[str] = []
    pipeline = ExperiencePipeline.from_operators(
        [Exploding(), Recorder("after", log)], names=["judge", "after"], on_error="skip"
    )
    exps = [make_exp(0, 1.0), make_exp(0, 0.0)]
    with caplog.at_level(logging.WARNING, logger="reinforge.buffer.pipeline"):
        out, metrics = pipeline.process_sync(exps)
    assert out == exps  # the failing operator's edit of its input list does not leak
    assert log == ["process:after"]
    assert metrics["after/seen"] == 2.0
    assert metrics["pipeline/errors"] == 1.0
    assert pipeline.last_errors == ["judge: RuntimeError: judge timed out"]
    assert "judge" in caplog.text

    # The next batch starts with a clean error list.
    ok = ExperiencePipeline.from_operators([Recorder("x", [])])
    ok.process_sync(exps)
    assert ok.last_errors == []


def test_raise_policy_names_the_operator() -> None:
    pipeline = ExperiencePipeline.from_operators(
        [RewardFilter(), Exploding()], names=["keep", "judge"], on_error="raise"
    )
    with pytest.raises(
        PipelineError, match="'judge' failed: RuntimeError: judge timed out"
    ) as info:
        pipeline.process_sync([make_exp(0, 1.0)])
    assert info.value.operator == "judge"
    assert isinstance(info.value.__cause__, RuntimeError)


def test_malformed_operator_result_is_an_operator_error() -> None:
    skip = ExperiencePipeline.from_operators([BadReturn()], names=["bad"])
    out, metrics = skip.process_sync([make_exp(0, 1.0)])
    assert len(out) == 1 and metrics["pipeline/errors"] == 1.0
    assert skip.last_errors[0].startswith("bad: TypeError")
    strict = ExperiencePipeline.from_operators([BadReturn()], names=["bad"], on_error="raise")
    with pytest.raises(PipelineError, match="'bad'"):
        strict.process_sync([make_exp(0, 1.0)])


def test_empty_batch_after_filtering_stops_early() -> None:
    log: list[str] = []
    pipeline = ExperiencePipeline.from_operators(
        [RewardFilter(threshold=2.0), Recorder("never", log)], names=["reward_filter", "never"]
    )
    out, metrics = pipeline.process_sync([make_exp(0, 1.0), make_exp(1, 0.0)])
    assert out == []
    assert log == []
    assert metrics["pipeline/empty_batch"] == 1.0
    assert metrics["reward_filter/dropped"] == 2.0
    assert metrics["pipeline/errors"] == 0.0


def test_empty_input_batch() -> None:
    out, metrics = ExperiencePipeline([{"name": "reward_filter"}]).process_sync([])
    assert out == []
    assert metrics["pipeline/empty_batch"] == 1.0


def test_close_closes_every_operator_then_applies_policy() -> None:
    log: list[str] = []
    skip = ExperiencePipeline.from_operators([Exploding(), Recorder("r", log)], names=["j", "r"])
    asyncio.run(skip.close())
    assert log == ["close:r"]
    assert skip.last_errors == ["j: OSError: socket already closed"]

    strict = ExperiencePipeline.from_operators(
        [Exploding(), Recorder("r", log)], names=["j", "r"], on_error="raise"
    )
    with pytest.raises(PipelineError, match="'j' failed: close"):
        asyncio.run(strict.close())
    assert log == ["close:r", "close:r"]


def test_prepare_failure_always_raises() -> None:
    class BrokenPrepare(Recorder):
        async def prepare(self) -> None:
            raise ConnectionError("no judge server")

    pipeline = ExperiencePipeline.from_operators([BrokenPrepare("p", [])], names=["p"])
    with pytest.raises(PipelineError, match="'p' failed: prepare"):
        asyncio.run(pipeline.prepare())


def test_process_sync_refuses_inside_running_loop() -> None:
    pipeline = ExperiencePipeline([])

    async def inside() -> None:
        with pytest.raises(RuntimeError, match="await process"):
            pipeline.process_sync([])

    asyncio.run(inside())


def test_from_config_and_config_errors() -> None:
    pipeline = ExperiencePipeline.from_config(
        {"operators": [{"name": "reward_filter", "args": {"threshold": 1.0}}], "on_error": "raise"}
    )
    assert pipeline.on_error == "raise"
    assert pipeline.operator_names == ["reward_filter"]
    with pytest.raises(ValueError, match="on_error must be one of"):
        ExperiencePipeline([], on_error="ignore")  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="Known experience operators"):
        ExperiencePipeline([{"name": "nope"}])
    with pytest.raises(OperatorConfigError, match="'reward_filter'"):
        ExperiencePipeline([{"name": "reward_filter", "args": {"thresh": 1}}])


def test_from_operators_wraps_legacy_and_checks_names() -> None:
    pipeline = ExperiencePipeline.from_operators([BadReturn()])
    assert pipeline.operator_names == ["BadReturn"]
    assert isinstance(pipeline.operators[0], ExperienceOperatorV1)
    with pytest.raises(ValueError, match="1 names for 2 operators"):
        ExperiencePipeline.from_operators([RewardFilter(), RewardFilter()], names=["a"])


class FilteredCount(ExperienceOperator):
    """A Trinity-RFT style filter: drops rewards below ``threshold``, reports ``filtered_count``."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold

    def process(self, exps):  # type: ignore[override]
        kept = [e for e in exps if e.reward >= self.threshold]
        return kept, {"filtered_count": len(exps) - len(kept)}


def test_two_filters_reporting_the_same_key_keep_both_counts() -> None:
    pipeline = ExperiencePipeline.from_operators(
        [FilteredCount(0.5), FilteredCount(2.0)], names=["low_reward_filter", "high_bar_filter"]
    )
    exps = [make_exp(0, 1.0), make_exp(0, 0.0), make_exp(1, 0.0), make_exp(1, 3.0)]
    out, metrics = pipeline.process_sync(exps)
    assert [e.reward for e in out] == [3.0]
    assert metrics["low_reward_filter/filtered_count"] == 2
    assert metrics["high_bar_filter/filtered_count"] == 1
    assert "filtered_count" not in metrics
