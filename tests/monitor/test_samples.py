"""Sample completions: which experiences are picked, and TensorBoard text read back."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from reinforge.core import EID, Experience
from reinforge.monitor import ConsoleReporter, JsonlMetrics, TensorBoardSink
from reinforge.monitor.samples import MAX_CHARS, sample_completions, samples_markdown


def _exp(task: int, run: int, **kw) -> Experience:
    kw.setdefault("prompt_text", f"What is {task} + {task}?")
    kw.setdefault("response_text", f"{2 * task} (run {run})")
    return Experience(
        tokens=[1, 2, 3, 4], prompt_length=2, reward=float(run == 0), eid=EID(3, task, run), **kw
    )


def _batch(tasks: int = 8, runs: int = 4) -> list[Experience]:
    return [_exp(t, r) for t in range(tasks) for r in range(runs)]


def test_one_sample_per_task_spread_over_the_batch() -> None:
    samples = sample_completions(_batch(), k=4)
    assert [s["task"] for s in samples] == ["0", "2", "4", "6"]
    assert all(s["run"] == 0 for s in samples)
    first = samples[0]
    assert first == {
        "task": "0",
        "run": 0,
        "reward": 1.0,
        "response_length": 2,
        "truncated": False,
        "prompt": "What is 0 + 0?",
        "response": "0 (run 0)",
    }
    assert sample_completions(_batch(), k=4) == samples  # deterministic


def test_fewer_tasks_than_samples_fill_up_with_more_runs() -> None:
    samples = sample_completions(_batch(tasks=2, runs=3), k=4)
    assert [(s["task"], s["run"]) for s in samples] == [("0", 0), ("1", 0), ("0", 1), ("0", 2)]
    assert sample_completions([], k=4) == [] and sample_completions(_batch(), k=0) == []


def test_multi_turn_experiences_use_their_messages_and_long_text_is_clipped() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "find the mail"},
        {"role": "assistant", "content": "search('x')"},
        {"role": "tool", "content": "[] no results"},
        {"role": "assistant", "content": "none found"},
    ]
    exp = _exp(1, 0, prompt_text=None, response_text=None, messages=messages)
    (sample,) = sample_completions([exp], k=1)
    assert sample["prompt"] == "find the mail"
    assert (
        sample["response"] == "assistant: search('x')\ntool: [] no results\nassistant: none found"
    )
    (long,) = sample_completions([_exp(1, 0, response_text="y" * (MAX_CHARS + 10))], k=1)
    assert long["response"].startswith("y" * MAX_CHARS) and "[10 more chars]" in long["response"]


def test_markdown_shows_text_verbatim_in_code_blocks() -> None:
    text = samples_markdown(sample_completions([_exp(1, 0, response_text="**x**\n<b>")], k=1))
    assert "**task 1, run 0**: reward 1, 2 response tokens" in text
    assert "    **x**\n    <b>" in text


def test_tensorboard_shows_the_samples_of_each_step(tmp_path: Path) -> None:
    """Through the reporter, as the run loop calls it: sinks without log_samples are skipped."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    tb = TensorBoardSink(tmp_path / "tb")
    jsonl = JsonlMetrics(tmp_path / "metrics.jsonl")
    reporter = ConsoleReporter(
        console=Console(file=io.StringIO()), sinks=[jsonl, tb], samples_per_step=2
    )
    reporter.samples(1, _batch())
    reporter.samples(2, [_exp(5, 0, response_text="ten")])
    reporter.samples(3, [])  # nothing to show: no event
    reporter.close()
    acc = EventAccumulator(str(tmp_path / "tb"), size_guidance={"tensors": 0})
    acc.Reload()
    assert acc.Tags()["tensors"] == ["samples/text_summary"]
    events = acc.Tensors("samples/text_summary")
    assert [e.step for e in events] == [1, 2]
    first = events[0].tensor_proto.string_val[0].decode()
    assert "**task 0, run 0**" in first and "**task 4, run 0**" in first
    assert "    What is 4 + 4?" in first and first.count("---") == 1
    assert "    ten" in events[1].tensor_proto.string_val[0].decode()
    assert jsonl.read() == []  # the JSONL sink got no samples
