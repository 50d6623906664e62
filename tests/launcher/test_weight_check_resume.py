"""A run stopped by a failed weight check, resumed once the sync is fixed, never trains
what the broken sync's engine sampled, and loses nothing stored before.

The run's check is decided behind the sync, so the explorer samples the next step from
the synced engine before the verdict. ``mode: both`` stores such a step only once the
check has passed (``Explorer.before_store``): here the engine keeps its weights at the
first sync, the step sampled from them is never stored, and the same command run
again samples that step anew from checked weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.explorer.explorer import Explorer
from reinforge.models.engines.hf import HFEngine
from reinforge.trainer.trainer import Trainer

CONFIG = """
project: check
name: resume
seed: 11
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 4
  # the broken sync below keeps the engine on its old weights: a freed engine has none
  # and they break the copying sync: the engine keeps a copy, not the trainer's tensors
  hf: {free_weights_while_training: false, share_weights_with_trainer: false}
buffer:
  batch_size: 2
  total_steps: 3
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 4
      default_workflow_type: rf_resume_plugin.Parity
trainer: {algorithm: grpo, lr: 1.0e-3}
explorer: {eval_on_start: false}
monitor: {progress: false, tensorboard: false, plot: false}
"""


def _stored(run_dir: Path) -> dict[str, tuple[str, int]]:
    """uid -> (explore step, model version) of every experience in the run's buffer."""
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        return {
            e.eid.uid: (str(e.eid.batch), int(e.info["model_version"]))
            for e in storage.iter_experiences()
        }
    finally:
        storage.close()


def test_a_resume_after_a_failed_check_does_not_train_what_the_broken_sync_sampled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tasks.jsonl").write_text(
        "".join(f'{{"question": "{i} + 1", "answer": "{i + 1}"}}\n' for i in range(6))
    )
    plugin = Path(__file__).with_name("parity_workflow.py").read_text()
    (tmp_path / "rf_resume_plugin.py").write_text(plugin)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    monkeypatch.syspath_prepend(str(tmp_path))
    run_dir = tmp_path / "run"
    command = ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]

    # what the explorer sampled, with the engine version it sampled from, and what the
    # trainer was given, across both runs
    sampled: dict[str, int] = {}
    trained: list[str] = []
    real_run_tasks = Explorer._run_tasks

    async def recording(self: Explorer, *args: Any, **kwargs: Any) -> Any:
        results = await real_run_tasks(self, *args, **kwargs)
        for r in results:
            sampled.update({e.eid.uid: self.engine.model_version for e in r.experiences})
        return results

    real_step = Trainer.train_step

    def counting(self: Trainer, exps: Any, *args: Any, **kwargs: Any) -> Any:
        trained.extend(e.eid.uid for e in exps)
        return real_step(self, exps, *args, **kwargs)

    def version_only(self: HFEngine, buckets: Any, version: int | None = None) -> None:
        self._model_version = int(version or 0)  # reports the version, keeps the weights

    monkeypatch.setattr(Explorer, "_run_tasks", recording)
    monkeypatch.setattr(Trainer, "train_step", counting)
    with monkeypatch.context() as broken:
        broken.setattr(HFEngine, "receive_weights", version_only)
        result = CliRunner().invoke(app, command)
    assert result.exit_code == 4, (result.exception, result.output[-2000:])
    assert "weight check failed after the sync to version 1" in " ".join(result.output.split())
    # the broken engine did sample step 2 (8 rollouts) before the verdict came
    bad = {uid for uid, version in sampled.items() if version == 1}
    assert len(bad) == 8
    before = _stored(run_dir)
    assert {step for step, _ in before.values()} == {"1"}  # step 1 only...
    assert not bad & before.keys()  # ...none of what the failed version sampled
    assert len(before) == 8 and len(trained) == 8

    trained.clear()
    result = CliRunner().invoke(app, command)  # the same command, the sync fixed
    assert result.exit_code == 0, (result.exception, result.output[-2000:])
    assert "resuming at step 2" in " ".join(result.output.split())
    assert trained, "the resumed run trained nothing"
    assert not bad & set(trained)  # never trained what the failed sync's engine sampled
    after = _stored(run_dir)
    assert before.items() <= after.items()  # nothing stored before is lost or changed
    assert not bad & after.keys()
    # steps 2 and 3 were sampled again, from the checked syncs (versions 1 and 2)
    assert sorted({v for s, v in after.values() if s != "1"}) == [1, 2]
    assert {s for s, _ in after.values()} == {"1", "2", "3"}
