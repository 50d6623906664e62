"""The hf engine reading the in-process trainer's parameters in place.

Why: in ``mode: both`` without overlap, synced after every step, the engine samples only
between training steps, always from the weights the last step left. Where it computes in
the trainer's dtype (fp32 on a CPU without native bf16) its own copy is a second,
identical policy: 0.5 GiB for SmolLM2-135M, held through every exploring step and
evaluation. Sharing the trainer's tensors drops that copy, and a sync then moves no
bytes. The weight check after each sync still scores the probe on the engine's forward.

Sharing is all or nothing: every parameter of the engine must have a tensor of the same
name, shape, dtype and device, or nothing changes. Persistent buffers in the state dict
are copied, as a sync would. A later copying update (``load_state_dict``) first gives
the engine storage of its own (:func:`own_parameters`), so it never writes into the
trainer's weights.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch


def _parameters(model: torch.nn.Module) -> dict[str, torch.nn.Parameter]:
    return dict(model.named_parameters(remove_duplicate=False))


def share_parameters(
    model: torch.nn.Module,
    tensors: Mapping[str, torch.Tensor],
    dropped: Mapping[str, torch.Size] | None = None,
) -> str | None:
    """Point every parameter of ``model`` at the tensor of its name in ``tensors``;
    ``dropped``: the shapes of parameters whose storage was freed (``weight_release``).
    Returns None when done, else why nothing was shared."""
    params, dropped = _parameters(model), dropped or {}
    for name, param in params.items():
        given = tensors.get(name)
        if given is None:
            return f"no tensor for {name}"
        shape = dropped.get(name, param.shape)
        if (given.shape, given.dtype, given.device) != (shape, param.dtype, param.device):
            return (
                f"{name}: the trainer's {given.dtype} {tuple(given.shape)} on {given.device} "
                f"is not the engine's {param.dtype} {tuple(shape)} on {param.device}"
            )
    buffers = {name for name, _ in model.named_buffers(remove_duplicate=False)}
    unknown = sorted(set(tensors) - params.keys() - buffers)
    if unknown:
        return f"{len(unknown)} names the engine does not have, e.g. {unknown[:3]}"
    with torch.inference_mode(False):  # the engine's thread runs in inference mode
        for name, param in params.items():
            param.data = tensors[name].detach()
        copied = {k: v for k, v in tensors.items() if k in buffers}
        if copied:
            model.load_state_dict(copied, strict=False)
    return None


def own_parameters(model: torch.nn.Module) -> None:
    """Give each parameter storage of its own (a copy): tied parameters stay one tensor."""
    copies: dict[int, torch.Tensor] = {}
    with torch.inference_mode(False):
        for param in _parameters(model).values():
            key = id(param)
            if key not in copies:
                copies[key] = param.data.clone()
                param.data = copies[key]
