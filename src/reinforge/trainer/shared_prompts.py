"""Each prompt once per micro-batch: rows that share a prompt are packed behind one copy.

A GRPO group's replies share one prompt: the demo's 8 replies per question repeat
about 40 prompt tokens each, half of every row, and collated rows are padded to the
longest. Here the rows of a micro-batch with identical prompt ids are laid out as
one *packed row*: the prompt once, then every reply after it, each reply seeing the
prompt and its own earlier tokens only (a 4D attention mask), at the positions it
has in its own row (rotary positions P, P+1, ... for every reply). The decoder then
computes the prompt's keys and values once and every reply attends to them, in the
forward and in the backward, where autograd sums the replies' gradients into the
prompt's activations once. The loss is the same; the tokens are fewer (the demo's
16 x ~72 padded positions become 2 x ~170).

Why a mask and not a KV cache: transformers' checkpointed decoder layers drop the
cache (``GradientCheckpointingLayer``: "caching is incompatible with gradient
checkpointing"), and the demo trains with checkpointing. Each layer of a packed row
is a plain function of its inputs, so checkpointing recomputes it as it is.

A packed row holds at most ``max(EAGER_MAX_COLUMNS, batch width)`` tokens (a group
whose replies do not fit gets a second packed row with its own copy of the prompt),
so attention's square stays within what the unshared micro-batch would hold; and
the layout is used only where it has fewer padded tokens than the rows as they are.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

import torch

from reinforge.algorithms import TrainBatch
from reinforge.core.metric_names import TRAIN_PREFIX
from reinforge.trainer.attention import EAGER_MAX_COLUMNS

logger = logging.getLogger(__name__)

#: metric names (under ``train/``): the share of rows whose prompt ran once for several
#: rows, and the packed layout's padded tokens over the unshared one's (1.0: not shared)
SHARED_ROWS = "prompt_sharing/shared_rows"
TOKEN_RATIO = "prompt_sharing/token_ratio"

_told: set[str] = set()


@dataclass(frozen=True)
class PackedLayout:
    """Where each row of a micro-batch went in the packed rows (CPU tensors)."""

    #: ``[N, W]`` packed token ids (pad: the batch's first pad column's id, masked anyway)
    input_ids: torch.Tensor
    #: ``[N, W]`` each token's position in its own row
    position_ids: torch.Tensor
    #: ``[N, W, W]`` bool: query q may attend to key k
    allowed: torch.Tensor
    #: ``[B, L - 1]`` packed row / position of the hidden state that predicts column ``j``
    #: of the shifted layout (response columns only; 0 elsewhere)
    src_row: torch.Tensor
    src_pos: torch.Tensor
    #: ``[B, L - 1]`` bool: the columns mapped (every response column)
    covered: torch.Tensor
    #: rows whose prompt is shared with at least one other row in a packed row
    shared_rows: int
    #: padded tokens: packed (N x W) and as collated (B x L)
    packed_tokens: int
    unshared_tokens: int


@dataclass
class SharedPromptBatch(TrainBatch):
    """A ``TrainBatch`` with its packed layout; ``token_logprobs`` uses it for the
    log-probs of response columns (the loss's and the reference's passes)."""

    packed: PackedLayout | None = None


def prompt_key(ids: torch.Tensor, prompt_length: int) -> tuple[int, ...]:
    """Rows share a prompt when these are equal: its length and its exact token ids."""
    return (prompt_length, *ids[:prompt_length].tolist())


def _groups(batch: TrainBatch) -> dict[tuple[int, ...], list[int]]:
    groups: dict[tuple[int, ...], list[int]] = {}
    ids = batch.input_ids.cpu()
    for row, p in enumerate(batch.prompt_lengths.tolist()):
        groups.setdefault(prompt_key(ids[row], int(p)), []).append(row)
    return groups


def plan_layout(batch: TrainBatch) -> PackedLayout | None:
    """The packed layout of ``batch``, or None where it does not pay: no two rows share
    a prompt, the batch has images, or packing would not cut the padded tokens."""
    if batch.multi_modal_inputs:
        return None
    groups = _groups(batch)
    if all(len(rows) < 2 for rows in groups.values()):
        return None
    ids = batch.input_ids.cpu()
    lengths = batch.attention_mask.cpu().sum(dim=1).tolist()
    prompts = batch.prompt_lengths.cpu().tolist()
    rows_n, width = ids.shape
    cap = max(EAGER_MAX_COLUMNS, width)
    # each packed row: [(row, start of its reply)], the prompt's length, its token count
    packed: list[tuple[list[tuple[int, int]], int, int]] = []
    for members in groups.values():
        p = int(prompts[members[0]])
        current: list[tuple[int, int]] = []
        used = p
        for row in members:
            reply = int(lengths[row]) - p
            if current and used + reply > cap:
                packed.append((current, p, used))
                current, used = [], p
            current.append((row, used))
            used += reply
        packed.append((current, p, used))
    w = max(used for _, _, used in packed)
    if len(packed) * w >= rows_n * width:
        return None
    n = len(packed)
    out_ids = torch.zeros(n, w, dtype=ids.dtype)
    positions = torch.zeros(n, w, dtype=torch.long)
    segment = torch.full((n, w), -1, dtype=torch.long)  # -1 pad, 0 prompt, k: reply k
    src_row = torch.zeros(rows_n, width - 1, dtype=torch.long)
    src_pos = torch.zeros(rows_n, width - 1, dtype=torch.long)
    covered = torch.zeros(rows_n, width - 1, dtype=torch.bool)
    shared = 0
    for k, (members, p, _) in enumerate(packed):
        out_ids[k, :p] = ids[members[0][0], :p]
        positions[k, :p] = torch.arange(p)
        segment[k, :p] = 0
        if len(members) > 1:
            shared += len(members)
        for seg, (row, start) in enumerate(members, start=1):
            length = int(lengths[row])
            reply = length - p
            out_ids[k, start : start + reply] = ids[row, p:length]
            positions[k, start : start + reply] = torch.arange(p, length)
            segment[k, start : start + reply] = seg
            # column j predicts token j + 1: the prompt's last token predicts the first
            # reply token, reply token j (j >= p) sits at start + j - p
            src_row[row, p - 1 : length - 1] = k
            src_pos[row, p - 1] = p - 1
            src_pos[row, p : length - 1] = torch.arange(start, start + reply - 1)
            covered[row, p - 1 : length - 1] = True
    q_seg, k_seg = segment[:, :, None], segment[:, None, :]
    causal = torch.ones(w, w, dtype=torch.bool).tril()
    allowed = causal & (k_seg >= 0) & (q_seg >= 0) & ((k_seg == 0) | (k_seg == q_seg))
    allowed |= torch.eye(w, dtype=torch.bool) & (q_seg < 0)  # pad queries: themselves
    return PackedLayout(
        input_ids=out_ids,
        position_ids=positions,
        allowed=allowed,
        src_row=src_row,
        src_pos=src_pos,
        covered=covered,
        shared_rows=shared,
        packed_tokens=n * w,
        unshared_tokens=rows_n * width,
    )


def share_prompts(batch: TrainBatch, enabled: bool = True) -> TrainBatch:
    """``batch`` with its packed layout attached where sharing applies (else as it is)."""
    if not enabled:
        return batch
    layout = plan_layout(batch)
    if layout is None:
        return batch
    fields = {f.name: getattr(batch, f.name) for f in dataclasses.fields(TrainBatch)}
    return SharedPromptBatch(**fields, packed=layout)


def attention_mask_for(model: Any, allowed: torch.Tensor) -> torch.Tensor:
    """The packed rows' ``[N, 1, W, W]`` mask in the form the model's attention takes:
    bool for SDPA, additive float (0 or the dtype's minimum) for eager attention."""
    implementation = getattr(model.config, "_attn_implementation", "eager")
    if implementation == "sdpa":
        return allowed[:, None]
    dtype = next(model.parameters()).dtype
    mask = torch.zeros(allowed.shape, dtype=dtype, device=allowed.device)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[:, None]


def shared_hidden(
    backbone: Any, batch: SharedPromptBatch, only: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """The hidden states that predict the columns in ``only`` (rows in ``only``'s order)
    from one forward of the packed rows, or None when ``only`` reaches outside the
    response columns (the caller then runs the rows as they are)."""
    layout = batch.packed
    if layout is None:
        return None
    device = batch.input_ids.device
    covered = layout.covered.to(device)
    if bool((only & ~covered).any()):
        return None
    hidden = backbone(
        input_ids=layout.input_ids.to(device),
        attention_mask=attention_mask_for(backbone, layout.allowed.to(device)),
        position_ids=layout.position_ids.to(device),
        use_cache=False,
    ).last_hidden_state
    rows = layout.src_row.to(device)[only]
    positions = layout.src_pos.to(device)[only]
    return hidden[rows, positions], batch.input_ids[:, 1:][only]


def sharing_metrics(batches: list[TrainBatch], cfg: Any, spec: Any) -> dict[str, float]:
    """The step's prompt-sharing metrics over its micro-batches (``train/`` names; none
    when ``cfg.share_prompts`` is off). Says once per reason, in the log, when sharing
    is on but did not apply: the entropy bonus (``spec.entropy_coef``) needs every
    column's logits, which the packed rows do not give; or no rows shared a prompt."""
    if not cfg.share_prompts:
        return {}
    applies = spec.entropy_coef <= 0
    rows = sum(int(b.input_ids.shape[0]) for b in batches)
    layouts = [getattr(b, "packed", None) if applies else None for b in batches]
    shared = sum(layout.shared_rows for layout in layouts if layout is not None)
    before = sum(int(b.input_ids.numel()) for b in batches)
    after = sum(
        layout.packed_tokens if layout is not None else int(b.input_ids.numel())
        for b, layout in zip(batches, layouts, strict=True)
    )
    if rows and not shared:
        reason = (
            "the entropy bonus needs the logits of the rows as they are"
            if not applies
            else "no two rows of a micro-batch share their prompt ids, or packing them "
            "would not save tokens"
        )
        if reason not in _told:
            _told.add(reason)
            logger.info("trainer.share_prompts: each prompt runs once per row (%s)", reason)
    return {
        TRAIN_PREFIX + SHARED_ROWS: shared / rows if rows else 0.0,
        TRAIN_PREFIX + TOKEN_RATIO: after / before if before else 1.0,
    }
