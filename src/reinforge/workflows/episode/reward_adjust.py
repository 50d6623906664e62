"""Step-reward adjustments of episode workflows: a progress bonus and discounting.

Pure functions on lists of floats, so the arithmetic is easy to check by hand;
``EpisodeWorkflow.adjust_step_rewards`` applies them to a trajectory's steps.
"""

from __future__ import annotations

from collections.abc import Sequence


def reward_bonus(rewards: Sequence[float], coeff: float) -> list[float]:
    """Shape rewards by their change: ``r'_t = r_t + coeff * (r_t - r_{t-1})`` for t >= 1.

    The first step has no predecessor and keeps its reward. The differences use
    the raw rewards, so shaping one step does not feed into the next. A step that
    improves on the previous one earns extra; one that gets worse loses some.
    """
    out = [float(r) for r in rewards]
    if coeff == 0.0:
        return out
    for t in range(1, len(rewards)):
        out[t] += coeff * (float(rewards[t]) - float(rewards[t - 1]))
    return out


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """Reward-to-go ``G_t = r_t + gamma * G_{t+1}`` (``G`` after the last step is 0)."""
    out = [0.0] * len(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = float(rewards[t]) + gamma * running
        out[t] = running
    return out
