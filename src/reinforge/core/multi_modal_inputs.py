"""The processor's extra model inputs of a multimodal experience, and their stored form.

A vision-language model sees more than token ids: the processor turns each image into
tensors (``pixel_values``, ``pixel_attention_mask``, ``image_grid_thw``...) that the
forward pass takes beside ``input_ids``. The trainer must feed exactly those tensors
again to re-score what was sampled, so an experience keeps them, as a plain
``dict[str, torch.Tensor]``.

Stored form (``encode``/``decode``): a small JSON header naming each tensor's dtype
and shape, then the raw little-endian bytes of all tensors, zlib-compressed
(generated and natural images repeat a lot; the bytes come back bit for bit, so
the trainer's forward sees the sampled inputs exactly). ``to_jsonable`` wraps the
same bytes in base64 for JSON exports.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

#: torch dtypes the stored form keeps, by name (numpy has no bfloat16: kept as int16 bits)
_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_NAMES = {dtype: name for name, dtype in _DTYPES.items()}
_HEAD_LEN = struct.Struct("<I")

MultiModalInputs = dict[str, torch.Tensor]


def normalise(inputs: Mapping[str, Any] | None) -> MultiModalInputs | None:
    """A plain ``{name: CPU tensor}`` dict (numpy arrays and lists converted); None or
    an empty mapping stays None."""
    if not inputs:
        return None
    out: MultiModalInputs = {}
    for name, value in inputs.items():
        tensor = value if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))
        if tensor.dtype not in _NAMES:
            raise TypeError(f"multi_modal_inputs[{name!r}] has unsupported dtype {tensor.dtype}")
        out[str(name)] = tensor.detach().cpu()
    return out


def _raw(tensor: torch.Tensor) -> bytes:
    flat = tensor.contiguous()
    if flat.dtype == torch.bfloat16:
        flat = flat.view(torch.int16)
    return flat.numpy().tobytes()


def encode(inputs: Mapping[str, torch.Tensor]) -> bytes:
    """Compact bytes of ``inputs``: header length, JSON header, zlib of the raw tensors."""
    header = [[name, _NAMES[t.dtype], list(t.shape)] for name, t in inputs.items()]
    head = json.dumps(header, separators=(",", ":")).encode()
    body = zlib.compress(b"".join(_raw(t) for t in inputs.values()), level=1)
    return b"".join([_HEAD_LEN.pack(len(head)), head, body])


def decode(blob: bytes) -> MultiModalInputs:
    """The tensors ``encode`` stored, with their dtypes and shapes."""
    (head_len,) = _HEAD_LEN.unpack_from(blob, 0)
    header = json.loads(blob[4 : 4 + head_len])
    raw = zlib.decompress(blob[4 + head_len :])
    out: MultiModalInputs = {}
    offset = 0
    for name, dtype_name, shape in header:
        dtype = _DTYPES[dtype_name]
        held = torch.int16 if dtype == torch.bfloat16 else dtype
        numpy_dtype = torch.empty(0, dtype=held).numpy().dtype
        count = int(np.prod(shape)) if shape else 1
        arr = np.frombuffer(raw, dtype=numpy_dtype, count=count, offset=offset).copy()
        offset += arr.nbytes
        tensor = torch.from_numpy(arr).reshape(shape)
        out[name] = tensor.view(torch.bfloat16) if dtype == torch.bfloat16 else tensor
    return out


def to_jsonable(inputs: Mapping[str, torch.Tensor] | None) -> dict[str, str] | None:
    """``{"encoding": ..., "data": base64}`` for JSON exports (None stays None)."""
    if inputs is None:
        return None
    return {"encoding": "reinforge-mm-v1", "data": base64.b64encode(encode(inputs)).decode()}


def from_jsonable(value: Any) -> MultiModalInputs | None:
    """Inverse of ``to_jsonable``; a plain dict of tensors/arrays is accepted too."""
    if value is None:
        return None
    if isinstance(value, Mapping) and value.get("encoding") == "reinforge-mm-v1":
        return decode(base64.b64decode(value["data"]))
    return normalise(value)


def equal(a: Mapping[str, torch.Tensor] | None, b: Mapping[str, torch.Tensor] | None) -> bool:
    """Same names, dtypes, shapes and values."""
    if a is None or b is None:
        return a is None and b is None
    return a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]) for k in a
    )
