"""Per-taskset settings that travel with every Task: how to read a row, how to sample.

``GenerationConfig`` is the one sampling type from the YAML file to the engine:

* The taskset YAML's ``rollout_args`` section is validated as this very class (pydantic
  validates a standard dataclass from its annotations: the ``Field`` bounds below and
  ``extra="forbid"``), so an error names the field as for any other config section and
  no second, pydantic-only copy of the fields exists.
* The class stays a plain dataclass, so building one in Python costs what a dataclass
  costs (tasks are copied per attempt), ``dataclasses.asdict`` works as Trinity-RFT
  workflows expect, and Python callers are not validated twice (the engine's request
  checks the values again, whoever built them).
* It is also a mutable mapping over its fields, because Trinity-RFT workflows treat
  ``rollout_args`` as a dict: ``self.model.chat(messages, **self.rollout_args)``,
  ``args = self.rollout_args.copy(); args["n"] = 1``, ``rollout_args.get(...)``.
  Attributes (``rollout_args.n``) work as well.
* The engine gets it through ``ModelWrapper.chat``/``generate``, which accept every
  field as a keyword; ``reinforge.models.wrapper.sampling_args`` turns those keywords
  into the engine's request (``SamplingParams``: the same settings with ``max_tokens``
  resolved, plus the engine-only ``stop_token_ids`` and ``top_logprobs``) in one place.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, ClassVar

from pydantic import ConfigDict, Field


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
    #: where the multimodal workflows find a row's images / videos (None: "image" / "video")
    image_key: str | None = None
    video_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _UnsetN(int):
    """The default ``n`` (1), told apart from an explicit 1 by its type: a ``Task``
    takes ``n`` from ``repeat_times`` only while ``n`` is unset (``n_is_set``). It is an
    int in every other respect (arithmetic on it gives plain ints), and copies, pickles
    and ``asdict`` keep its type."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "1"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_UnsetN, (1,))

    def __deepcopy__(self, memo: dict[int, Any]) -> _UnsetN:
        return self

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """Dumped as the plain int 1, so pydantic can write it as the field's default
        (the config's JSON schema)."""
        from pydantic_core import core_schema

        return core_schema.int_schema(
            serialization=core_schema.plain_serializer_function_ser_schema(int)
        )


_UNSET_N = _UnsetN(1)


@dataclass
class GenerationConfig(MutableMapping[str, Any]):
    """Sampling arguments for one rollout call (``n`` samples per prompt).

    ``max_tokens`` None means the model's default (``model.max_response_tokens``);
    ``top_k`` -1 means no top-k; ``logprobs`` is accepted for Trinity-RFT's configs
    and calls, and has no effect: the sampled tokens' log-probabilities are always
    returned. ``n`` left out is 1 and counts as unset (``n_is_set``): a ``Task`` then
    sets it from ``repeat_times``; an ``n`` given explicitly, 1 included, is kept.
    """

    #: how pydantic validates the YAML section: a misspelt key is an error
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    temperature: Annotated[float, Field(ge=0)] = 1.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    top_k: int = -1
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    n: Annotated[int, Field(ge=1)] = _UNSET_N
    logprobs: int | None = 0
    seed: int | None = None
    stop: list[str] = field(default_factory=list)

    # ---- the mapping view (Trinity-RFT workflows spread and copy rollout_args) ----------

    def __getitem__(self, key: str) -> Any:
        if key not in _field_names(type(self)):
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key not in _field_names(type(self)):
            raise KeyError(f"unknown rollout_args key {key!r}; known: {_known(type(self))}")
        setattr(self, key, value)

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"rollout_args keys cannot be removed (set {key!r} to None instead)")

    def __iter__(self) -> Iterator[str]:
        return iter(_field_order(type(self)))

    def __len__(self) -> int:
        return len(_field_order(type(self)))

    def n_is_set(self) -> bool:
        """Whether ``n`` was given (to the constructor or assigned since), not left out."""
        return type(self.n) is not _UnsetN

    def copy(self) -> GenerationConfig:
        """An independent copy (its ``stop`` list too), still a GenerationConfig."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.stop = list(self.stop)
        return new

    # ---- plain data, for crossing a process boundary --------------------------------

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["stop"] = list(self.stop)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> GenerationConfig:
        data = dict(data or {})
        if not _field_names(cls).issuperset(data):
            unknown = sorted(set(data) - _field_names(cls))
            raise ValueError(f"unknown rollout_args {unknown}; known: {_known(cls)}")
        return cls(**data)


_FIELD_ORDER: dict[type, tuple[str, ...]] = {}
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_order(cls: type) -> tuple[str, ...]:
    """The dataclass field names of ``cls`` in declaration order, looked up once per
    class (every task crossing to a Ray runner actor is rebuilt with ``from_dict``, and
    ``**rollout_args`` iterates them on every model call)."""
    names = _FIELD_ORDER.get(cls)
    if names is None:
        names = _FIELD_ORDER[cls] = tuple(f.name for f in fields(cls))
    return names


def _field_names(cls: type) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = frozenset(_field_order(cls))
    return names


def _known(cls: type) -> list[str]:
    return sorted(_field_names(cls))
