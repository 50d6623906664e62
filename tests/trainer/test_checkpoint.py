"""Checkpoints: round trips, pruning, crash leftovers, corrupt files, export, weight source."""

from __future__ import annotations

import copy
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.models.engines.hf import HFEngine
from reinforge.trainer.checkpoint import (
    CheckpointManager,
    export_model,
    load_trainer,
    read_state,
    save_trainer,
)
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_sync import CheckpointWeightSource

PAD = 2


def _experiences(seed: int = 0) -> list[Experience]:
    """Two groups of four random sequences (6 prompt + 5 response tokens) with rewards."""
    gen = torch.Generator().manual_seed(seed)
    exps = []
    for i in range(8):
        tokens = torch.randint(3, 1000, (11,), generator=gen)
        exps.append(
            Experience(
                tokens=tokens, prompt_length=6, reward=float(i % 2), eid=EID(1, i // 4, i % 4)
            )
        )
    return exps


def _trainer(path: Path, lora: bool) -> Trainer:
    cfg = TrainerConfig.model_validate(
        {
            "algorithm": "dapo",
            "lr": 1e-2,
            "warmup_steps": 3,
            "lora": {"enabled": lora, "r": 4, "alpha": 8},
        }
    )
    return Trainer(path, cfg, pad_token_id=PAD)


def _save(manager: CheckpointManager, trainer: Trainer, **extra: Any) -> Path:
    return manager.save(trainer.global_step, lambda f: {**save_trainer(trainer, f), **extra})


def _load(manager: CheckpointManager, trainer: Trainer) -> tuple[Path, Any] | None:
    return manager.load_latest(lambda path, state: load_trainer(trainer, path, state))


def _assert_same_model(a: Any, b: Any) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert torch.equal(sa[key], sb[key]), key


def _logits(model: Any, ids: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model(input_ids=ids).logits


IDS = torch.tensor([[1, 520, 77, 3001, 12, 9]])


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_round_trip_restores_everything(tiny_model_path: Path, tmp_path: Path, lora: bool) -> None:
    manager = CheckpointManager(tmp_path / "ckpt")
    source = _trainer(tiny_model_path, lora)
    for _ in range(2):
        source.train_step(_experiences())
    folder = _save(manager, source, trained_step=2)
    assert folder.name == "step_2"
    state = read_state(folder)
    assert state["global_step"] == 2 and state["model_version"] == 2
    assert state["lora"] is lora and state["trained_step"] == 2

    target = _trainer(tiny_model_path, lora)
    loaded = _load(manager, target)
    assert loaded is not None and loaded[0] == folder
    assert target.global_step == 2 and target.model_version == 2
    _assert_same_model(target.model, source.model)
    assert target.scheduler.state_dict() == source.scheduler.state_dict()
    opt_a, opt_b = source.optimizer.state_dict(), target.optimizer.state_dict()
    assert opt_a["param_groups"] == opt_b["param_groups"]
    assert opt_a["state"].keys() == opt_b["state"].keys() and opt_a["state"]
    for key, value in opt_a["state"].items():
        for name, tensor in value.items():
            assert torch.equal(tensor, opt_b["state"][key][name]), (key, name)

    # the restored trainer continues exactly like the original
    source.train_step(_experiences(1))
    target.train_step(_experiences(1))
    _assert_same_model(target.model, source.model)


def test_pruning_and_leftover_temporary_folders(tiny_model_path: Path, tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path / "ckpt", max_to_keep=2)
    trainer = _trainer(tiny_model_path, lora=True)
    for step in range(1, 5):
        trainer.global_step = step
        _save(manager, trainer)
    assert [p.name for p in manager.list()] == ["step_3", "step_4"]
    assert sorted(p.name for p in manager.root.iterdir()) == ["step_3", "step_4"]

    # a save killed mid-way leaves a hidden temporary folder: never listed nor loaded
    leftover = manager.root / ".tmp-step_9-12345"
    (leftover / "model").mkdir(parents=True)
    (leftover / "state.json").write_text('{"step": 9, "global_step": 9, "model_version": 9}')
    assert [p.name for p in manager.list()] == ["step_3", "step_4"]
    loaded = _load(manager, _trainer(tiny_model_path, lora=True))
    assert loaded is not None and loaded[0].name == "step_4"

    # a save whose writer fails publishes nothing and cleans up after itself
    def broken(folder: Path) -> dict[str, Any]:
        (folder / "partial").write_text("x")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        manager.save(5, broken)
    assert [p.name for p in manager.list()] == ["step_3", "step_4"]
    assert not list(manager.root.glob(".tmp-step_5-*"))


@pytest.mark.parametrize("damage", ["truncated_weights", "garbage_optimizer"])
def test_corrupt_newest_checkpoint_falls_back(
    tiny_model_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, lora=False)
    trainer.train_step(_experiences())
    good = copy.deepcopy(trainer.model.state_dict())
    _save(manager, trainer)
    trainer.train_step(_experiences(1))
    newest = _save(manager, trainer)
    if damage == "truncated_weights":
        weights = newest / "model" / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
    else:
        (newest / "optim.pt").write_bytes(b"this is not a torch file")

    fresh = _trainer(tiny_model_path, lora=False)
    with caplog.at_level(logging.WARNING, logger="reinforge.trainer.checkpoint"):
        loaded = _load(manager, fresh)
    assert loaded is not None and loaded[0].name == "step_1"
    assert fresh.global_step == 1 and fresh.model_version == 1
    assert any("step_2" in r.getMessage() and "unusable" in r.getMessage() for r in caplog.records)
    for key, value in fresh.model.state_dict().items():
        assert torch.equal(value, good[key]), key


def test_unloadable_checkpoints_leave_the_trainer_untouched(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, lora=False)
    trainer.train_step(_experiences())
    only = _save(manager, trainer)
    (only / "optim.pt").write_bytes(b"garbage")  # the weights are fine, the optimizer is not

    fresh = _trainer(tiny_model_path, lora=False)
    before = copy.deepcopy(fresh.model.state_dict())
    assert _load(manager, fresh) is None
    assert fresh.global_step == 0 and fresh.model_version == 0
    for key, value in fresh.model.state_dict().items():
        assert torch.equal(value, before[key]), key


def test_lora_checkpoint_refused_by_a_full_trainer(tiny_model_path: Path, tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path / "ckpt")
    lora = _trainer(tiny_model_path, lora=True)
    lora.train_step(_experiences())
    _save(manager, lora)
    assert _load(manager, _trainer(tiny_model_path, lora=False)) is None


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_export_writes_a_plain_hf_model(tiny_model_path: Path, tmp_path: Path, lora: bool) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, lora)
    trainer.train_step(_experiences())
    folder = _save(manager, trainer)
    out = export_model(folder, tiny_model_path, tmp_path / "export")
    assert (out / "config.json").is_file() and not (out / "adapter_config.json").exists()
    exported = AutoModelForCausalLM.from_pretrained(out, local_files_only=True)
    assert not hasattr(exported, "peft_config")
    assert AutoTokenizer.from_pretrained(out, local_files_only=True).encode("hi there")
    trainer.model.eval()
    expected = _logits(trainer.model, IDS)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_path, local_files_only=True)
    assert float((_logits(base, IDS) - expected).abs().max()) > 1e-3  # training changed it
    torch.testing.assert_close(_logits(exported, IDS), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_checkpoint_weight_source(
    tiny_model_path: Path, tmp_path: Path, lora: bool, tiny_model_and_tokenizer: tuple[Any, Any]
) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, lora)
    source = CheckpointWeightSource(manager, tiny_model_path)
    tokens = IDS[0].tolist()
    with HFEngine(model=copy.deepcopy(model), tokenizer=tokenizer, device="cpu") as engine:
        assert source.maybe_update(engine) is False  # no checkpoint yet
        for _ in range(2):
            trainer.train_step(_experiences())
            _save(manager, trainer)
        trainer.model.eval()
        with torch.no_grad():
            expected = torch.log_softmax(_logits(trainer.model, IDS)[0, :-1], -1)
        expected = expected.gather(-1, IDS[0, 1:, None])[:, 0]

        assert source.maybe_update(engine) is True
        assert engine.model_version == 2
        torch.testing.assert_close(torch.tensor(engine.score(tokens)), expected, atol=1e-4, rtol=0)
        assert source.maybe_update(engine) is False  # nothing newer

        # an engine already ahead of every checkpoint is left alone
        behind = CheckpointWeightSource(manager, tiny_model_path)
        engine.update_weights({}, version=5)
        assert behind.maybe_update(engine) is False
        assert engine.model_version == 5

        # the newest checkpoint is corrupt: the previous one is loaded instead
        trainer.train_step(_experiences())
        newest = _save(manager, trainer)
        name = "adapter_model.safetensors" if lora else "model.safetensors"
        (newest / "model" / name).write_bytes(b"broken")
        engine.update_weights({}, version=0)
        assert CheckpointWeightSource(manager, tiny_model_path).maybe_update(engine) is True
        assert engine.model_version == 2


