"""Task selectors: which tasks of a taskset the next explore batch reads.

The shape is Trinity-RFT's ``trinity.buffer.selector``: a selector is built from the
taskset (``data_source``: its size and its rows' columns) and a
:class:`~reinforge.buffer.taskset_config.DataSelectorConfig`; ``get_indices(n)``
returns the positions of the next ``n`` tasks, ``feedback(indices, values)`` receives
the measured pass rate of each task the last step ran, and ``state_dict`` /
``load_state_dict`` let a run resume where it stopped. Registered by name in
:data:`SELECTORS`; a dotted path names a user's selector.

``get_indices`` also takes ``exclude`` (reinforge's): positions already read in this
explore step, which a selector must not return again, so that one step never runs a
task twice (its rollouts form one group).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from reinforge.buffer.difficulty_estimator import (
    BaseBetaPREstimator,
    InterpolationBetaPREstimator,
    MeasuredBetaPREstimator,
)
from reinforge.buffer.taskset_config import DataSelectorConfig
from reinforge.core import Registry

SELECTORS = Registry("task selector")


@dataclass
class TaskSource:
    """What a selector sees of a taskset: its size and its rows by column."""

    dataset_size: int
    dataset: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Sequence[dict[str, Any]]) -> TaskSource:
        columns: dict[str, list[Any]] = {}
        for i, row in enumerate(rows):
            for key, value in row.items():
                columns.setdefault(key, [None] * len(rows))[i] = value
        return cls(len(rows), columns)

    def features(self, keys: Sequence[str]) -> np.ndarray:
        """The ``keys`` columns as a float matrix [size, len(keys)]."""
        missing = [k for k in keys if k not in self.dataset]
        if missing:
            raise ValueError(f"data_selector.feature_keys {missing}: no such column in the taskset")
        try:
            return np.array([[float(v) for v in self.dataset[k]] for k in keys]).T
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"data_selector.feature_keys {list(keys)}: not numbers ({exc})"
            ) from exc


def _fill(order: Sequence[int], n: int, exclude: Collection[int]) -> list[int]:
    """The first ``n`` of ``order`` not in ``exclude``."""
    return [int(i) for i in order if int(i) not in exclude][:n]


class BaseSelector:
    """Chooses task positions; subclasses override ``get_indices`` and may keep state."""

    def __init__(self, data_source: TaskSource, config: DataSelectorConfig) -> None:
        self.data_source = data_source
        self.config = config
        self.dataset_size = data_source.dataset_size
        self.current_index = 0  # tasks handed out so far (the run's position)

    def get_indices(
        self, batch_size: int, return_extra_info: bool = False, exclude: Collection[int] = ()
    ) -> Any:
        raise NotImplementedError

    def feedback(self, indices: Sequence[int], values: Sequence[float]) -> None:
        """Measured pass rates of the tasks at ``indices`` (static selectors ignore them)."""

    def state_dict(self) -> dict[str, Any]:
        return {"current_index": self.current_index}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.current_index = int(state_dict.get("current_index", 0))

    def _ordered(
        self, order: Sequence[int], batch_size: int, exclude: Collection[int]
    ) -> list[int]:
        """The next ``batch_size`` of a per-epoch ``order``, wrapping into the next epoch."""
        out: list[int] = []
        while len(out) < min(batch_size, self.dataset_size - len(exclude)):
            start = self.current_index % self.dataset_size
            pick = int(self._epoch_order(self.current_index // self.dataset_size)[start])
            self.current_index += 1
            if pick not in exclude and pick not in out:
                out.append(pick)
        return out

    def _epoch_order(self, epoch: int) -> Sequence[int]:
        return range(self.dataset_size)


@SELECTORS.register_module("sequential")
class SequentialSelector(BaseSelector):
    """The taskset's own order, epoch after epoch."""

    def get_indices(
        self, batch_size: int, return_extra_info: bool = False, exclude: Collection[int] = ()
    ) -> Any:
        picked = self._ordered(range(self.dataset_size), batch_size, exclude)
        return (picked, {}) if return_extra_info else picked


@SELECTORS.register_module("shuffle")
class ShuffleSelector(BaseSelector):
    """A new permutation every epoch (seeded by ``seed`` + epoch), read in order."""

    def _epoch_order(self, epoch: int) -> Sequence[int]:
        return np.random.default_rng(self.config.seed + epoch).permutation(self.dataset_size)

    def get_indices(
        self, batch_size: int, return_extra_info: bool = False, exclude: Collection[int] = ()
    ) -> Any:
        picked = self._ordered((), batch_size, exclude)
        return (picked, {}) if return_extra_info else picked


@SELECTORS.register_module("random")
class RandomSelector(BaseSelector):
    """Each batch drawn afresh, without replacement within the batch; no epochs."""

    def get_indices(
        self, batch_size: int, return_extra_info: bool = False, exclude: Collection[int] = ()
    ) -> Any:
        rng = np.random.default_rng(self.config.seed + self.current_index)
        picked = _fill(rng.permutation(self.dataset_size), batch_size, exclude)
        self.current_index += batch_size
        return (picked, {}) if return_extra_info else picked


