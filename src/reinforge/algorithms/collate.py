"""Pack a list of Experiences into right-padded training tensors (a ``TrainBatch``).

Alignment convention ("shifted", next-token)
--------------------------------------------
Full-sequence tensors have width ``L = max len(tokens)``; column ``p`` is token ``p``:

* ``input_ids`` ``[B, L]`` (long, right-padded with ``pad_token_id``),
* ``attention_mask`` ``[B, L]`` (long, 1 on real tokens),
* ``position_ids`` ``[B, L]`` (long, ``0..n−1`` on real tokens, 0 on padding).

Per-token training tensors have width ``L − 1``; column ``j`` is about **the
prediction of token ``j + 1`` from the prefix ``tokens[: j + 1]``**, i.e. it lines up
with ``logits[:, j]`` and with target ``input_ids[:, j + 1]``. A trainer therefore
does, with no further slicing::

    logp = log_softmax(logits[:, :-1], -1).gather(-1, input_ids[:, 1:, None])[..., 0]
    loss, metrics = policy_loss(logp, batch.old_logprobs, batch.advantages,
                                batch.loss_mask)

Response token ``k`` of experience ``i`` (full position ``P_i + k``, ``P_i`` its
prompt length) lands in column ``P_i + k − 1``. The shifted tensors are:

* ``response_mask`` (bool): target is a response token (generated or not),
* ``loss_mask`` (bool): target is a response token with ``action_mask`` 1 (tool
  output / user turns of multi-turn responses are 0; so are prompt and padding),
* ``old_logprobs``, ``advantages``, ``returns``, ``token_level_rewards``,
  ``teacher_logprobs`` (float32, 0 outside the response): None unless *every*
  experience has that field (``teacher_logprobs`` from ``Experience.teacher_logprobs``,
  which a workflow may have assigned as a list).

Per-sequence tensors ``[B]``: ``prompt_lengths``, ``response_lengths`` (long) and
``rewards`` (float32, None unless every experience has a reward).

``multi_modal_inputs``: the image tensors of the experiences that have them, joined
in row order (``multi_modal_batch``), for the forward pass of a vision-language model.

An experience needs at least one prompt token (e.g. BOS) if it has a response:
the first response token must have a prefix to be predicted from.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.algorithms.multi_modal_batch import join_multi_modal_inputs
from reinforge.algorithms.train_batch import TrainBatch
from reinforge.core import Experience

#: the optional per-token ``TrainBatch`` fields and the ``Experience`` field each is from
_TOKEN_FIELDS = {
    "old_logprobs": "logprobs",
    "advantages": "advantages",
    "returns": "returns",
    "token_level_rewards": "token_level_reward",
    "teacher_logprobs": "teacher_logprobs",
}


def collate(exps: Sequence[Experience], pad_token_id: int) -> TrainBatch:
    """Right-padded batch tensors for ``exps`` (see the module docstring for alignment)."""
    if not exps:
        raise ValueError("collate needs at least one experience")
    batch_size = len(exps)
    width = max(len(e.tokens) for e in exps)
    shifted = max(width - 1, 0)

    input_ids = torch.full((batch_size, width), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros(batch_size, width, dtype=torch.long)
    position_ids = torch.zeros(batch_size, width, dtype=torch.long)
    response_mask = torch.zeros(batch_size, shifted, dtype=torch.bool)
    loss_mask = torch.zeros(batch_size, shifted, dtype=torch.bool)
    present = {
        key: all(getattr(e, attr) is not None for e in exps) for key, attr in _TOKEN_FIELDS.items()
    }
    token_tensors = {
        key: torch.zeros(batch_size, shifted, dtype=torch.float32)
        for key, ok in present.items()
        if ok
    }

    for i, exp in enumerate(exps):
        n, p, r = len(exp.tokens), exp.prompt_length, exp.response_length
        if r > 0 and p == 0:
            raise ValueError(
                f"experience {exp.eid} has no prompt token, so its first response token "
                "has no prefix to be predicted from"
            )
        input_ids[i, :n] = exp.tokens
        attention_mask[i, :n] = 1
        position_ids[i, :n] = torch.arange(n)
        cols = slice(p - 1, p - 1 + r)
        response_mask[i, cols] = True
        loss_mask[i, cols] = exp.action_mask.bool()
        for key, tensor in token_tensors.items():
            tensor[i, cols] = _float_row(getattr(exp, _TOKEN_FIELDS[key]))

    rewards = None
    if all(e.reward is not None for e in exps):
        rewards = torch.tensor([float(e.reward) for e in exps], dtype=torch.float32)
    return TrainBatch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        position_ids=position_ids,
        response_mask=response_mask,
        loss_mask=loss_mask,
        prompt_lengths=torch.tensor([e.prompt_length for e in exps], dtype=torch.long),
        response_lengths=torch.tensor([e.response_length for e in exps], dtype=torch.long),
        **token_tensors,
        rewards=rewards,
        multi_modal_inputs=join_multi_modal_inputs(exps),
    )


def _float_row(value: object) -> torch.Tensor:
    """A per-token field as float32; one assigned after construction (Trinity-RFT's
    workflows set ``teacher_logprobs`` that way) may be a list or a graph-attached tensor."""
    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float32)
    return torch.as_tensor(value, dtype=torch.float32)
