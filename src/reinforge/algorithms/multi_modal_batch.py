"""The image tensors of a micro-batch: each experience's ``multi_modal_inputs`` joined.

Processors give every prompt its tensors with a leading batch (or patch) dimension:
Idefics3-style ``pixel_values [1, images, 3, H, W]``, Qwen-VL-style flat patches
``[patches, dim]`` with ``image_grid_thw [images, 3]``. A micro-batch concatenates
each name along that dimension, in row order, so the model meets the images in the
order their placeholder tokens appear; trailing dimensions that differ (more images
in one prompt, larger images) are zero-padded, as the processor itself pads a batch
(an all-zero image is dropped by Idefics3 models, and a zero pixel mask hides padded
pixels). Rows without images contribute nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.core import Experience


def _pad_to(t: torch.Tensor, shape: list[int]) -> torch.Tensor:
    if list(t.shape[1:]) == shape:
        return t
    out = t.new_zeros([t.shape[0], *shape])
    out[tuple(slice(0, n) for n in t.shape)] = t
    return out


def join_multi_modal_inputs(exps: Sequence[Experience]) -> dict[str, torch.Tensor] | None:
    """The joined tensors of the experiences that have images; None when none has."""
    parts = [e.multi_modal_inputs for e in exps if e.multi_modal_inputs]
    if not parts:
        return None
    names = list(parts[0])
    for inputs in parts[1:]:
        if list(inputs) != names:
            raise ValueError(
                f"experiences of one micro-batch carry different image inputs: {names} "
                f"and {list(inputs)} (were they sampled by different models?)"
            )
    out: dict[str, torch.Tensor] = {}
    for name in names:
        tensors = [inputs[name] for inputs in parts]
        if any(t.ndim != tensors[0].ndim for t in tensors):
            raise ValueError(f"multi_modal_inputs[{name!r}] differ in rank across experiences")
        if tensors[0].ndim == 0:
            raise ValueError(f"multi_modal_inputs[{name!r}] is a scalar; expected a batch dim")
        trailing = [max(t.shape[d] for t in tensors) for d in range(1, tensors[0].ndim)]
        out[name] = torch.cat([_pad_to(t, trailing) for t in tensors])
    return out
