"""An experience's image tensors survive every stored form bit for bit."""

from __future__ import annotations

import json

import torch

from reinforge.core import Experience
from reinforge.core import multi_modal_inputs as mm


def _inputs() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    return {
        "pixel_values": torch.randn(1, 2, 3, 8, 8),
        "pixel_attention_mask": torch.ones(1, 2, 8, 8, dtype=torch.long),
        "image_grid_thw": torch.tensor([[1, 2, 2]], dtype=torch.int32),
        "half": torch.randn(3, 4).bfloat16(),
        "flags": torch.tensor([True, False]),
    }


def test_encode_decode_keeps_dtypes_shapes_and_bits() -> None:
    inputs = _inputs()
    back = mm.decode(mm.encode(inputs))
    assert mm.equal(inputs, back)
    assert [t.dtype for t in back.values()] == [t.dtype for t in inputs.values()]


def test_compact_for_repetitive_images() -> None:
    flat = {"pixel_values": torch.zeros(1, 1, 3, 64, 64)}
    assert len(mm.encode(flat)) < 2_000  # 48 KB of raw floats


def test_experience_bytes_and_dict_round_trip() -> None:
    exp = Experience(
        tokens=[1, 2, 3, 4], prompt_length=2, logprobs=[-1.0, -2.0], multi_modal_inputs=_inputs()
    )
    assert mm.equal(
        Experience.from_bytes(exp.to_bytes()).multi_modal_inputs, exp.multi_modal_inputs
    )
    data = json.loads(json.dumps(exp.to_dict()))
    assert mm.equal(Experience.from_dict(data).multi_modal_inputs, exp.multi_modal_inputs)


def test_text_experiences_are_unchanged() -> None:
    exp = Experience(tokens=[1, 2, 3], prompt_length=1)
    blob = exp.to_bytes()
    assert b"multi_modal_inputs" not in blob
    assert Experience.from_bytes(blob).multi_modal_inputs is None
    assert exp.to_dict()["multi_modal_inputs"] is None


def test_numpy_and_list_inputs_become_tensors() -> None:
    exp = Experience(tokens=[1, 2], prompt_length=1, multi_modal_inputs={"x": [[1.0, 2.0]]})
    assert isinstance(exp.multi_modal_inputs["x"], torch.Tensor)
