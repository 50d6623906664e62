"""Mirror of ``trinity.buffer.selector.difficulty_estimator``: per-task Beta pass-rate
estimates (reinforge adds ``MeasuredBetaPREstimator``, for tasksets without features)."""

from reinforge.buffer.difficulty_estimator import (
    BaseBetaPREstimator,
    InterpolationBetaPREstimator,
    MeasuredBetaPREstimator,
)

__all__ = ["BaseBetaPREstimator", "InterpolationBetaPREstimator", "MeasuredBetaPREstimator"]
