"""``model.init_from``: which folder a path names, and loading its weights into a plain
or a LoRA policy (whose adapted layers keep the base weight under another name)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from reinforge.trainer.init_weights import init_weights, load_into, resolve_init_from
from reinforge.trainer.policy_model import load_policy, merged_state_dict
from reinforge.trainer.trainer_config import TrainerConfig


def _checkpoint(root: Path, step: int, model) -> Path:
    folder = root / "checkpoints" / f"step_{step}"
    model.save_pretrained(folder / "model", safe_serialization=True)
    (folder / "state.json").write_text(json.dumps({"step": step, "lora": False}))
    return folder


def _shifted(path: Path, by: float):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(by)
    return model


def test_a_run_dir_names_its_newest_checkpoint(tmp_path, tiny_model_path):
    run = tmp_path / "run"
    _checkpoint(run, 2, _shifted(tiny_model_path, 0.01))
    newest = _checkpoint(run, 10, _shifted(tiny_model_path, 0.02))
    assert resolve_init_from(run) == newest
    assert resolve_init_from(newest) == newest
    weights = init_weights(run, tiny_model_path)
    expected = _shifted(tiny_model_path, 0.02).state_dict()
    assert all(torch.equal(weights[k], expected[k]) for k in weights)


def test_an_exported_model_dir_and_bad_paths(tmp_path, tiny_model_path):
    _shifted(tiny_model_path, 0.0).save_pretrained(tmp_path / "hf", safe_serialization=True)
    assert resolve_init_from(tmp_path / "hf") == tmp_path / "hf"
    with pytest.raises(FileNotFoundError, match="not a directory"):
        resolve_init_from(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no checkpoint"):
        resolve_init_from(tmp_path / "empty")


def test_loading_into_a_lora_policy_sets_its_base_weights(tiny_model_path):
    cfg = TrainerConfig.model_validate({"lora": {"enabled": True, "r": 2, "alpha": 4}})
    policy = load_policy(tiny_model_path, cfg)
    weights = _shifted(tiny_model_path, 0.03).state_dict()
    load_into(policy, weights, "the policy")
    # fresh adapters add nothing: the merged weights are the ones loaded
    merged = merged_state_dict(policy)
    assert merged and all(torch.equal(merged[k], weights[k]) for k in merged)
    base = policy.get_base_model().state_dict()
    assert torch.equal(base["model.embed_tokens.weight"], weights["model.embed_tokens.weight"])
    with pytest.raises(
        ValueError, match=re.escape("the policy: the init_from weight extra.weight")
    ):
        load_into(policy, {"extra.weight": torch.zeros(1)}, "the policy")
