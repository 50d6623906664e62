"""``examples/distributed/grpo.yaml``: ``reinforge run`` trains with 2 trainer ranks (FSDP2
on gloo), reports ``train/world_size`` 2, writes a checkpoint that the same command
resumes with 1 rank, and exports a plain model folder."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from reinforge.cli.main import app

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "distributed" / "grpo.yaml"


def _run(run_dir: Path, overrides: list[str]) -> None:
    args = ["run", "-c", str(CONFIG), "--run-dir", str(run_dir)]
    for item in [*overrides, "monitor.progress=false", "monitor.tensorboard=false"]:
        args += ["--set", item]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.exception, result.output[-3000:])


def _trained(run_dir: Path) -> list[dict]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "train/loss" in r]


def test_two_ranks_train_and_one_rank_resumes(
    tmp_path: Path, tiny_model_path: Path, varying_reward: list[str], assert_run_trained
) -> None:
    run_dir = tmp_path / "run"
    small = [
        "model.model_path=tiny-random-smollm2", "model.max_response_tokens=6",
        "buffer.batch_size=2", "buffer.explorer_input.taskset.repeat_times=4",
        "buffer.explorer_input.eval_tasksets=[]", "trainer.micro_batch_size=2",
        "trainer.lr=1.0e-3", "trainer.gradient_checkpointing=false",
        "checkpoint.save_interval=1", "checkpoint.max_checkpoints_to_keep=3",
        *varying_reward,
    ]  # fmt: skip
    _run(run_dir, [*small, "buffer.total_steps=2"])
    trained = _trained(run_dir)
    assert [r["step"] for r in trained] == [1, 2]
    assert all(r["train/world_size"] == 2.0 for r in trained)
    assert_run_trained(run_dir, tiny_model_path, 2)
    step_2 = run_dir / "checkpoints" / "step_2"
    assert (step_2 / "optim").is_dir()  # the sharded optimizer state
    assert json.loads((step_2 / "state.json").read_text())["world_size"] == 2

    # the same run, one more step, on one rank: resumes from the 2-rank checkpoint
    _run(run_dir, [*small, "buffer.total_steps=3", "trainer.parallel.world_size=1"])
    trained = _trained(run_dir)
    assert [r["step"] for r in trained] == [1, 2, 3]
    assert trained[-1]["train/world_size"] == 1.0
    assert (run_dir / "checkpoints" / "step_3" / "optim.pt").is_file()

    out = tmp_path / "exported"
    result = CliRunner().invoke(app, ["export", str(run_dir), str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
