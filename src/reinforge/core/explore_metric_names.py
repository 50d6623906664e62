"""The names of the metrics exploration and evaluation emit, in one place.

An explore step reports its numbers under ``explore/`` (``explore/reward_mean``); an
evaluation pass reports the same statistics, plus mean@n, std@n, best@k and worst@k,
under ``eval/TASKSET/`` (``eval/gsm8k/mean@4``). The names are part of what a run
stores (``metrics.jsonl``, TensorBoard tags), so they never change; readers of stored
rows (``reinforge summary``, the monitor, the viewer, the model card) look them up here.

The bare names (``TASKS``, ``ACCURACY``, ...) are those of one statistic under either
prefix; ``explore_metric`` and ``eval_metric`` give the reported name. It lives in
``core`` beside ``metric_names`` (the training metrics) so every layer can read it.
"""

from __future__ import annotations

#: the prefix of every metric of an explore step
EXPLORE_PREFIX = "explore/"
#: the prefix of every metric of an evaluation; the taskset's name follows it
EVAL_PREFIX = "eval/"


def explore_metric(name: str) -> str:
    """The reported name of the explore step statistic ``name``."""
    return EXPLORE_PREFIX + name


def eval_prefix(taskset: str) -> str:
    """The prefix of every metric of an evaluation of ``taskset``: ``eval/TASKSET/``."""
    return f"{EVAL_PREFIX}{taskset}/"


def eval_metric(taskset: str, name: str) -> str:
    """The reported name of the statistic ``name`` of an evaluation of ``taskset``."""
    return eval_prefix(taskset) + name


def eval_taskset_of(key: str) -> str | None:
    """The taskset whose evaluation reported ``key`` if it is its ``eval/TASKSET/tasks``
    (every evaluation reports it once), else None."""
    suffix = "/" + TASKS
    if key.startswith(EVAL_PREFIX) and key.endswith(suffix):
        return key[len(EVAL_PREFIX) : -len(suffix)]
    return None


# ---- the statistics of the results of a step or an eval pass (under either prefix) ------

TASKS = "tasks"
FAILED_TASKS = "failed_tasks"
EXPERIENCES = "experiences"
#: over the experiences that are not masked
REWARD_MEAN = "reward_mean"
REWARD_STD = "reward_std"
#: the mean of the workflows' ``accuracy`` metric (reported only if some experience has it)
ACCURACY = "accuracy"
RESPONSE_LENGTH = "response_length"
TRUNCATED_RATIO = "truncated_ratio"
#: ``workflow/NAME/mean``, ``/max``, ``/min``: a number workflows put in ``exp.metrics``
WORKFLOW_PREFIX = "workflow/"
WORKFLOW_STATS = ("mean", "max", "min")


def workflow_metric(name: str, stat: str) -> str:
    """The bare name of the ``stat`` (mean, max, min) of the workflow metric ``name``."""
    return f"{WORKFLOW_PREFIX}{name}/{stat}"


# ---- the evaluation's aggregates over n rollouts per task (under eval/TASKSET/) ---------

MEAN_AT = "mean@"
STD_AT = "std@"
BEST_AT = "best@"
WORST_AT = "worst@"


def at(aggregate: str, n: int) -> str:
    """The bare name of an aggregate over ``n`` rollouts: ``at(MEAN_AT, 4)`` is ``mean@4``."""
    return f"{aggregate}{n}"


# ---- an explore step only -----------------------------------------------------------------

MASKED_EXPERIENCES = "masked_experiences"
#: ``masked/REASON``: how many experiences were masked for REASON (its first word)
MASKED_PREFIX = "masked/"
STEP_TIME = "step_time"
MODEL_VERSION = "model_version"
#: experiences written to the buffer after the experience pipeline
STORED = "stored"
#: under dynamic sampling: batches of tasks the step explored, task groups it kept
BATCHES = "batches"
KEPT_GROUPS = "kept_groups"

EXPLORE_TASKS = explore_metric(TASKS)
EXPLORE_FAILED_TASKS = explore_metric(FAILED_TASKS)
EXPLORE_EXPERIENCES = explore_metric(EXPERIENCES)
EXPLORE_REWARD_MEAN = explore_metric(REWARD_MEAN)
EXPLORE_ACCURACY = explore_metric(ACCURACY)
EXPLORE_RESPONSE_LENGTH = explore_metric(RESPONSE_LENGTH)
EXPLORE_MASKED_EXPERIENCES = explore_metric(MASKED_EXPERIENCES)
EXPLORE_MASKED_PREFIX = explore_metric(MASKED_PREFIX)
EXPLORE_STEP_TIME = explore_metric(STEP_TIME)
EXPLORE_MODEL_VERSION = explore_metric(MODEL_VERSION)
EXPLORE_STORED = explore_metric(STORED)
EXPLORE_BATCHES = explore_metric(BATCHES)
EXPLORE_KEPT_GROUPS = explore_metric(KEPT_GROUPS)

# ---- the experience pipeline's, reported with the explore step's (no prefix) ------------

PIPELINE_EXPERIENCES_IN = "pipeline/experiences_in"
PIPELINE_EXPERIENCES_OUT = "pipeline/experiences_out"
PIPELINE_ERRORS = "pipeline/errors"
PIPELINE_EMPTY_BATCH = "pipeline/empty_batch"
#: ``OPERATOR/dropped``: how many experiences a filtering operator dropped
DROPPED_SUFFIX = "/dropped"


def dropped_metric(operator: str) -> str:
    """The name of how many experiences the pipeline operator ``operator`` dropped."""
    return operator + DROPPED_SUFFIX
