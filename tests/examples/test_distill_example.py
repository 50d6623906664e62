"""``examples/distill/opd.yaml`` (on-policy distillation) runs through the CLI: with mock
engines for student and teacher (explore only: the buffer's experiences carry the
teacher's log-probs), and trained on the tiny random model as student and teacher (the
teacher's log-probs reach the loss and the student's weights move)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import yaml
from safetensors.torch import load_file
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "distill"


def shrunk(tmp_path: Path, *, mock: bool, model: Path | None = None) -> Path:
    """The example with absolute data paths, two steps of 2 tasks and no eval; with
    ``mock`` student and teacher are mock engines, else both are ``model``."""
    cfg = yaml.safe_load((EXAMPLE / "opd.yaml").read_text())
    buffer = cfg["buffer"]
    buffer.update(total_steps=2, batch_size=2)
    inputs = buffer["explorer_input"]
    inputs["taskset"]["path"] = str((EXAMPLE / inputs["taskset"]["path"]).resolve())
    inputs["eval_tasksets"] = []
    cfg["explorer"]["eval_interval"] = None
    (teacher,) = cfg["explorer"]["auxiliary_models"]
    if mock:
        cfg["mode"] = "explore"
        cfg["model"] = {"engine": "mock", "mock": {"policy": "arithmetic", "error_rate": 0.3}}
        for key in ("model_path", "hf"):
            teacher.pop(key)
        teacher.update(engine="mock")
    else:
        cfg["model"].update(model_path=str(model), hf={"dtype": "float32"})
        teacher.update(model_path=str(model), hf={"dtype": "float32"})
        cfg["trainer"].update(lr=1e-3, mixed_precision="no", gradient_checkpointing=False)
    path = tmp_path / "opd.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def weights(folder: Path) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for file in sorted(folder.glob("*.safetensors")):
        out.update(load_file(str(file)))
    assert out, f"no *.safetensors in {folder}"
    return out


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def stored(run_dir: Path):
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return list(storage.iter_experiences())
    finally:
        storage.close()


def test_example_config_is_trinitys_on_policy_distill() -> None:
    cfg = yaml.safe_load((EXAMPLE / "opd.yaml").read_text())
    assert cfg["trainer"]["algorithm"] == "on_policy_distill"
    taskset = cfg["buffer"]["explorer_input"]["taskset"]
    assert taskset["default_workflow_type"] == "on_policy_distill_workflow"
    assert taskset["workflow_args"]["temperature"] == 0.5
    assert len(cfg["explorer"]["auxiliary_models"]) == 1


def test_example_explores_with_mock_engines(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["explore", "-c", str(shrunk(tmp_path, mock=True)), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, result.output
    assert [r["step"] for r in rows(run_dir) if "explore/tasks" in r] == [1, 2]
    exps = stored(run_dir)
    assert len(exps) == 2 * 2 * 4  # steps x tasks x repeat_times
    for exp in exps:
        assert len(exp.teacher_logprobs) == exp.response_length > 0
        # the mock teacher at temperature 0.5: the student's made-up log-probs, doubled
        torch.testing.assert_close(exp.teacher_logprobs, 2.0 * exp.logprobs)
        assert exp.reward == 0.0


def test_example_trains_the_student_on_the_teachers_logprobs(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    run_dir = tmp_path / "run"
    config = shrunk(tmp_path, mock=False, model=tiny_model_path)
    result = CliRunner().invoke(app, ["run", "-c", str(config), "--run-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    trained = [r for r in rows(run_dir) if "train/loss" in r]
    assert [r["step"] for r in trained] == [1, 2]
    for row in trained:
        # the teacher (T = 0.5) disagrees with the student: nonzero advantages, gradient
        assert abs(row["train/distill/reverse_kl"]) > 1e-3, row
        assert (
            row["train/distill/teacher_logprob_mean"] != row["train/distill/student_logprob_mean"]
        )
        assert row["train/grad_norm"] > 0
    before = weights(tiny_model_path)
    after = weights(run_dir / "checkpoints" / "step_2" / "model")
    assert any(not torch.equal(v, after[k]) for k, v in before.items() if k in after)
