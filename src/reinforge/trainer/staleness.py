"""How far behind the trainer a step's experiences were sampled.

``trainer.max_staleness`` drops experiences sampled too many versions ago; these
metrics show what each step received, so an off-policy drift (a slow explorer, a
sync that did not land) is visible in the curves before it is a mystery. An
experience without ``info["model_version"]`` counts as version 0, as the stale
filter reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

from reinforge.core import Experience
from reinforge.core.metric_names import (
    TRAIN_STALENESS_MAX,
    TRAIN_STALENESS_MEAN,
    TRAIN_STALENESS_MIN,
)


def versions_behind(exp: Experience, trainer_version: int) -> int:
    """``trainer_version`` minus the version that sampled ``exp``."""
    return trainer_version - int(exp.info.get("model_version", 0) or 0)


def staleness_metrics(exps: Sequence[Experience], trainer_version: int) -> dict[str, float]:
    """Min, mean and max versions behind over every experience a step received (before
    the stale filter); empty for no experiences."""
    behind = [versions_behind(e, trainer_version) for e in exps]
    if not behind:
        return {}
    return {
        TRAIN_STALENESS_MIN: float(min(behind)),
        TRAIN_STALENESS_MEAN: sum(behind) / len(behind),
        TRAIN_STALENESS_MAX: float(max(behind)),
    }