@SELECTORS.register_module("offline_easy2hard")
class OfflineEasy2HardSelector(BaseSelector):
    """Easy to hard by offline features (higher = easier), sorted once, read in order."""

    def __init__(self, data_source: TaskSource, config: DataSelectorConfig) -> None:
        super().__init__(data_source, config)
        self.features = data_source.features(config.feature_keys)
        rows = sorted([*map(float, row), i] for i, row in enumerate(self.features))
        self.sorted_index = [int(r[-1]) for r in reversed(rows)]

    def _epoch_order(self, epoch: int) -> Sequence[int]:
        return self.sorted_index

    def get_indices(
        self, batch_size: int, return_extra_info: bool = False, exclude: Collection[int] = ()
    ) -> Any:
        picked = self._ordered((), batch_size, exclude)
        if not return_extra_info:
            return picked
        return picked, {"indices": picked, "features": self.features[picked].tolist()}


@SELECTORS.register_module("difficulty_based")
class DifficultyBasedSelector(BaseSelector):
    """Prefers tasks whose estimated pass rate is closest to ``target_reward``.

    ``kwargs``: ``target_reward`` (1.0: easiest first, 0.0: hardest first, 0.5: the
    band the policy solves half the time), ``tau`` (0: the top scores; > 0: sampled
    with softmax(score / tau)), ``do_sample`` (score a draw from each Beta rather than
    its mean), and the estimator's ``m``, ``lamb``, ``rho``, ``adaptive_rho``. With
    two ``feature_keys`` the estimate interpolates offline features (upstream's);
    without, it comes from measured pass rates alone.
    """

    def __init__(self, data_source: TaskSource, config: DataSelectorConfig) -> None:
        super().__init__(data_source, config)
        kwargs = config.kwargs
        self.target_reward = float(kwargs.get("target_reward", 1.0))
        self.tau = float(kwargs.get("tau", 1.0))
        self.do_sample = bool(kwargs.get("do_sample", False))
        self.seed = config.seed
        self.diff_estimator = self.build_diff_estimator(data_source, config.feature_keys, kwargs)

    def build_diff_estimator(
        self, data_source: TaskSource, feature_keys: Sequence[str], kwargs: dict[str, Any]
    ) -> BaseBetaPREstimator:
        m, lamb = int(kwargs.get("m", 16)), float(kwargs.get("lamb", 0.2))
        if not feature_keys:
            return MeasuredBetaPREstimator(data_source.dataset_size, m=m, lamb=lamb)
        if len(feature_keys) != 2:
            raise ValueError(
                "difficulty_based takes exactly 2 feature_keys (or none: measured pass "
                f"rates only), got {list(feature_keys)}"
            )
        return InterpolationBetaPREstimator(
            data_source.features(feature_keys),
            m=m,
            lamb=lamb,
            rho=float(kwargs.get("rho", 0.2)),
            adaptive_rho=bool(kwargs.get("adaptive_rho", False)),
        )

    def feedback(self, indices: Sequence[int], values: Sequence[float]) -> None:
        if len(indices):
            self.diff_estimator.update(indices, values)

    def get_scores(self) -> np.ndarray:
        """Minus the distance of each task's estimated pass rate from the target."""
        rng = np.random.default_rng(self.seed + self.current_index)
        predicted = self.diff_estimator.predict_pr(rng=rng, do_sample=self.do_sample)
        return -np.abs(self.target_reward - predicted)

    def get_indices(
        self, batch_size: int, return_extra_info: bool = False, exclude: Collection[int] = ()
    ) -> Any:
        scores = self.get_scores()
        allowed = np.ones(self.dataset_size, dtype=bool)
        allowed[list(exclude)] = False
        n = min(batch_size, int(allowed.sum()))
        if self.tau == 0:
            order = sorted(np.flatnonzero(allowed), key=lambda i: (-scores[i], i))
            picked = [int(i) for i in order[:n]]
        else:
            logits = np.where(allowed, scores / self.tau, -np.inf)
            probs = np.exp(logits - logits[allowed].max())
            rng = np.random.default_rng(self.seed + self.current_index)
            picked = rng.choice(self.dataset_size, n, replace=False, p=probs / probs.sum()).tolist()
        self.current_index += n
        if not return_extra_info:
            return picked
        est = self.diff_estimator
        return picked, {
            "indices": picked,
            "scores": scores[picked].tolist(),
            "alphas": est.alphas[picked].tolist(),
            "betas": est.betas[picked].tolist(),
            "point": est.predict_pr(indices=picked).tolist(),
        }

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "estimator": self.diff_estimator.state_dict()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        if "estimator" in state_dict:
            self.diff_estimator.load_state_dict(state_dict["estimator"])


def build_selector(config: DataSelectorConfig, data_source: TaskSource) -> BaseSelector:
    """The selector ``config.selector_type`` names, over ``data_source``."""
    cls = SELECTORS.get(config.selector_type)
    return cls(data_source, config)
