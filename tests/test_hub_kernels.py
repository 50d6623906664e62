"""Importing reinforge turns transformers' Hub kernels off unless the user said otherwise:
transformers 5.25 would otherwise swap the model's layers for kernels fetched from the
Hugging Face Hub at load time (and fail on the ``meta`` device)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _value_after_import(preset: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "USE_HUB_KERNELS"}
    if preset is not None:
        env["USE_HUB_KERNELS"] = preset
    code = "import os, reinforge; print(os.environ['USE_HUB_KERNELS'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_importing_reinforge_turns_hub_kernels_off() -> None:
    assert _value_after_import(None) == "0"


@pytest.mark.parametrize("preset", ["1", "0"])
def test_a_users_own_setting_wins(preset: str) -> None:
    assert _value_after_import(preset) == preset


def test_a_model_loaded_through_reinforge_is_not_kernelized(tiny_model_path) -> None:
    """The setting reaches ``from_pretrained``: the trainer's policy keeps transformers'
    own layers (``use_kernels`` off), whatever transformers release is installed."""
    from reinforge.trainer.policy_model import load_policy
    from reinforge.trainer.trainer_config import TrainerConfig

    model = load_policy(tiny_model_path, TrainerConfig())
    assert not getattr(model, "use_kernels", False)
