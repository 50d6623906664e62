"""``StepResult``: what one ``Trainer.train_step`` did, for the launcher and the reporter."""

from __future__ import annotations

from dataclasses import dataclass, field

from reinforge.core.metric_names import TRAIN_SKIPPED


@dataclass
class StepResult:
    """The outcome of one training step.

    ``skipped`` is what callers decide on (a skipped step changed no weights, so
    there is nothing to sync); ``metrics`` is the step's row of ``train/...`` metrics
    to report, which says ``train/skipped`` too, for readers of stored rows.
    """

    skipped: bool
    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def skip(cls, metrics: dict[str, float] | None = None) -> StepResult:
        """A step with nothing to train on; ``metrics`` are reported with ``train/skipped``."""
        return cls(skipped=True, metrics={**(metrics or {}), TRAIN_SKIPPED: 1.0})
