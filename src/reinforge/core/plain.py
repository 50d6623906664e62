"""Turn nested records into JSON-friendly data for storage (``to_dict`` helpers)."""

from __future__ import annotations

from enum import Enum
from typing import Any

_SCALARS = (str, int, float, bool, type(None))


def to_plain(value: Any) -> Any:
    """A JSON-friendly copy of ``value``.

    Objects with ``to_dict`` are converted through it, enums become their value,
    tuples and sets become lists, numpy/torch scalars and arrays become Python
    numbers and lists; anything else that JSON cannot hold becomes its ``str``, so a
    stored episode never fails to serialise because of one odd observation.
    """
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Enum):
        return to_plain(value.value)
    if isinstance(value, dict):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_plain(v) for v in value]
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_plain(to_dict())
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, torch tensors
    if callable(tolist):
        return to_plain(tolist())
    return str(value)