def test_a_save_killed_between_its_renames_leaves_a_checkpoint(
    tiny_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saving the same step again sets the old copy aside; a kill right after that
    must not leave the run with no checkpoint (it trained from the base weights)."""
    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, lora=False)
    trainer.train_step(_experiences())
    _save(manager, trainer)
    real_replace = os.replace

    def killed_after_first_rename(src, dst):
        real_replace(src, dst)
        if Path(dst).name.startswith(".old-"):
            raise SystemExit("killed")

    monkeypatch.setattr(os, "replace", killed_after_first_rename)
    with pytest.raises(SystemExit):
        _save(manager, trainer)
    monkeypatch.setattr(os, "replace", real_replace)
    restarted = CheckpointManager(tmp_path / "ckpt")
    # the restarted trainer puts the set-aside copy back (list() alone only reads)
    assert _load(restarted, _trainer(tiny_model_path, lora=False)) is not None
    assert [p.name for p in restarted.list()] == [f"step_{trainer.global_step}"]
    _save(restarted, trainer)  # the next save clears what the killed one left
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == [f"step_{trainer.global_step}"]


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_reader_listing_mid_save_does_not_break_the_save(
    tiny_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer polls list() while the trainer saves: listing must only read, or it
    puts the set-aside copy back between the trainer's two renames and the save fails."""
    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, lora=False)
    _save(manager, trainer)
    real_replace = os.replace
    seen: list[list[str]] = []

    def reader_polls_between_renames(src, dst):
        real_replace(src, dst)
        if Path(dst).name.startswith(".old-"):
            seen.append([p.name for p in CheckpointManager(tmp_path / "ckpt").list()])

    monkeypatch.setattr(os, "replace", reader_polls_between_renames)
    assert _save(manager, trainer).name == "step_0"
    assert seen == [[]]  # the reader saw no step_0 for a moment, and left things alone
    assert _names(tmp_path / "ckpt") == ["step_0"]


