"""Mirror of ``trinity.utils.annotations``: the ``Experimental`` and ``Deprecated``
decorators (each warns once per call site when the decorated function or class is used)."""

from __future__ import annotations

import functools
import warnings
from typing import Any


def _warning_decorator(kind: str, category: type[Warning]) -> Any:
    def decorate(obj: Any) -> Any:
        message = f"{getattr(obj, '__qualname__', obj)} is {kind}"
        if isinstance(obj, type):
            original_init = obj.__init__

            @functools.wraps(original_init)
            def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
                warnings.warn(message, category, stacklevel=2)
                original_init(self, *args, **kwargs)

            obj.__init__ = __init__
            return obj

        @functools.wraps(obj)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(message, category, stacklevel=2)
            return obj(*args, **kwargs)

        return wrapper

    return decorate


#: marks a function or class as experimental (a ``FutureWarning`` when used)
Experimental = _warning_decorator("experimental", FutureWarning)
#: marks a function or class as deprecated (a ``DeprecationWarning`` when used)
Deprecated = _warning_decorator("deprecated", DeprecationWarning)

__all__ = ["Deprecated", "Experimental"]
