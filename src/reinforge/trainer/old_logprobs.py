"""π_old, the denominator of the PPO-style importance ratio, for each experience of a step.

PPO's π_old is the policy whose weights sampled the data. When those are the weights
the trainer holds now (the experience's ``model_version`` equals the trainer's), the
trainer's own log-probs of the step's first pass *are* π_old, exactly and for free.
The engine's reported log-probs are the same quantity computed with other numerics
(a bf16 engine, another attention kernel, vLLM): using them turns that numerical
noise into a fake off-policy ratio. On the demo batch (bf16 engine, bf16-autocast
trainer) that clipped 0.4-0.7% of the tokens and left the gradient at cosine 0.9915
to the exact one, where TRL's (which takes π_old from its own forward) is at 0.9993
(docs/benchmarks.md, "Learning per step").

Experiences sampled by older weights (asynchronous runs) keep the sampler's
log-probs: there the trainer no longer has π_old. One without sampled log-probs is
trained on-policy when it is fresh (said in the metrics and the log) and refused when
it is stale, since its ratio cannot be computed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch

from reinforge.algorithms import TrainBatch, log_ratio_stats
from reinforge.algorithms.policy_loss.common import ratio_metrics, token_log_ratio
from reinforge.core import Experience
from reinforge.core.metric_names import SAMPLER_OF_POLICY

logger = logging.getLogger(__name__)


def _version(exp: Experience) -> int | None:
    value = exp.info.get("model_version")
    return None if value is None else int(value)


def trainer_rows(
    exps: Sequence[Experience], model_version: int, source: str, needed: bool = True
) -> list[bool]:
    """Per experience: True where π_old is the trainer's first-pass log-prob.

    ``source`` is ``TrainerConfig.old_logprobs``; ``needed`` False (a loss without an
    importance ratio, e.g. SFT) asks nothing of the experiences. Raises ``ValueError``
    naming the experience when one has no sampled log-probs and was sampled by older
    weights.
    """
    if not needed:
        return [exp.logprobs is None or source == "trainer" for exp in exps]
    rows = []
    missing = 0
    for exp in exps:
        version = _version(exp)
        fresh = version is None or version == model_version
        if exp.logprobs is None:
            if not fresh:
                raise ValueError(
                    f"experience {exp.eid} was sampled by model version {version} (the "
                    f"trainer is at {model_version}) and has no sampled log-probs, so its "
                    "importance ratio cannot be computed; keep the engine's logprobs on "
                    "the experience, or drop stale ones with trainer.max_staleness: 0"
                )
            missing += 1
            rows.append(True)
        else:
            rows.append(source == "trainer" and version == model_version)
    if missing:
        logger.warning(
            "%d of %d experiences carry no sampled log-probs; trained on-policy with the "
            "trainer's own log-probs as pi_old",
            missing,
            len(exps),
        )
    return rows


def sampler_logprobs(exps: Sequence[Experience], batch: TrainBatch) -> torch.Tensor | None:
    """The engine's log-probs in the batch's shifted layout: collate's ``old_logprobs``
    when every experience has them, else built with zeros on the rows that have none
    (those rows are always trained with the trainer's own), None when no row has any."""
    if batch.old_logprobs is not None:
        return batch.old_logprobs
    if all(exp.logprobs is None for exp in exps):
        return None
    out = torch.zeros(
        batch.response_mask.shape, dtype=torch.float32, device=batch.response_mask.device
    )
    for row, exp in enumerate(exps):
        if exp.logprobs is not None:
            start = exp.prompt_length - 1
            out[row, start : start + exp.response_length] = exp.logprobs.to(out)
    return out


def old_logprobs(
    logp: torch.Tensor, sampler: torch.Tensor | None, own: torch.Tensor
) -> torch.Tensor:
    """π_old ``[B, T]``: the detached ``logp`` on the rows in ``own`` (``[B]`` bool), the
    sampler's log-probs on the others (``sampler`` may be None only if every row is own)."""
    mine = logp.detach()
    if sampler is None:
        if not bool(own.all()):
            raise ValueError("rows without sampled log-probs must use the trainer's own")
        return mine
    return torch.where(own[:, None], mine, sampler)


def sampler_mismatch(
    logp: torch.Tensor, sampler: torch.Tensor | None, mask: torch.Tensor
) -> dict[str, float]:
    """How far the engine's log-probs are from the trainer's on the same weights, over
    the tokens in ``mask``: ``sampler/ratio_mean`` (π_trainer/π_sampler),
    ``sampler/approx_kl_k1|k3``, and the mean, max and min of the per-token log-ratio
    and the mean and max of its absolute value (``sampler/log_ratio_*``,
    ``sampler/abs_log_ratio_*``). Empty when there is nothing to compare."""
    if sampler is None or not bool(mask.any()):
        return {}
    log_ratio = token_log_ratio(logp.detach(), sampler)
    metrics = ratio_metrics(log_ratio, mask)
    out = {SAMPLER_OF_POLICY[key]: value for key, value in metrics.items()}
    out.update(log_ratio_stats(log_ratio, mask))
    return out


def compared_tokens(
    mask: torch.Tensor, own: torch.Tensor, sampled: torch.Tensor, sampler: torch.Tensor | None
) -> torch.Tensor:
    """``[B, T]`` bool: the trained tokens whose π_old is the trainer's own and that have
    a sampled log-prob (``sampled``: ``[B]`` bool, the rows that carry them), where the
    sampler's numbers can be set against the trainer's."""
    compared = mask & own[:, None]
    if sampler is not None:
        compared &= sampled.to(mask.device)[:, None]
    return compared
