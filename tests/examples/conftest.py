"""Shared by the example tests: an example's sft.yaml then its grpo.yaml, chained."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture
def sft_then_grpo(tmp_path: Path) -> Callable[[Path], None]:
    """Runs ``example/sft.yaml`` then ``example/grpo.yaml`` as shipped, on the tiny model
    (its weights stand in for SmolLM2's; one step each, no evals), and checks that the
    SFT run trains and checkpoints and that the GRPO run starts from that checkpoint
    through ``model.init_from`` and trains."""

    def chain(example: Path) -> None:
        tiny = ("--set", "model.model_path=tiny-random-smollm2", "--set", "buffer.total_steps=1")
        no_eval = ("--set", "buffer.explorer_input.eval_tasksets=[]")
        sft_dir, grpo_dir = tmp_path / "sft", tmp_path / "grpo"
        sft = CliRunner().invoke(
            app,
            ["run", "-c", str(example / "sft.yaml"), "--run-dir", str(sft_dir), *tiny, *no_eval],
        )
        assert sft.exit_code == 0, sft.output
        assert (sft_dir / "checkpoints" / "step_1" / "state.json").is_file()
        (row,) = [r for r in _metrics(sft_dir) if "train/sft/loss" in r]
        assert row["step"] == 1

        grpo = CliRunner().invoke(
            app,
            [
                "run", "-c", str(example / "grpo.yaml"), "--run-dir", str(grpo_dir), *tiny,
                *no_eval, "--set", f"model.init_from={sft_dir}", "--set", "buffer.batch_size=2",
                "--set", "buffer.explorer_input.taskset.repeat_times=2",
                # the tiny model never wins: keep the all-zero groups, so the step trains
                # (on zero advantages) instead of the run stopping for want of one
                "--set", "buffer.experience_pipeline.operators=[]",
            ],
        )  # fmt: skip
        assert grpo.exit_code == 0, grpo.output
        assert f"starting from the weights of {sft_dir / 'checkpoints' / 'step_1'}" in " ".join(
            grpo.output.split()
        )
        (trained,) = [r for r in _metrics(grpo_dir) if "train/loss" in r]
        assert trained["step"] == 1

    return chain
