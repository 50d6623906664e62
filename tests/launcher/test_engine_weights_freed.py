"""``mode: both`` frees the hf engine's weights during each training step that a full
sync follows, and the sync brings them back: the run samples, checks (the weight check
asks the engine to score after each sync) and ends as usual. Where the step is not
followed by a sync, overlapped with sampling, or the option is off, the engine keeps
its weights. An engine in the trainer's dtype reads the trainer's tensors from the first
sync on instead (``model.hf.share_weights_with_trainer``): nothing to free then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.launcher.training_loop import TrainingLoop
from reinforge.trainer.trainer import Trainer

CONFIG = """
project: freed
name: run
seed: 5
model: {model_path: tiny-random-smollm2, engine: hf, max_response_tokens: 4}
buffer:
  batch_size: 2
  total_steps: 3
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 4
      default_workflow_type: rf_freed_plugin.Parity
trainer: {algorithm: grpo, lr: 1.0e-3}
explorer: {eval_on_start: false}
monitor: {progress: false, tensorboard: false, plot: false}
"""


def _run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *overrides: str, code: int = 0
) -> tuple[list[tuple], str]:
    """Run the config, expecting exit ``code``; returns, per training step, (engine
    weights released, bytes the engine's parameters hold, whether every engine
    parameter is one of the trainer's tensors) as seen inside the trainer's step, and
    the run's output. Sharing is off unless an override turns it on."""
    (tmp_path / "tasks.jsonl").write_text(
        "".join(f'{{"question": "{i} + 1", "answer": "{i + 1}"}}\n' for i in range(6))
    )
    plugin = Path(__file__).with_name("parity_workflow.py").read_text()
    (tmp_path / "rf_freed_plugin.py").write_text(plugin)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple] = []
    engines: list[Any] = []
    real_init, real_step = TrainingLoop.__init__, Trainer.train_step

    def keep_engine(self: TrainingLoop, session: Any, **kwargs: Any) -> None:
        real_init(self, session, **kwargs)
        engines.append(session.explorer.engine)

    def looking(self: Trainer, *args: Any, **kwargs: Any) -> Any:
        engine = engines[-1]
        held = sum(p.untyped_storage().nbytes() for p in engine.model.parameters())
        own = {p.data_ptr() for p in self.model.parameters()}
        lent = all(p.data_ptr() in own for p in engine.model.parameters())
        seen.append((engine.weights_released, held, lent))
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(TrainingLoop, "__init__", keep_engine)
    monkeypatch.setattr(Trainer, "train_step", looking)
    run_dir = tmp_path / "run"
    command = ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    for item in ("model.hf.share_weights_with_trainer=false", *overrides):
        command += ["--set", item]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == code, (result.exception, result.output[-2000:])
    return seen, " ".join(result.output.split())


def test_each_step_runs_without_the_engine_weights_and_the_sync_restores_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen, _ = _run(tmp_path, monkeypatch)
    assert seen == [(True, 0, False)] * 3  # steps 2 and 3 sampled from the restored weights


@pytest.mark.parametrize(
    "override",
    [
        "model.hf.free_weights_while_training=false",
        "synchronizer.sync_interval=2",  # step 1 is not followed by a sync
    ],
)
def test_the_engine_keeps_its_weights_where_no_full_sync_follows_or_it_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, override: str
) -> None:
    seen, _ = _run(tmp_path, monkeypatch, override)
    assert [(released, lent) for released, _, lent in seen] == [(False, False)] * 3
    assert all(held > 0 for _, held, _ in seen)


def test_a_sync_that_brings_nothing_back_stops_the_run_at_the_weight_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reinforge.models.engines.hf import HFEngine

    def version_only(self: HFEngine, buckets: Any, version: int | None = None) -> None:
        self._model_version = int(version or 0)  # reports the version, loads nothing

    monkeypatch.setattr(HFEngine, "receive_weights", version_only)
    seen, output = _run(tmp_path, monkeypatch, code=4)  # the weight check's exit code
    assert seen == [(True, 0, False)]
    assert "error: weight check after the sync to version 1" in output, output[-1500:]
    assert "could not score the probe" in output and "have not been synced back" in output


def test_an_engine_in_the_trainers_dtype_reads_the_trainers_tensors_after_the_first_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen, output = _run(tmp_path, monkeypatch, "model.hf.share_weights_with_trainer=true")
    # step 1 frees the copy the engine loaded; every sync after it lends the tensors
    assert seen[0] == (True, 0, False)
    assert [(released, lent) for released, _, lent in seen[1:]] == [(False, True)] * 2
    assert "weight check" not in output  # the checks after each sync passed


@pytest.mark.parametrize(
    "overrides",
    [
        ["model.hf.dtype=bfloat16"],  # not the fp32 master weights' dtype
        # the engine samples while the trainer steps
        ["synchronizer.overlap=true", "synchronizer.sync_offset=1"],
        ["synchronizer.sync_interval=2"],  # the engine samples older weights on purpose
    ],
)
def test_the_engine_keeps_a_copy_where_it_may_not_read_the_trainers_tensors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overrides: list[str]
) -> None:
    seen, _ = _run(tmp_path, monkeypatch, "model.hf.share_weights_with_trainer=true", *overrides)
    assert not any(lent for _, _, lent in seen)
    assert all(held > 0 or released for released, held, _ in seen)
