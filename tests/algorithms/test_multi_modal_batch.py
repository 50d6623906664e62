"""A micro-batch's image tensors: joined in row order, zero-padded where shapes differ."""

from __future__ import annotations

import pytest
import torch

from reinforge.algorithms import collate
from reinforge.algorithms.multi_modal_batch import join_multi_modal_inputs
from reinforge.core import Experience


def _exp(images: int | None, size: int = 4) -> Experience:
    inputs = None
    if images is not None:
        inputs = {
            "pixel_values": torch.full((1, images, 3, size, size), float(images)),
            "pixel_attention_mask": torch.ones(1, images, size, size, dtype=torch.long),
        }
    return Experience(tokens=[1, 2, 3], prompt_length=2, multi_modal_inputs=inputs)


def test_join_pads_image_count_and_size_and_skips_text_rows() -> None:
    joined = join_multi_modal_inputs([_exp(1), _exp(None), _exp(2, size=6)])
    assert joined["pixel_values"].shape == (2, 2, 3, 6, 6)
    assert joined["pixel_values"][0, 1].abs().sum() == 0  # padded image: all zeros
    assert joined["pixel_attention_mask"][0, 0, 4:].sum() == 0  # padded pixels hidden
    assert joined["pixel_values"][1, 1, 0, 5, 5] == 2.0


def test_text_only_batch_has_none() -> None:
    assert join_multi_modal_inputs([_exp(None)]) is None
    assert collate([_exp(None)], pad_token_id=0).multi_modal_inputs is None


def test_collate_carries_them() -> None:
    batch = collate([_exp(1), _exp(1)], pad_token_id=0)
    assert batch.multi_modal_inputs["pixel_values"].shape == (2, 1, 3, 4, 4)


def test_different_processors_are_refused() -> None:
    other = Experience(tokens=[1, 2], prompt_length=1, multi_modal_inputs={"x": torch.zeros(1, 2)})
    with pytest.raises(ValueError, match="different image inputs"):
        join_multi_modal_inputs([_exp(1), other])
