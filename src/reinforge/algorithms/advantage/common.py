"""Shared plumbing of the advantage estimators: rewards in, per-token tensors out."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.core import Experience


def outcome_reward(exp: Experience) -> float:
    """The scalar reward of ``exp``; outcome-based estimators cannot work without one."""
    if exp.reward is None:
        raise ValueError(f"experience {exp.eid} has no reward; set Experience.reward first")
    return float(exp.reward)


def group_indices(exps: Sequence[Experience], id_type: str = "task") -> list[list[int]]:
    """Indices of ``exps`` grouped by ``eid.key(id_type)``, groups in first-seen order."""
    groups: dict[str, list[int]] = {}
    for i, exp in enumerate(exps):
        groups.setdefault(exp.eid.key(id_type), []).append(i)
    return list(groups.values())


def run_indices(exps: Sequence[Experience], task_idx: Sequence[int]) -> list[list[int]]:
    """The indices ``task_idx`` of one task split by run (``eid.rid``), each run
    ordered by ``eid.step`` (stable), runs in first-seen order."""
    runs: dict[str, list[int]] = {}
    for i in task_idx:
        runs.setdefault(exps[i].eid.rid, []).append(i)
    return [sorted(idx, key=lambda i: exps[i].eid.step) for idx in runs.values()]


def run_step_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """``G_t = r_t + gamma * G_{t+1}`` for every step of one run (``G`` after the end is 0)."""
    out = [0.0] * len(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


def action_mask_f(exp: Experience) -> torch.Tensor:
    """The response's action mask as float32 (1 = token sampled by the policy)."""
    return exp.action_mask.to(torch.float32)


def set_outcome_advantage(exp: Experience, advantage: float, ret: float) -> None:
    """Broadcast a scalar advantage and return over the response's action tokens.

    Non-action tokens (tool output, user turns) get 0 so they never carry credit.
    """
    mask = action_mask_f(exp)
    exp.advantages = mask * float(advantage)
    exp.returns = mask * float(ret)


def group_normalise(
    scores: torch.Tensor, epsilon: float, std_normalize: bool = True
) -> tuple[torch.Tensor, bool]:
    """GRPO's ``(s − mean) / (std + eps)`` over one group (unbiased std, as in verl).

    A group of one gets 0 (no baseline to compare against). Returns the normalised
    scores and whether the group had no spread (all scores equal).
    """
    if scores.numel() < 2:
        return torch.zeros_like(scores), True
    centred = scores - scores.mean()
    flat = bool(torch.all(scores == scores[0]))
    if not std_normalize:
        return centred, flat
    return centred / (scores.std(unbiased=True) + epsilon), flat


def pad_rows(
    rows: Sequence[torch.Tensor | Sequence[float]], width: int | None = None
) -> torch.Tensor:
    """Right-pad 1-D rows (tensors or lists) with zeros into a float32 ``[N, width]``."""
    width = max((len(r) for r in rows), default=0) if width is None else width
    out = torch.zeros(len(rows), width, dtype=torch.float32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.as_tensor(row, dtype=torch.float32)
    return out


def summary(prefix: str, values: torch.Tensor) -> dict[str, float]:
    """``{prefix}/mean``, ``/std``, ``/max``, ``/min`` of a 1-D tensor (zeros if empty)."""
    if values.numel() == 0:
        return {f"{prefix}/{k}": 0.0 for k in ("mean", "std", "max", "min")}
    std = values.std(unbiased=False) if values.numel() > 1 else torch.zeros(())
    return {
        f"{prefix}/mean": float(values.mean()),
        f"{prefix}/std": float(std),
        f"{prefix}/max": float(values.max()),
        f"{prefix}/min": float(values.min()),
    }
