"""Mirror of ``trinity.common.experience``: ``Experience`` and ``group_by``."""

from collections.abc import Iterable

from reinforge.core import EID, Experience


def group_by(
    experiences: Iterable[Experience], id_type: str = "task"
) -> dict[str, list[Experience]]:
    """Experiences grouped by ``task`` (a GRPO group), ``run``, ``step`` or ``uid``."""
    return Experience.group_by(experiences, id_type)


__all__ = ["EID", "Experience", "group_by"]
