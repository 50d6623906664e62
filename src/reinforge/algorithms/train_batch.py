"""``TrainBatch``: the right-padded tensors of a micro-batch, as ``collate`` packs them."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch


@dataclass
class TrainBatch:
    """A micro-batch of ``B`` experiences as training tensors.

    Full-sequence tensors are ``[B, L]`` (``L`` the longest sequence); per-token
    training tensors are ``[B, L - 1]`` in the shifted layout (column ``j`` is the
    prediction of token ``j + 1``); per-sequence ones are ``[B]``. See
    ``reinforge.algorithms.collate`` for the alignment. The optional fields are None
    unless every experience of the batch has that field.
    """

    #: ``[B, L]`` long, right-padded with the pad token
    input_ids: torch.Tensor
    #: ``[B, L]`` long, 1 on real tokens
    attention_mask: torch.Tensor
    #: ``[B, L]`` long, ``0..n-1`` on real tokens, 0 on padding
    position_ids: torch.Tensor
    #: ``[B, L - 1]`` bool: the target is a response token (generated or not)
    response_mask: torch.Tensor
    #: ``[B, L - 1]`` bool: the target is a response token with ``action_mask`` 1
    loss_mask: torch.Tensor
    #: ``[B]`` long
    prompt_lengths: torch.Tensor
    #: ``[B]`` long
    response_lengths: torch.Tensor
    #: ``[B, L - 1]`` float32, the engine's sampled log-probs
    old_logprobs: torch.Tensor | None = None
    #: ``[B, L - 1]`` float32
    advantages: torch.Tensor | None = None
    #: ``[B, L - 1]`` float32
    returns: torch.Tensor | None = None
    #: ``[B, L - 1]`` float32
    token_level_rewards: torch.Tensor | None = None
    #: ``[B]`` float32
    rewards: torch.Tensor | None = None
    #: ``[B, L - 1]`` float32, a teacher's log-probs of the response tokens
    #: (``Experience.teacher_logprobs``; on-policy distillation)
    teacher_logprobs: torch.Tensor | None = None
    #: the image tensors (``pixel_values``...) of the rows that have images, joined in
    #: row order (see ``multi_modal_batch``); None for a text-only batch
    multi_modal_inputs: dict[str, torch.Tensor] | None = None

    def to(self, device: str | torch.device) -> TrainBatch:
        """The same batch with every tensor (image inputs included) on ``device``; the
        batch itself when they are all there already."""
        device = torch.device(device)
        moved: dict[str, object] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, torch.Tensor) and value.device != device:
                moved[item.name] = value.to(device, non_blocking=device.type == "cuda")
            elif isinstance(value, dict) and any(v.device != device for v in value.values()):
                moved[item.name] = {
                    k: v.to(device, non_blocking=device.type == "cuda") for k, v in value.items()
                }
        return dataclasses.replace(self, **moved) if moved else self

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every tensor of the batch by field name (image inputs as ``multi_modal_inputs.KEY``)."""
        out: dict[str, torch.Tensor] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if isinstance(value, torch.Tensor):
                out[item.name] = value
            elif isinstance(value, dict):
                out.update({f"{item.name}.{k}": v for k, v in value.items()})
        return out
