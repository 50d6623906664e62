"""Shared by the example tests: what proves that a run trained, the reward that lets
the tiny random model train, and an example's sft.yaml then its grpo.yaml, chained."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from reinforge.cli.main import app

SAMPLED_TOKEN_REWARD = Path(__file__).with_name("sampled_token_reward.py")
#: ``--set`` overrides that score every experience with ``sampled_token_reward`` (see
#: that file): GRPO groups with reward variance where the tiny model earns nothing
VARYING_REWARD = [
    f"plugins=[{SAMPLED_TOKEN_REWARD}]",
    "buffer.experience_pipeline.operators=[{name: sampled_token_reward}]",
    "buffer.experience_pipeline.on_error=raise",
]


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def model_weights(folder: Path) -> dict[str, torch.Tensor]:
    """The tensors of every ``*.safetensors`` file in ``folder`` (a model directory)."""
    weights: dict[str, torch.Tensor] = {}
    for file in sorted(folder.glob("*.safetensors")):
        weights.update(load_file(str(file)))
    assert weights, f"no *.safetensors in {folder}"
    return weights


def moved(before: dict[str, torch.Tensor], after: dict[str, torch.Tensor]) -> list[str]:
    """The names of the tensors ``after`` holds with other values than ``before``."""
    return [k for k, v in before.items() if k in after and not torch.equal(v, after[k])]


def assert_trained(run_dir: Path, start: Path, step: int) -> None:
    """That ``run_dir``'s GRPO steps had something to learn and learnt it: a trained
    step with nonzero advantages (so a nonzero policy gradient), and the weights of
    its ``checkpoints/step_{step}`` differ from those it started from (``start``, a
    model directory). A run whose optimizer never steps fails the second check; one
    whose groups are all flat (advantages 0, nothing to learn) fails the first."""
    trained = [r for r in _metrics(run_dir) if "train/loss" in r]
    assert trained, "no trained step in metrics.jsonl"
    signal = [r for r in trained if r["train/advantage/std"] > 0 and r["train/grad_norm"] > 0]
    assert signal, [(r["step"], r["train/advantage/std"], r["train/grad_norm"]) for r in trained]
    after = model_weights(run_dir / "checkpoints" / f"step_{step}" / "model")
    changed = moved(model_weights(start), after)
    assert changed, f"step_{step} holds the weights it started from"


@pytest.fixture
def varying_reward() -> list[str]:
    """``VARYING_REWARD``: the ``--set`` overrides that score with ``sampled_token_reward``."""
    return list(VARYING_REWARD)


@pytest.fixture
def assert_run_trained() -> Callable[[Path, Path, int], None]:
    """``assert_trained``: nonzero advantages, and weights moved from the start's."""
    return assert_trained


@pytest.fixture
def sft_then_grpo(tmp_path: Path, tiny_model_path: Path) -> Callable[..., None]:
    """Runs ``example/sft.yaml`` then ``example/grpo.yaml`` (or the RL config named) as
    shipped, on the tiny model (its weights stand in for SmolLM2's; one step each, no
    evals), and checks that the
    SFT run trains (its checkpoint's weights differ from the tiny model's) and that the
    GRPO run starts from that checkpoint through ``model.init_from`` and trains from it
    (nonzero advantages, weights moved away from the SFT checkpoint's). The tiny model
    never wins, so the GRPO run is scored by ``sampled_token_reward``."""

    def chain(example: Path, rl_config: str = "grpo.yaml") -> None:
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
        sft_model = sft_dir / "checkpoints" / "step_1" / "model"
        changed = moved(model_weights(tiny_model_path), model_weights(sft_model))
        assert changed, "the SFT checkpoint holds the tiny model's weights"

        grpo = CliRunner().invoke(
            app,
            [
                "run", "-c", str(example / rl_config), "--run-dir", str(grpo_dir), *tiny,
                *no_eval, "--set", f"model.init_from={sft_dir}", "--set", "buffer.batch_size=2",
                "--set", "buffer.explorer_input.taskset.repeat_times=2",
                "--set", "trainer.lr=1.0e-3",
                # the tiny model never wins: a reward of what it sampled gives the
                # groups variance, so the step has advantages to train on
                *(x for item in VARYING_REWARD for x in ("--set", item)),
            ],
        )  # fmt: skip
        assert grpo.exit_code == 0, grpo.output
        assert f"starting from the weights of {sft_dir / 'checkpoints' / 'step_1'}" in " ".join(
            grpo.output.split()
        )
        (trained,) = [r for r in _metrics(grpo_dir) if "train/loss" in r]
        assert trained["step"] == 1
        assert_trained(grpo_dir, sft_model, step=1)

    return chain
