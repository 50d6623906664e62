"""``ModelOutput``: what one model call returned, in the shape rLLM's rollout engines use.

Episode-style workflows (``reinforge.workflows.episode``) ask a rollout engine for a
reply and get one of these back. It keeps the exact token ids the prompt was
encoded to and the ids the model sampled, so a ``Step`` built from it can become a
token-exact ``Experience`` without re-tokenizing anything. Plain data, no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reinforge.core.plain import to_plain


@dataclass
class ModelOutput:
    """One sampled reply.

    ``text`` is the whole decoded reply; ``content`` is the part meant for the
    reader (``text`` without a leading ``<think>`` block and without tool-call
    markup); ``reasoning`` is that thinking block, if any. ``prompt_ids`` and
    ``completion_ids`` are the ids that went in and came out, ``logprobs`` are the
    sampling log-probabilities of ``completion_ids`` (same length).
    """

    text: str | None = None
    content: str | None = None
    reasoning: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_length: int = 0
    completion_length: int = 0
    finish_reason: str | None = None
    weight_version: int | None = None
    metrics: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.prompt_ids is not None and not self.prompt_length:
            self.prompt_length = len(self.prompt_ids)
        if self.completion_ids is not None and not self.completion_length:
            self.completion_length = len(self.completion_ids)
        if (
            self.logprobs is not None
            and self.completion_ids is not None
            and len(self.logprobs) != len(self.completion_ids)
        ):
            raise ValueError(
                f"ModelOutput has {len(self.logprobs)} logprobs for "
                f"{len(self.completion_ids)} completion ids"
            )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict; ``from_dict`` inverts it."""
        return {
            "text": self.text,
            "content": self.content,
            "reasoning": self.reasoning,
            "tool_calls": to_plain(self.tool_calls),
            "prompt_ids": None if self.prompt_ids is None else list(self.prompt_ids),
            "completion_ids": None if self.completion_ids is None else list(self.completion_ids),
            "logprobs": None if self.logprobs is None else list(self.logprobs),
            "prompt_length": self.prompt_length,
            "completion_length": self.completion_length,
            "finish_reason": self.finish_reason,
            "weight_version": self.weight_version,
            "metrics": to_plain(self.metrics),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelOutput:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        if known.get("metrics") is None:
            known.pop("metrics", None)
        return cls(**known)
