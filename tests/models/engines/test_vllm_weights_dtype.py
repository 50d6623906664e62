"""Synced full weights are written in the vLLM servers' dtype, tied tensors once."""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file

from reinforge.models.engines.vllm.weights import write_full_weights


def test_weights_are_written_in_the_engine_dtype(tiny_model_path: Path, tmp_path: Path) -> None:
    embed = torch.randn(4, 3)
    state = {"model.embed_tokens.weight": embed, "lm_head.weight": embed, "step": torch.tensor(7)}
    folder = write_full_weights(state, tiny_model_path, tmp_path / "v1", dtype="bfloat16")
    written = load_file(str(folder / "model.safetensors"))
    assert written["model.embed_tokens.weight"].dtype == torch.bfloat16
    assert torch.equal(written["model.embed_tokens.weight"], embed.to(torch.bfloat16))
    assert "lm_head.weight" not in written  # tied: once, under the first name
    assert written["step"].dtype == torch.int64  # integers stay as they are
    others = [t for k, t in written.items() if k not in state]  # completed from the base
    assert others and all(t.dtype == torch.bfloat16 for t in others if t.is_floating_point())
    fp32 = write_full_weights(state, tiny_model_path, tmp_path / "v2")
    assert (
        load_file(str(fp32 / "model.safetensors"))["model.embed_tokens.weight"].dtype
        == torch.float32
    )
