"""Per-taskset settings that travel with every Task: how to read a row, how to sample."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class FormatConfig:
    """How the fields of a raw taskset row map onto a prompt and a reference answer."""

    prompt_key: str = "prompt"
    response_key: str | None = "response"
    messages_key: str = "messages"
    system_prompt: str | None = None
    system_prompt_key: str | None = None
    reply_prefix: str | None = None
    prompt_template: str | None = None
    chat_template: str | None = None
    tools_key: str = "tools"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class GenerationConfig:
    """Sampling arguments for one rollout call (n samples per prompt)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int | None = None
    n: int = 1
    logprobs: int | None = 0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["stop"] = list(self.stop)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> GenerationConfig:
        data = dict(data or {})
        known = _field_names(cls)
        if not known.issuperset(data):
            unknown = sorted(set(data) - known)
            raise ValueError(f"unknown rollout_args {unknown}; known: {sorted(known)}")
        return cls(**data)


_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> frozenset[str]:
    """The dataclass field names of ``cls``, looked up once per class (every task
    crossing to a Ray runner actor is rebuilt with ``from_dict``)."""
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in fields(cls))
    return names
