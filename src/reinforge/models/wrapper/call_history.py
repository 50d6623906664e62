"""The experiences of a wrapper's calls, kept for ``extract_experience_from_history``."""

from __future__ import annotations

import threading

from reinforge.core import Experience
from reinforge.models.history import merge_conversations

#: how ``extract_experience_from_history`` shapes what it returns
HISTORY_SHAPES = ("turn", "conversation")


def check_shape(shape: str, name: str = "shape") -> None:
    if shape not in HISTORY_SHAPES:
        raise ValueError(f"{name} must be one of {HISTORY_SHAPES}, got {shape!r}")


class CallHistory:
    """A list of experiences that worker threads append to under one lock.

    ``items`` is the list itself (``ModelWrapper.history``), so code that reads the
    wrapper's ``history`` sees what was recorded.
    """

    def __init__(self) -> None:
        self.items: list[Experience] = []
        self._lock = threading.Lock()

    def record(self, exps: list[Experience]) -> None:
        with self._lock:
            self.items.extend(exps)

    def mark_truncated(self, turn_id: int) -> None:
        """The conversation that ``turn_id`` belongs to hit the context length."""
        with self._lock:
            for exp in reversed(self.items):
                if exp.info.get("turn_id") == turn_id:
                    exp.truncate_status = "prompt_truncated"
                    exp.info["context_length_exceeded"] = True
                    return

    def extract(self, clear: bool, shape: str) -> list[Experience]:
        """What was recorded (and, with ``clear``, forget it), one experience per turn
        or, for ``shape="conversation"``, per conversation."""
        check_shape(shape)
        with self._lock:
            out = list(self.items)
            if clear:
                self.items.clear()
        return merge_conversations(out) if shape == "conversation" else out

    def clear(self) -> None:
        with self._lock:
            self.items.clear()
