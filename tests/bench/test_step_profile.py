"""bench/step_profile.py: the phases it times are the phases a step runs.

One demo-configured trainer step on the tiny model (activation checkpointing on, as
in the demo): the profiler must see the forward passes, the backward, the decoder
layers recomputed inside the backward, the logits, the optimizer, and the
prompt-sharing metrics; and its table's top-level phases must add up to the step.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import pytest
import torch

from reinforge.core import Experience
from reinforge.core.eid import EID


def _batch() -> list[Experience]:
    g = torch.Generator().manual_seed(0)
    exps = []
    for task in range(2):
        prompt = torch.randint(5, 400, (6,), generator=g).tolist()
        for run in range(4):
            reply = torch.randint(5, 400, (2 + run,), generator=g).tolist()
            exp = Experience(
                tokens=torch.tensor(prompt + reply),
                prompt_length=len(prompt),
                action_mask=torch.ones(len(reply), dtype=torch.bool),
                logprobs=torch.full((len(reply),), -1.0),
                reward=float(run % 2),
            )
            exp.eid = EID(batch=1, task=task, run=run)
            exps.append(exp)
    return exps


def test_a_demo_step_is_split_into_its_phases(
    step_profile: ModuleType, tiny_model_path: Path, capsys: pytest.CaptureFixture
) -> None:
    cfg = step_profile.trainer_config({})
    assert cfg.gradient_checkpointing and cfg.micro_batch_size == 16  # the demo's trainer
    run = step_profile.train_step(tiny_model_path, {}, _batch(), 2)
    seconds = run["seconds"]
    for phase in (
        "forward passes (policy)",
        "backward",
        "decoder",
        "decoder recompute",  # checkpointing replays the layers inside the backward
        "logits",
        "optimizer (clip + AdamW)",
        "preparation (advantages, order, collate, layout)",
    ):
        assert seconds.get(phase, 0.0) > 0, phase
    assert seconds["decoder recompute"] < seconds["backward"]
    assert seconds["decoder"] < seconds["forward passes (policy)"]
    assert run["metrics"]["train/prompt_sharing/shared_rows"] == 1.0

    flops = step_profile.step_flops(tiny_model_path, {}, _batch(), 2)
    assert flops["forward"] > 0 and flops["recompute"] == flops["forward"]
    assert flops["step"] == pytest.approx(4 * flops["forward"])
    step_profile.print_train("demo", [run], flops, peak=10.0)
    table = capsys.readouterr().out
    top = [
        line
        for line in table.splitlines()
        if line.startswith("  ") and not line.startswith(("    ", "  phase"))
    ]
    shares = [float(next(t for t in line.split() if t.endswith("%"))[:-1]) for line in top]
    assert len(shares) == 6  # preparation, forward, backward, optimizer, housekeeping, rest
    assert math.isclose(sum(shares), 100, abs_tol=len(shares))  # rounded to whole %


def test_unshared_setting_reaches_the_trainer(step_profile: ModuleType) -> None:
    cfg = step_profile.trainer_config({"share_prompts": False, "mixed_precision": "no"})
    assert not cfg.share_prompts and cfg.mixed_precision == "no"
    assert cfg.algorithm == "grpo" and cfg.algorithm_args["kl_loss"] == "none"


def test_matmul_rate_is_measured(step_profile: ModuleType) -> None:
    rate = step_profile.matmul_gflops(torch.float32, 64, 64, 64, seconds=0.05)
    assert math.isfinite(rate) and rate > 0
