"""The unit of training data: one token sequence the policy produced, with its reward."""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import torch

import reinforge.core.multi_modal_inputs as mm
from reinforge.core.eid import EID

TensorLike = torch.Tensor | Sequence[int] | Sequence[float] | np.ndarray


def _length(t: torch.Tensor) -> int:
    # ``len(tensor)`` goes through Tensor.__len__ in Python; shape[0] does not.
    return t.shape[0] if t.ndim else len(t)


def _as_tensor(value: TensorLike | None, dtype: torch.dtype) -> torch.Tensor | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.dtype != dtype else value
    return torch.as_tensor(np.asarray(value), dtype=dtype)


@dataclass
class Experience:
    """Token-exact record of one model response (single-turn) or conversation (multi-turn).

    ``tokens`` holds prompt and response ids; ``prompt_length`` splits them. Every
    per-token field (``logprobs``, ``action_mask``, ``token_level_reward``,
    ``advantages``, ``returns``) covers the response part only, i.e. has length
    ``len(tokens) - prompt_length``. ``action_mask`` is 1 where the model sampled
    the token and 0 for tokens it did not generate (tool results, user turns and
    template glue in multi-turn experiences).

    ``multi_modal_inputs`` (vision-language models only) holds the processor's extra
    model inputs for the prompt's images (``pixel_values``...; the image placeholder
    tokens are already in ``tokens``), so the trainer re-scores exactly what was
    sampled; see ``reinforge.core.multi_modal_inputs`` for how they are stored.

    ``teacher_logprobs`` (per response token, like ``logprobs``) are a teacher
    model's log-probabilities of the sampled tokens, as Trinity-RFT's on-policy
    distillation workflows set them (``response.teacher_logprobs = ...``, also after
    construction). They are stored and read back with the experience, and the
    ``on_policy_distill`` advantage trains the policy toward them.
    """

    tokens: TensorLike = field(default_factory=list)
    prompt_length: int = 0
    logprobs: TensorLike | None = None
    action_mask: TensorLike | None = None
    reward: float | None = None
    token_level_reward: TensorLike | None = None
    advantages: TensorLike | None = None
    returns: TensorLike | None = None
    eid: EID = field(default_factory=EID)
    info: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    response_text: str | None = None
    prompt_text: str | None = None
    truncate_status: str | None = None
    multi_modal_inputs: dict[str, torch.Tensor] | None = None
    teacher_logprobs: TensorLike | None = None

    def __post_init__(self) -> None:
        # Built for every sampled response, so the common case (tensors of the right
        # dtype, optional fields unset) is kept to a few attribute reads.
        self.tokens = tokens = _as_tensor(self.tokens, torch.long)
        n_resp = _length(tokens) - self.prompt_length
        if self.prompt_length < 0 or n_resp < 0:
            raise ValueError(
                f"prompt_length={self.prompt_length} is outside the {len(tokens)} tokens"
            )
        if self.logprobs is not None:
            self.logprobs = _as_tensor(self.logprobs, torch.float32)
        if self.action_mask is None:
            # numpy, not torch.ones: torch's factory functions release the GIL, and with
            # many runner threads waiting for it that handed the GIL over (a few futex
            # calls and context switches) for every experience built
            self.action_mask = torch.from_numpy(np.ones(n_resp, dtype=np.bool_))
        else:
            self.action_mask = _as_tensor(self.action_mask, torch.bool)
        if self.token_level_reward is not None:
            self.token_level_reward = _as_tensor(self.token_level_reward, torch.float32)
        if self.advantages is not None:
            self.advantages = _as_tensor(self.advantages, torch.float32)
        if self.returns is not None:
            self.returns = _as_tensor(self.returns, torch.float32)
        if self.teacher_logprobs is not None:
            self.teacher_logprobs = _as_tensor(self.teacher_logprobs, torch.float32)
        for name in _PER_TOKEN_FIELDS:
            value = getattr(self, name)
            if value is not None and _length(value) != n_resp:
                raise ValueError(
                    f"Experience.{name} has {len(value)} entries but the response has {n_resp} tokens "
                    f"(len(tokens)={len(tokens)}, prompt_length={self.prompt_length})"
                )
        if isinstance(self.eid, str):
            self.eid = EID.from_str(self.eid)
        if self.multi_modal_inputs is not None:
            self.multi_modal_inputs = mm.from_jsonable(self.multi_modal_inputs)

    @property
    def response_length(self) -> int:
        return len(self.tokens) - self.prompt_length

    @property
    def experience_type(self) -> str:
        """``multi_turn`` when some response tokens were not generated by the model."""
        return "single_turn" if bool(self.action_mask.all()) else "multi_turn"

    @property
    def prompt_tokens(self) -> torch.Tensor:
        return self.tokens[: self.prompt_length]

    @property
    def response_tokens(self) -> torch.Tensor:
        return self.tokens[self.prompt_length :]

    def mask(self, reason: str) -> None:
        """Keep this experience out of training, saying why (e.g. its judge failed).

        The explorer counts masked experiences per reason in the step metrics, records
        the reason with the task, and does not store them for the trainer; their
        metrics (a gold reward, ``judge_success``) still count in the step's numbers.
        """
        self.info["mask_reason"] = reason

    @property
    def mask_reason(self) -> str | None:
        """Why this experience is kept out of training (see ``mask``), or None."""
        return self.info.get("mask_reason")

    @staticmethod
    def group_by(
        experiences: Iterable[Experience], id_type: str = "task"
    ) -> dict[str, list[Experience]]:
        """Group experiences by ``task`` (GRPO groups), ``run``, ``step`` or ``uid``."""
        groups: dict[str, list[Experience]] = defaultdict(list)
        for exp in experiences:
            groups[exp.eid.key(id_type)].append(exp)
        return dict(groups)

    # ---- serialisation -------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (tensors become lists, the action mask 0/1)."""
        data: dict[str, Any] = {"eid": self.eid.uid}
        for name in _DICT_FIELDS:
            value = getattr(self, name)
            data[name] = _plain_list(value) if name in _ARRAY_FIELDS else value
        data[_MM_FIELD] = mm.to_jsonable(self.multi_modal_inputs)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experience:
        data = dict(data)
        data["eid"] = (
            EID.from_str(data["eid"])
            if isinstance(data.get("eid"), str)
            else data.get("eid", EID())
        )
        return cls(**data)

    def to_bytes(self) -> bytes:
        """Compact binary form: a JSON header followed by raw little-endian arrays."""
        arrays: list[tuple[str, np.ndarray]] = []
        for name, (stored, _held) in _ARRAY_FIELDS.items():
            value = getattr(self, name)
            if value is not None:
                arrays.append((name, _as_numpy(value).astype(stored, copy=False)))
        header: dict[str, Any] = {"eid": self.eid.uid}
        for name in _HEADER_FIELDS:
            header[name] = getattr(self, name)
        header["arrays"] = [[name, arr.dtype.str, len(arr)] for name, arr in arrays]
        extra = b"" if self.multi_modal_inputs is None else mm.encode(self.multi_modal_inputs)
        if extra:
            header[_MM_FIELD] = len(extra)  # its bytes follow the arrays
        head = _HEADER_ENCODER.encode(header).encode()
        return b"".join(
            [_HEAD_LEN.pack(len(head)), head, *(arr.tobytes() for _, arr in arrays), extra]
        )

    @classmethod
    def from_bytes(cls, blob: bytes) -> Experience:
        (head_len,) = _HEAD_LEN.unpack_from(blob, 0)
        header = json.loads(blob[4 : 4 + head_len])
        offset = 4 + head_len
        kwargs: dict[str, Any] = {}
        for name, dtype, length in header.pop("arrays"):
            arr = np.frombuffer(blob, dtype=np.dtype(dtype), count=length, offset=offset)
            offset += arr.nbytes
            # Convert straight into the dtype the field is kept in (one copy, and the
            # tensor owns writable memory rather than a view of the blob).
            target = _HELD_DTYPES.get(name)
            kwargs[name] = torch.from_numpy(arr.copy() if target is None else arr.astype(target))
        extra = header.pop(_MM_FIELD, 0)
        if extra:
            kwargs[_MM_FIELD] = mm.decode(blob[offset : offset + extra])
        kwargs["eid"] = EID.from_str(header.pop("eid"))
        return cls(**header, **kwargs)


