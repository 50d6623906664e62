"""Starting a sharded (FSDP2) trainer rank without ever holding the whole model.

The old start built the full fp32 policy (and the reference model, with KL) in every
rank and only then sharded it: N ranks held N full copies in host memory at once. Here
a rank builds the model's structure on ``meta`` (no storage), shards it with the
strategy, gives each parameter's local shard storage, and reads into it only its own
rows from the safetensors files (plain reads at the rows' offsets): a rank's host memory
at start is its shard, never the model.

What ``meta`` cannot hold is taken care of here:

- buffers (rotary ``inv_freq``, position ids) are computed for real at construction
  (``init_empty_weights(include_buffers=False)``) and put back after the shards get
  storage, which leaves every tensor uninitialised;
- tied embeddings stay one parameter (FSDP2 shards it once; the checkpoint holds it
  under the input embedding's name);
- LoRA adapters are small and random: they are made on the CPU with the old start's
  random draws (:func:`add_lora`), then each rank keeps its rows of them;
- vision-language models keep the old start (:func:`can_start_sharded`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

#: reads a checkpoint tensor's rows ``start:stop`` (a slice of dim 0) into the given
#: tensor of their shape (converting the dtype where the checkpoint's differs)
RowReader = Callable[[str, int, int, torch.Tensor], None]


def can_start_sharded(model_path: str | Path) -> bool:
    """Whether ``model_path`` can start sharded: a text model in safetensors files.
    A vision-language model starts the old way (its vision tower's checkpoint names
    are renamed at load time, which a slice reader does not replay)."""
    from reinforge.models.vision.loading import is_vision_language

    path = Path(model_path)
    files = (path / "model.safetensors").is_file() or (
        path / "model.safetensors.index.json"
    ).is_file()
    return files and not is_vision_language(path)


def empty_model(model_path: str | Path, dtype: torch.dtype) -> Any:
    """The causal LM of ``model_path`` with its parameters on ``meta`` (tied ones one
    parameter, as the old start's) and its buffers computed on the CPU."""
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_path, local_files_only=True)
    with init_empty_weights(include_buffers=False):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    # accelerate registers every parameter anew on meta, which parts tied embeddings
    # into two: FSDP2 would shard, gather and reduce the head's copy on its own (one
    # more vocabulary x hidden tensor in every step), so they are tied again here
    model.tie_weights()
    return model


def add_lora(model: Any, lora: Any) -> Any:
    """``model`` (parameters on meta) with peft's LoRA adapters, made on the CPU.

    peft puts a new adapter on its base layer's device, here ``meta``, which drops its
    random initial values. So each adapter is made again on the CPU as peft's
    ``update_layer`` makes it (two ``nn.Linear``, then ``reset_lora_parameters``), in
    peft's order: the same random draws as the old start under the same seed, so
    ranks start from the adapters one process starts from."""
    from peft import get_peft_model
    from peft.tuners.lora import LoraLayer

    draws = torch.random.get_rng_state()
    model = get_peft_model(model, lora)
    torch.random.set_rng_state(draws)  # peft drew them once already, for nothing
    for module in model.modules():
        if not isinstance(module, LoraLayer):
            continue
        dtype = module.get_base_layer().weight.dtype
        for adapter in list(module.lora_A.keys()):
            rank = module.r[adapter]
            module.lora_A[adapter] = nn.Linear(module.in_features, rank, bias=False)
            bias = bool(module.lora_bias[adapter])
            module.lora_B[adapter] = nn.Linear(rank, module.out_features, bias=bias)
            module.reset_lora_parameters(adapter, lora.init_lora_weights)
            for part in (module.lora_A[adapter], module.lora_B[adapter]):
                # the old start rounds them through the base layer's dtype
                part.to(dtype).to(torch.float32)
    return model


_SAFETENSORS_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}


