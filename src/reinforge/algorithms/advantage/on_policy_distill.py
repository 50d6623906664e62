"""On-policy distillation's advantage (Trinity-RFT's ``on_policy_distill``, after
Tinker's on-policy distillation; Agarwal et al. 2024, "On-Policy Distillation of
Language Models", and Thinking Machines' "On-Policy Distillation", 2025).

The student samples; a teacher scores the sampled tokens (``Experience.teacher_logprobs``,
set by ``on_policy_distill_workflow``). Each sampled token's advantage is the negative
of the per-token reverse KL estimate, scaled by ``kl_coef``::

    A_t = kl_coef · (log π_teacher(y_t) − log π_student(y_t))

with no discounting across tokens (each token is its own one-step return). A policy
gradient step on ``−A_t · ratio_t`` then descends ``KL(π_student ‖ π_teacher)`` on the
student's own samples: tokens the teacher finds likelier than the student are pushed
up, the others down, and a student equal to its teacher gets advantage 0 everywhere.

Where ``log π_student`` comes from: Trinity-RFT computes this advantage in the trainer
(``compute_advantage_in_trainer``) from the batch's ``old_log_probs``, π_old of the
importance ratio. ``on_policy_distill_batch_advantages`` does that here: the trainer
calls it per micro-batch with its π_old (its own first-pass log-probs for experiences
sampled by the current weights, the engine's for older ones; ``trainer.old_logprobs``)
and the batch's ``teacher_logprobs`` (collated like the sampled log-probs). The
experience-level ``on_policy_distill_advantage`` is the same formula with the engine's
sampled log-probs as the student's, for code that scores experiences outside a
trainer (an experience operator, a test); the trainer does not use it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reinforge.algorithms.advantage.common import action_mask_f, summary
from reinforge.algorithms.masked import masked_mean
from reinforge.algorithms.registry import ADVANTAGE_FNS
from reinforge.algorithms.train_batch import TrainBatch
from reinforge.core import Experience
from reinforge.core.metric_names import ADVANTAGE

#: token-mean over the trained tokens of ``log π_student − log π_teacher``: the k1
#: estimate of the per-token reverse KL the distillation minimises (Trinity reports the
#: per-sequence sum as ``kl/mean``; its workflows' ``kl_divergence`` metric is that sum)
DISTILL_REVERSE_KL = "distill/reverse_kl"
#: the per-sequence sum of the same, averaged over sequences (Trinity's ``kl/mean``)
DISTILL_SEQ_REVERSE_KL = "distill/seq_reverse_kl"
#: token-means of the teacher's and the student's log-probs of the trained tokens
DISTILL_TEACHER_LOGPROB = "distill/teacher_logprob_mean"
DISTILL_STUDENT_LOGPROB = "distill/student_logprob_mean"
#: token-mean of the advantage over the trained tokens (``kl_coef`` · −reverse_kl)
DISTILL_ADVANTAGE_MEAN = "distill/advantage_mean"

_NO_TEACHER = (
    "on-policy distillation needs the teacher's log-probs of the sampled tokens "
    "(Experience.teacher_logprobs), which {what} lacks; sample with "
    "on_policy_distill_workflow (or set response.teacher_logprobs in your workflow, as "
    "Trinity-RFT's OnPolicyDistillWorkflow does) and declare the teacher under "
    "explorer.auxiliary_models"
)


def distill_advantages(
    teacher_logprobs: torch.Tensor,
    student_logprobs: torch.Tensor,
    mask: torch.Tensor,
    kl_coef: float = 1.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``kl_coef · (teacher − student)`` where ``mask`` is set, 0 elsewhere, for tensors of
    any shape (``[T]`` or ``[B, T]``), and the ``distill/*`` metrics over the masked tokens."""
    teacher = teacher_logprobs.detach().to(torch.float32)
    student = student_logprobs.detach().to(torch.float32)
    keep = mask.bool()
    zero = torch.zeros((), dtype=torch.float32, device=teacher.device)
    advantages = torch.where(keep, kl_coef * (teacher - student), zero)
    reverse_kl = torch.where(keep, student - teacher, zero)
    per_seq = reverse_kl.sum(-1) if reverse_kl.ndim > 1 else reverse_kl.sum()[None]
    metrics = {
        DISTILL_REVERSE_KL: float(masked_mean(reverse_kl, keep)),
        DISTILL_SEQ_REVERSE_KL: float(per_seq.mean()) if per_seq.numel() else 0.0,
        DISTILL_TEACHER_LOGPROB: float(masked_mean(teacher, keep)),
        DISTILL_STUDENT_LOGPROB: float(masked_mean(student, keep)),
        DISTILL_ADVANTAGE_MEAN: float(masked_mean(advantages, keep)),
    }
    return advantages, metrics


def on_policy_distill_batch_advantages(
    batch: TrainBatch, old_logprobs: torch.Tensor, kl_coef: float = 1.0
) -> tuple[torch.Tensor, dict[str, float]]:
    """The advantages ``[B, L − 1]`` of a collated micro-batch from its teacher log-probs
    and π_old (``old_logprobs``, same layout), on the batch's trained tokens
    (``loss_mask``); what the trainer trains on (see the module docstring)."""
    if batch.teacher_logprobs is None:
        raise ValueError(_NO_TEACHER.format(what="an experience of the batch"))
    return distill_advantages(batch.teacher_logprobs, old_logprobs, batch.loss_mask, kl_coef)


@ADVANTAGE_FNS.register_module("on_policy_distill")
def on_policy_distill_advantage(
    exps: Sequence[Experience], kl_coef: float = 1.0
) -> dict[str, float]:
    """Set ``kl_coef · (teacher_logprobs − logprobs)`` on every action token of ``exps``
    (``advantages`` and ``returns`` alike, as Trinity-RFT does) with the engine's sampled
    log-probs as the student's; return the ``distill/*`` metrics over all of them."""
    teacher_rows, student_rows, mask_rows = [], [], []
    for exp in exps:
        if exp.teacher_logprobs is None:
            raise ValueError(_NO_TEACHER.format(what=f"experience {exp.eid}"))
        if exp.logprobs is None:
            raise ValueError(
                f"experience {exp.eid} has no sampled log-probs (Experience.logprobs) to "
                "compare with the teacher's"
            )
        teacher = torch.as_tensor(exp.teacher_logprobs, dtype=torch.float32)
        mask = action_mask_f(exp)
        advantages, _ = distill_advantages(teacher, exp.logprobs, mask, kl_coef)
        exp.advantages = advantages
        exp.returns = advantages.clone()
        teacher_rows.append(teacher)
        student_rows.append(exp.logprobs.to(torch.float32))
        mask_rows.append(mask)
    if not exps:
        return {}
    width = max(len(row) for row in mask_rows)

    def padded(rows: list[torch.Tensor]) -> torch.Tensor:
        out = torch.zeros(len(rows), width, dtype=torch.float32)
        for i, row in enumerate(rows):
            out[i, : len(row)] = row
        return out

    mask = padded(mask_rows).bool()
    advantages, metrics = distill_advantages(
        padded(teacher_rows), padded(student_rows), mask, kl_coef
    )
    per_token = advantages[mask]
    return {**metrics, **summary(ADVANTAGE, per_token)}


# The trainer computes this advantage per micro-batch from its π_old (see above).
on_policy_distill_advantage.batch_advantages = on_policy_distill_batch_advantages  # type: ignore[attr-defined]
