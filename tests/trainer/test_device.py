"""Every tensor of a training step lives on the trainer's device.

No GPU here, so the step runs with the trainer on the ``meta`` device: a tensor built
on the CPU by mistake (a batch not moved, a mask made with ``torch.tensor``) meets the
model's meta tensors and the op raises. Reading a value back (``float(loss)``) is the
one thing meta cannot do; the mode below answers those reads with placeholders.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import reinforge.trainer.trainer as trainer_module
from reinforge.algorithms import collate
from reinforge.core import Experience
from reinforge.core.eid import EID
from reinforge.trainer.device import resolve_device
from reinforge.trainer.trainer_config import TrainerConfig


class PlaceholderReads(TorchDispatchMode):
    """``.item()`` of a meta tensor returns a placeholder instead of raising."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default and args[0].device.type == "meta":
            value = args[0]
            if value.dtype == torch.bool:
                return True
            return 0.5 if value.is_floating_point() else 1
        return func(*args, **(kwargs or {}))


def experiences() -> list[Experience]:
    out = []
    for run in range(4):
        exp = Experience(
            tokens=torch.tensor([1, 2, 3, 4, 5, 6]),
            prompt_length=3,
            logprobs=torch.tensor([-1.0, -2.0, -1.5]),
            reward=float(run % 2),
        )
        exp.eid = EID(batch=1, task=0, run=run)
        exp.info["model_version"] = 0
        out.append(exp)
    return out


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_a_step_keeps_every_tensor_on_the_trainer_device(
    lora: bool, tiny_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch.fx.experimental._config as fx_config

    monkeypatch.setattr(trainer_module, "resolve_device", lambda setting, rank=0: "meta")
    cfg = TrainerConfig.model_validate(
        {
            "lr": 1e-3,
            "micro_batch_size": 2,
            "algorithm_args": {"kl_loss": "low_var_kl", "kl_loss_coef": 0.1, "entropy_coef": 0.01},
            "lora": {"enabled": lora, "r": 4},
        }
    )
    trainer = trainer_module.Trainer(tiny_model_path, cfg, pad_token_id=0)
    assert {p.device.type for p in trainer.model.parameters()} == {"meta"}
    if trainer.ref_model is not None:
        assert {p.device.type for p in trainer.ref_model.parameters()} == {"meta"}
    # boolean-mask indexing on meta needs a guess at the mask's count: all true
    with fx_config.patch(meta_nonzero_assume_all_nonzero=True), PlaceholderReads():
        result = trainer.train_step(experiences())
    assert not result.skipped and result.metrics["train/experiences"] == 4.0
    assert "train/kl_loss/value" in result.metrics and "train/sampler/ratio_mean" in result.metrics


@pytest.mark.parametrize("source", ["trainer", "sampler"])
def test_a_mixed_batch_keeps_the_fallback_log_probs_on_the_trainer_device(
    source: str, tiny_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half the experiences carry the engine's log-probs, half none (trained on-policy):
    collate then has no ``old_logprobs``, and the trainer builds the sampler's log-probs
    itself, zeros on the rows without (``old_logprobs.sampler_logprobs``). That tensor,
    and every mask made from the rows, must be on the trainer's device; with
    ``old_logprobs: sampler`` the rows with log-probs take π_old from it."""
    import torch.fx.experimental._config as fx_config

    monkeypatch.setattr(trainer_module, "resolve_device", lambda setting, rank=0: "meta")
    cfg = TrainerConfig.model_validate({"lr": 1e-3, "micro_batch_size": 2, "old_logprobs": source})
    trainer = trainer_module.Trainer(tiny_model_path, cfg, pad_token_id=0)
    exps = experiences()
    for exp in exps[1:3]:  # one of each reward: the group keeps its variance
        exp.logprobs = None
    assert collate(exps, pad_token_id=0).old_logprobs is None  # the fallback's case
    with fx_config.patch(meta_nonzero_assume_all_nonzero=True), PlaceholderReads():
        result = trainer.train_step(exps)
    assert not result.skipped and result.metrics["train/experiences"] == 4.0
    assert "train/sampler/ratio_mean" in result.metrics  # the log-probs were compared


def test_a_train_batch_moves_every_tensor() -> None:
    batch = collate(experiences(), pad_token_id=0)
    batch.multi_modal_inputs = {"pixel_values": torch.zeros(1, 3, 2, 2)}
    moved = batch.to("meta")
    assert {t.device.type for t in moved.tensors().values()} == {"meta"}
    assert "multi_modal_inputs.pixel_values" in moved.tensors()
    assert moved.to("meta") is moved  # nothing to move: the same batch
    assert {t.device.type for t in batch.tensors().values()} == {"cpu"}  # not in place


def test_device_settings() -> None:
    assert resolve_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        assert resolve_device("auto") == "cpu"
        with pytest.raises(ValueError, match=r"trainer\.device: cuda:1 asks for a GPU"):
            resolve_device("cuda:1")
    with pytest.raises(ValueError, match="pattern"):
        TrainerConfig.model_validate({"device": "tpu"})
