"""Per-task pass-rate estimates as Beta distributions, updated from measured pass rates.

Trinity-RFT's difficulty-based task selection keeps, for every task of a taskset, a
Beta(alpha, beta) belief about how often the current policy solves it. Each explore
step measures the pass rate of the tasks it ran and folds it in: old evidence decays
by ``lamb`` (the policy changes, so old counts matter less), the measured rate counts
as ``m`` rollouts, and tasks not run this step are pulled towards a prediction made
from two offline difficulty features (``rho`` weighs that pseudo-evidence). Without
features (reinforge's addition, for tasksets that carry no difficulty columns) only
the measured rates count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class BaseBetaPREstimator:
    """Beta(alpha, beta) per task; ``alpha / (alpha + beta)`` is its expected pass rate.

    Update rule (per task, ``s``/``f`` the measured successes/failures in units of ``m``
    rollouts, ``p`` the predicted rate for pseudo-counts)::

        alpha <- (1 - lamb) * alpha + lamb + (1 - rho) * s + rho * p * m
        beta  <- (1 - lamb) * beta  + lamb + (1 - rho) * f + rho * (1 - p) * m
    """

    def __init__(self, n: int, m: int = 16, lamb: float = 0.2, rho: float = 0.2) -> None:
        self.n = n
        self.m = m
        self.lamb = lamb
        self.rho = rho
        self.alphas = np.ones(n, dtype=float)
        self.betas = np.ones(n, dtype=float)

    def set(self, alphas: np.ndarray, betas: np.ndarray) -> None:
        self.alphas = np.asarray(alphas, dtype=float)
        self.betas = np.asarray(betas, dtype=float)

    def _update(self, s_bar: np.ndarray, f_bar: np.ndarray, p_tilde: np.ndarray) -> None:
        keep = 1 - self.lamb
        self.alphas = keep * self.alphas + self.lamb + (1 - self.rho) * s_bar
        self.alphas += self.rho * p_tilde * self.m
        self.betas = keep * self.betas + self.lamb + (1 - self.rho) * f_bar
        self.betas += self.rho * (1 - p_tilde) * self.m

    def update(self, ref_indices: Sequence[int], ref_pass_rates: Sequence[float]) -> None:
        raise NotImplementedError

    def predict_pr(
        self,
        rng: np.random.Generator | None = None,
        indices: Sequence[int] | None = None,
        do_sample: bool = False,
    ) -> np.ndarray:
        """Expected pass rates (or one draw from each Beta when ``do_sample``)."""
        idx = np.arange(self.n) if indices is None else np.asarray(indices)
        if not do_sample:
            return self.alphas[idx] / (self.alphas[idx] + self.betas[idx])
        return (rng or np.random.default_rng()).beta(self.alphas[idx], self.betas[idx])

    def equivalent_count(self, indices: Sequence[int] | None = None) -> np.ndarray:
        idx = np.arange(self.n) if indices is None else np.asarray(indices)
        return self.alphas[idx] + self.betas[idx]

    def state_dict(self) -> dict[str, Any]:
        """The estimates, so a resumed run keeps what it measured (upstream keeps only
        the selector's position and starts its estimates afresh)."""
        return {"alphas": self.alphas.tolist(), "betas": self.betas.tolist(), "rho": self.rho}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "alphas" in state:
            self.set(np.array(state["alphas"]), np.array(state["betas"]))
        self.rho = float(state.get("rho", self.rho))


class MeasuredBetaPREstimator(BaseBetaPREstimator):
    """Only measured pass rates count: a task not run this step keeps its belief, decayed
    towards the uniform prior by ``lamb`` (reinforge's; for tasksets without features)."""

    def __init__(self, n: int, m: int = 16, lamb: float = 0.2) -> None:
        super().__init__(n, m, lamb, rho=0.0)

    def update(self, ref_indices: Sequence[int], ref_pass_rates: Sequence[float]) -> None:
        idx = np.asarray(ref_indices, dtype=int)
        rates = np.clip(np.asarray(ref_pass_rates, dtype=float), 0.0, 1.0)
        s_bar = np.zeros(self.n)
        f_bar = np.zeros(self.n)
        s_bar[idx] = rates * self.m
        f_bar[idx] = (1 - rates) * self.m
        self._update(s_bar, f_bar, np.zeros(self.n))


class InterpolationBetaPREstimator(BaseBetaPREstimator):
    """Upstream's estimator: two offline features per task (pass rates of a weak and a
    strong reference model, say) and a capability coefficient fitted to the measured
    rates predict the rate of every task, including those not run."""

    def __init__(
        self,
        features: np.ndarray,
        m: int,
        lamb: float,
        rho: float,
        cap_coef_update_discount: float = 0.9,
        adaptive_rho: bool = False,
    ) -> None:
        super().__init__(len(features), m, lamb, rho)
        self.features = np.asarray(features, dtype=float)  # [n, 2]
        self.cap_coef: float | None = None
        self.cap_coef_update_discount = cap_coef_update_discount
        self.adaptive_rho = adaptive_rho

    def update(self, ref_indices: Sequence[int], ref_pass_rates: Sequence[float]) -> None:
        idx = np.asarray(ref_indices, dtype=int)
        rates = np.clip(np.asarray(ref_pass_rates, dtype=float), 0.0, 1.0)
        anchor = np.mean(self.features[idx], axis=0)
        estimate = (float(np.mean(rates)) - anchor[0]) / (anchor[1] - anchor[0] + 1e-6)
        if self.cap_coef is None:
            self.cap_coef = float(estimate)
        else:
            d = self.cap_coef_update_discount
            self.cap_coef = float(d * self.cap_coef + (1 - d) * estimate)
        s_bar = np.zeros(self.n)
        f_bar = np.zeros(self.n)
        s_bar[idx] = rates * self.m
        f_bar[idx] = (1 - rates) * self.m
        low, high = self.features[:, 0], self.features[:, 1]
        p_tilde = np.clip((high - low) * self.cap_coef + low, 0, 1)
        error = float(np.mean(np.abs(p_tilde[idx] - rates)))
        if self.adaptive_rho and error >= 0.25:
            self.rho *= 0.5
        p_tilde[idx] = rates
        self._update(s_bar, f_bar, p_tilde)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "cap_coef": self.cap_coef}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.cap_coef = state.get("cap_coef", self.cap_coef)