def test_a_prune_killed_mid_delete_lists_only_complete_checkpoints(
    tiny_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reinforge.trainer.checkpoint as checkpoint

    manager = CheckpointManager(tmp_path / "ckpt", max_to_keep=1)
    trainer = _trainer(tiny_model_path, lora=False)
    trainer.train_step(_experiences())
    _save(manager, trainer)
    real_rmtree = shutil.rmtree

    def killed_mid_delete(path, *args, **kwargs):
        if (Path(path) / "model").is_dir():  # deletes the weights, then the process dies
            real_rmtree(Path(path) / "model")
            raise SystemExit("killed")
        real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(checkpoint.shutil, "rmtree", killed_mid_delete)
    trainer.train_step(_experiences(1))
    with pytest.raises(SystemExit):
        _save(manager, trainer)
    monkeypatch.setattr(checkpoint.shutil, "rmtree", real_rmtree)

    restarted = CheckpointManager(tmp_path / "ckpt", max_to_keep=1)
    assert [p.name for p in restarted.list()] == ["step_2"]  # not the half-deleted step_1
    loaded = _load(restarted, _trainer(tiny_model_path, lora=False))
    assert loaded is not None and loaded[0].name == "step_2"
    assert _names(tmp_path / "ckpt") == ["step_2"]  # the trainer's start tidied up


@pytest.mark.parametrize("kill_at", ["after_publish", "deleting_the_old_copy"])
def test_a_resave_killed_after_publishing_keeps_the_new_checkpoint(
    tiny_model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill_at: str
) -> None:
    import reinforge.trainer.checkpoint as checkpoint

    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, lora=False)
    _save(manager, trainer, marker="first")
    real_replace, real_rmtree = os.replace, shutil.rmtree

    def killed_after_publish(src, dst):
        real_replace(src, dst)
        if Path(dst).name == "step_0":
            raise SystemExit("killed")

    def killed_deleting_old(path, *args, **kwargs):
        if Path(path).name.startswith(".old-") and Path(path).exists():
            (Path(path) / "optim.pt").unlink()
            raise SystemExit("killed")
        real_rmtree(path, *args, **kwargs)

    if kill_at == "after_publish":
        monkeypatch.setattr(os, "replace", killed_after_publish)
    else:
        monkeypatch.setattr(checkpoint.shutil, "rmtree", killed_deleting_old)
    with pytest.raises(SystemExit):
        _save(manager, trainer, marker="second")
    monkeypatch.undo()

    restarted = CheckpointManager(tmp_path / "ckpt")
    loaded = _load(restarted, _trainer(tiny_model_path, lora=False))
    assert loaded is not None and read_state(loaded[0])["marker"] == "second"
    assert _names(tmp_path / "ckpt") == ["step_0"]