def _header(file: Path) -> tuple[int, dict[str, Any]]:
    """A safetensors file's header (name -> dtype, shape, byte offsets) and where the
    data begins."""
    with file.open("rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    header.pop("__metadata__", None)
    return 8 + size, header


def safetensors_reader(model_path: str | Path) -> tuple[RowReader, set[str]]:
    """A reader of rows of the tensors in ``model_path``'s safetensors file(s), and the
    names they hold. A tensor's rows lie back to back in the file, so only the bytes of
    the rows asked for are read, with plain reads: no memory map, whose touched pages
    would count in the process's resident memory as a second copy of its shard."""
    path = Path(model_path)
    index = path / "model.safetensors.index.json"
    if index.is_file():
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    where: dict[str, tuple[Path, int, dict[str, Any]]] = {}
    for name in files:
        start, header = _header(path / name)
        for key, info in header.items():
            where[key] = (path / name, start, info)

    def read(name: str, start: int, stop: int, into: torch.Tensor) -> None:
        file, data, info = where[name]
        dtype = _SAFETENSORS_DTYPES[info["dtype"]]
        shape = list(info["shape"])
        begin, end = info["data_offsets"]
        if shape:
            row = (end - begin) // max(shape[0], 1)
            begin, end = begin + start * row, begin + stop * row
            shape[0] = stop - start
        # straight into the shard where it can; else through one slice-sized buffer
        direct = into.dtype == dtype and into.is_contiguous() and into.device.type == "cpu"
        out = into if direct else torch.empty(shape, dtype=dtype)
        if end > begin:
            with file.open("rb") as f:
                f.seek(data + begin)
                f.readinto(memoryview(out.reshape(-1).view(torch.uint8).numpy()))
        if not direct:
            into.copy_(out.reshape(into.shape))

    return read, set(where)


def dict_reader(weights: dict[str, torch.Tensor]) -> tuple[RowReader, set[str]]:
    """A row reader over full tensors held in memory (``model.init_from``'s weights)."""

    def read(name: str, start: int, stop: int, into: torch.Tensor) -> None:
        tensor = weights[name]
        into.copy_(tensor if tensor.dim() == 0 else tensor[start:stop])

    return read, set(weights)


def overlay(
    first: tuple[RowReader, set[str]], then: tuple[RowReader, set[str]]
) -> tuple[RowReader, set[str]]:
    """A reader that takes a tensor from ``first`` where it has it, else from ``then``
    (``model.init_from``'s weights over the base model's: a LoRA run's saved weights
    hold only the adapted layers)."""
    read_first, names_first = first
    read_then, names_then = then

    def read(name: str, start: int, stop: int, into: torch.Tensor) -> None:
        (read_first if name in names_first else read_then)(name, start, stop, into)

    return read, names_first | names_then


def checkpoint_name(name: str) -> str:
    """A parameter's name in a plain HF checkpoint: without peft's prefix and without
    ``base_layer`` (where LoRA moved the adapted layer's own weight)."""
    name = name.removeprefix("base_model.model.")
    return name.replace(".base_layer.", ".")


def local_rows(param: torch.Tensor) -> tuple[torch.Tensor, int]:
    """The storage this rank holds of ``param`` and the first global row of it."""
    from torch.distributed.tensor import DTensor

    if not isinstance(param, DTensor):
        return param.data, 0
    from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

    _, offset = compute_local_shape_and_global_offset(
        param.shape, param.device_mesh, param.placements
    )
    return param.to_local(), int(offset[0]) if offset else 0


def materialise(
    model: nn.Module,
    device: torch.device,
    read: RowReader,
    names: set[str],
    keep: dict[str, torch.Tensor] | None = None,
    buffer_device: torch.device | None = None,
) -> None:
    """Give ``model``'s (sharded) parameters storage on ``device`` and fill each rank's
    rows: from ``keep`` (full tensors made at construction: LoRA adapters) or by
    ``read`` from the checkpoint; buffers get back their construction values, on
    ``buffer_device`` (default ``device``: FSDP2's CPU offload keeps the shards in host
    memory while the buffers belong where the forward runs).

    Raises ValueError naming the parameter that the checkpoint does not hold."""
    keep = keep or {}
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    model.to_empty(device=device)
    tie_weights = getattr(model, "tie_weights", None)
    if tie_weights is not None:
        tie_weights()  # to_empty may part tied parameters into two
    with torch.no_grad():
        for name, param in model.named_parameters():
            local, start = local_rows(param)
            stop = start + (local.shape[0] if local.dim() else 0)
            if name in keep:
                full = keep[name]
                local.copy_(full if full.dim() == 0 else full[start:stop])
                continue
            source = checkpoint_name(name)
            if source not in names:
                raise ValueError(
                    f"starting sharded: the checkpoint holds no tensor {source!r} for the "
                    f"model's parameter {name!r}"
                )
            if local.numel():
                read(source, start, stop, local)
        for name, value in buffers.items():
            owner, _, leaf = name.rpartition(".")
            module = model.get_submodule(owner)
            module._buffers[leaf] = value.to(buffer_device or device)
