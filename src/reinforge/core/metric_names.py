"""The names of the metrics training emits, in one place.

A training step reports a flat ``{name: value}`` row (``metrics.jsonl``, TensorBoard
tags, the console). The algorithms' pure functions name their metrics without the
``train/`` prefix (``policy/loss``); the trainer adds it when it reports them
(``train/policy/loss``, see ``train_metric``). The names are part of what a run
stores, so they never change; readers of stored rows (``reinforge summary``, the
monitor, the viewer) look them up here too.

It lives in ``core`` because the algorithms, which import only ``core``, emit most
of them.
"""

from __future__ import annotations

#: the prefix of every metric of a training step
TRAIN_PREFIX = "train/"


def train_metric(name: str) -> str:
    """The reported name of a step metric named ``name`` by an algorithm or the trainer."""
    return TRAIN_PREFIX + name


# ---- the trainer's step ------------------------------------------------------------------

#: 1.0 on a step that had nothing to train on (reported only; the launcher reads
#: ``StepResult.skipped``)
TRAIN_SKIPPED = "train/skipped"
TRAIN_STALE_DROPPED = "train/stale_dropped"
#: how many versions behind the trainer the step's experiences were sampled (min/mean/max)
TRAIN_STALENESS_MIN = "train/staleness_min"
TRAIN_STALENESS_MEAN = "train/staleness_mean"
TRAIN_STALENESS_MAX = "train/staleness_max"
TRAIN_NONFINITE_GRAD = "train/nonfinite_grad"
TRAIN_GRAD_NORM = "train/grad_norm"
TRAIN_LR = "train/lr"
TRAIN_EXPERIENCES = "train/experiences"
#: the rows the step forwarded: fewer than its experiences where step-wise runs were
#: merged into one row each (``trainer.merge_step_prefixes``)
TRAIN_ROWS = "train/rows"
TRAIN_TOKENS = "train/tokens"
TRAIN_STEP_TIME = "train/step_time"
TRAIN_SAMPLES_PER_MIN = "train/samples_per_min"
#: seconds the launcher spent syncing weights into the engine after the step
TRAIN_SYNC_TIME = "train/sync_time"
#: trainer ranks of the step (1: in process)
TRAIN_WORLD_SIZE = "train/world_size"
#: the slowest and fastest rank's update phase (several ranks only)
TRAIN_RANK_TIME_MAX = "train/rank_update_time_max"
TRAIN_RANK_TIME_MIN = "train/rank_update_time_min"

# ---- per micro-batch, averaged over the step (reported with the train/ prefix) ----------

#: the optimised total: policy loss + KL loss - entropy bonus
LOSS = "loss"
TRAIN_LOSS = train_metric(LOSS)

# policy losses
POLICY_LOSS = "policy/loss"
POLICY_CLIP_FRAC = "policy/clip_frac"
POLICY_DUAL_CLIP_FRAC = "policy/dual_clip_frac"
POLICY_SEQ_RATIO_MEAN = "policy/seq_ratio_mean"
POLICY_APPROX_KL_K1 = "policy/approx_kl_k1"
POLICY_APPROX_KL_K3 = "policy/approx_kl_k3"
POLICY_RATIO_MEAN = "policy/ratio_mean"
SFT_LOSS = "sft/loss"
#: the SFT term on demonstrations mixed into an RL step (``trainer.sft_aux``), unweighted
SFT_AUX_LOSS = "sft_aux/loss"
SFT_AUX_EXPERIENCES = "sft_aux/experiences"

#: the engine's log-probs against the trainer's on the same weights: the importance
#: ratio metrics of ``policy/`` computed with the sampler as π_old
SAMPLER_APPROX_KL_K1 = "sampler/approx_kl_k1"
SAMPLER_APPROX_KL_K3 = "sampler/approx_kl_k3"
SAMPLER_RATIO_MEAN = "sampler/ratio_mean"
SAMPLER_OF_POLICY: dict[str, str] = {
    POLICY_APPROX_KL_K1: SAMPLER_APPROX_KL_K1,
    POLICY_APPROX_KL_K3: SAMPLER_APPROX_KL_K3,
    POLICY_RATIO_MEAN: SAMPLER_RATIO_MEAN,
}
#: the per-token log-ratio log(π_trainer/π_sampler) on those tokens: its mean, extremes,
#: and the mean and max of its absolute value
SAMPLER_LOG_RATIO_MEAN = "sampler/log_ratio_mean"
SAMPLER_LOG_RATIO_MAX = "sampler/log_ratio_max"
SAMPLER_LOG_RATIO_MIN = "sampler/log_ratio_min"
SAMPLER_ABS_LOG_RATIO_MEAN = "sampler/abs_log_ratio_mean"
SAMPLER_ABS_LOG_RATIO_MAX = "sampler/abs_log_ratio_max"
#: truncated importance sampling (``sampler_correction: {type: tis}``): the mean per-token
#: weight min(π_old/π_sampler, cap) and the share of tokens whose weight the cap cut
SAMPLER_TIS_WEIGHT_MEAN = "sampler/tis_weight_mean"
SAMPLER_TIS_CAPPED_FRAC = "sampler/tis_capped_frac"
#: micro-batch metrics a step reports as their largest (smallest) value over its
#: micro-batches rather than their mean
MAX_OVER_MICRO_BATCHES = frozenset({SAMPLER_LOG_RATIO_MAX, SAMPLER_ABS_LOG_RATIO_MAX})
MIN_OVER_MICRO_BATCHES = frozenset({SAMPLER_LOG_RATIO_MIN})

# KL and entropy terms
KL_LOSS_VALUE = "kl_loss/value"
KL_LOSS_COEF = "kl_loss/coef"
KL_PENALTY_MEAN = "kl_penalty/mean"
KL_PENALTY_COEF = "kl_penalty/coef"
ENTROPY_VALUE = "entropy/value"
ENTROPY_COEF = "entropy/coef"

# ---- per step, from the advantage estimator (reported with the train/ prefix) -----------

#: prefixes of the ``/mean``, ``/std``, ``/max``, ``/min`` summaries
REWARD = "reward"
ADVANTAGE = "advantage"
RETURN = "return"
GROUP_COUNT = "group/count"
GROUP_FLAT_FRACTION = "group/flat_fraction"
BASELINE_VALUE = "baseline/value"
RUN_COUNT = "run/count"
RUN_STEPS_MEAN = "run/steps_mean"
# GiGPO: its two advantage levels and the anchor-state groups of the step level
EPISODE_ADVANTAGE = "episode_advantage"
STEP_ADVANTAGE = "step_advantage"
ANCHOR_GROUP_COUNT = "anchor/group_count"
ANCHOR_GROUP_SIZE_MEAN = "anchor/group_size_mean"
#: share of steps that shared their state with no other step of their task (step advantage 0)
ANCHOR_SINGLETON_FRACTION = "anchor/singleton_fraction"
#: share of steps that carried no ``info["state_hash"]``
ANCHOR_MISSING_FRACTION = "anchor/missing_fraction"