def test_the_trainer_start_deletes_stale_temporary_folders(tmp_path: Path) -> None:
    manager = CheckpointManager(tmp_path / "ckpt")
    published = manager.save(1, lambda folder: {})
    for stale in (".tmp-step_2-999", ".del-step_0-999"):
        (tmp_path / "ckpt" / stale / "model").mkdir(parents=True)
    loaded = manager.load_latest(lambda path, state: state)
    assert loaded is not None and loaded[0] == published
    assert _names(tmp_path / "ckpt") == ["step_1"]


def test_falling_back_to_an_older_checkpoint_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager = CheckpointManager(tmp_path / "ckpt")
    manager.save(1, lambda folder: {})
    manager.save(2, lambda folder: {})

    def load(path: Path, state: dict[str, Any]) -> int:
        if path.name == "step_2":
            raise ValueError("weights do not match the model")
        return state["step"]

    with caplog.at_level(logging.WARNING, logger="reinforge.trainer.checkpoint"):
        loaded = manager.load_latest(load)
    assert loaded is not None and loaded[1] == 1
    messages = [r.getMessage() for r in caplog.records]
    assert any("resuming from" in m and "step_1" in m and "step_2" in m for m in messages)


def test_export_adapter_only_loads_with_peft_and_matches(
    tiny_model_path: Path, tmp_path: Path
) -> None:
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from reinforge.trainer.checkpoint import export_adapter

    manager = CheckpointManager(tmp_path / "ckpt")
    trainer = _trainer(tiny_model_path, True)
    trainer.train_step(_experiences())
    folder = _save(manager, trainer)
    out = export_adapter(folder, tiny_model_path, tmp_path / "adapter")
    assert (out / "adapter_config.json").is_file() and not (out / "config.json").exists()
    base = AutoModelForCausalLM.from_pretrained(tiny_model_path, local_files_only=True)
    loaded = PeftModel.from_pretrained(base, out)
    trainer.model.eval()
    torch.testing.assert_close(
        _logits(loaded, IDS), _logits(trainer.model, IDS), atol=1e-5, rtol=1e-5
    )
    full = _trainer(tiny_model_path, False)
    with pytest.raises(ValueError, match="no adapter to export"):
        export_adapter(
            _save(CheckpointManager(tmp_path / "full"), full), tiny_model_path, tmp_path / "x"
        )


def test_model_card_tells_base_algorithm_steps_and_eval(tmp_path: Path) -> None:
    import json

    from reinforge.trainer.model_card import model_card

    run = tmp_path / "run"
    (run / "checkpoints" / "step_16").mkdir(parents=True)
    (run / "checkpoints" / "step_16" / "state.json").write_text(json.dumps({"global_step": 16}))
    config = {
        "project": "arithmetic",
        "name": "grpo",
        "trainer": {"algorithm": "grpo", "lr": 1e-5, "lora": {"enabled": False}},
        "buffer": {"explorer_input": {"taskset": {"name": "arith", "path": "data/train.jsonl"}}},
    }
    (run / "config.json").write_text(json.dumps(config))
    rows = [
        {"step": 0, "eval/test/mean@4": 0.2, "eval/test/accuracy": 0.2},
        {"step": 8, "eval/test/mean@4": 0.5},
        {"step": 16, "eval/test/mean@4": 0.45},
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    card = model_card(run, run / "checkpoints" / "step_16", "smollm2-135m-instruct")
    assert "# arithmetic/grpo" in card and "`smollm2-135m-instruct`" in card
    assert "| algorithm | grpo |" in card and "| training steps | 16 |" in card
    assert "| test | mean@4 | 0.200 (0) | 0.500 | 0.450 (16) |" in card
    assert "arith" in card