# ---- the field list of both serialisations -------------------------------------------

#: The array fields, in the order ``to_bytes`` stores them after the header: name ->
#: (dtype stored, numpy dtype ``__post_init__`` keeps the field in).
_ARRAY_FIELDS: dict[str, tuple[str, Any]] = {
    "tokens": ("<i4", np.int64),
    "action_mask": ("u1", np.bool_),
    "logprobs": ("<f4", np.float32),
    "token_level_reward": ("<f4", np.float32),
    "advantages": ("<f4", np.float32),
    "returns": ("<f4", np.float32),
    "teacher_logprobs": ("<f4", np.float32),
}
_HELD_DTYPES: dict[str, Any] = {name: held for name, (_stored, held) in _ARRAY_FIELDS.items()}
#: Every field after ``eid`` (which both forms write first, as its uid), in the
#: dataclass's order: what ``to_dict`` writes.
_MM_FIELD = "multi_modal_inputs"  # tensors of their own form, after the arrays
_DICT_FIELDS = tuple(f.name for f in fields(Experience) if f.name not in ("eid", _MM_FIELD))
#: The fields ``to_bytes`` keeps in its JSON header (all but ``eid`` and the arrays).
_HEADER_FIELDS = tuple(name for name in _DICT_FIELDS if name not in _ARRAY_FIELDS)
#: The arrays that run along the response, checked against its length.
_PER_TOKEN_FIELDS = tuple(
    name for name in _DICT_FIELDS if name in _ARRAY_FIELDS and name != "tokens"
)


def _as_numpy(value: Any) -> np.ndarray:
    """A field's array; a field assigned after construction (Trinity-RFT workflows set
    ``teacher_logprobs`` that way) may be a list, or a tensor that records gradients."""
    if isinstance(value, torch.Tensor):
        return (
            value.detach().cpu().numpy() if value.requires_grad or value.is_cuda else value.numpy()
        )
    return np.asarray(value)


def _plain_list(value: torch.Tensor | None) -> list | None:
    """A tensor as a JSON list; a bool mask becomes 0/1."""
    if value is None:
        return None
    if not isinstance(value, torch.Tensor):
        return np.asarray(value).tolist()
    return (value.to(torch.uint8) if value.dtype == torch.bool else value).tolist()


def _json_default(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# One encoder for every header (json.dumps with options builds a new one per call).
_HEADER_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_json_default)
_HEAD_LEN = struct.Struct("<I")
