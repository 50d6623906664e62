"""Which attention kernel the trainer's forward passes use, chosen per micro-batch.

On CPU, PyTorch's fused SDPA kernel is slower than transformers' eager attention
(two matmuls and a softmax) for the short sequences RL fine-tuning of small
models produces: SmolLM2-135M forward+backward with gradient checkpointing under
bf16 autocast took 3.17 s eager vs 3.80 s SDPA for 16 x 78 tokens, 2.51 vs 2.96 s
for 4 x 256 and 3.26 vs 3.53 s for 2 x 512, but 6.6 vs 5.2 s for 1 x 1024, where
eager's full attention matrix starts to cost (bench numbers in docs/benchmarks.md).
``auto`` therefore picks eager for CPU micro-batches up to ``EAGER_MAX_COLUMNS``
columns and SDPA otherwise (and always on GPUs, where SDPA's flash kernels win).
"""

from __future__ import annotations

from typing import Any, Literal

import torch

AttentionSetting = Literal["auto", "sdpa", "eager"]

EAGER_MAX_COLUMNS = 512


def pick_attention(setting: AttentionSetting, device: str, columns: int) -> str:
    """The attention implementation for a micro-batch of ``columns`` tokens per row."""
    if setting != "auto":
        return setting
    if torch.device(device).type == "cpu" and columns <= EAGER_MAX_COLUMNS:
        return "eager"
    return "sdpa"


def use_attention(model: Any, implementation: str) -> None:
    """Switch ``model`` (a transformers model, or a peft model around one) to ``implementation``."""
    if getattr(model.config, "_attn_implementation", None) != implementation:
        model.set_attn_implementation(implementation)
