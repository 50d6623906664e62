"""A step-wise run's steps as one training row.

A step-wise workflow records one experience per step, and each step's prompt holds every
earlier step's tokens exactly: the run's conversation so far. Trained as they come, a run
of T steps has its first tokens forwarded T times; on FrozenLake runs (2-6 moves) the
trainer forwarded 2.5x the tokens of the runs' last steps alone (docs/benchmarks.md).

A causal model's log-prob of a token depends on the tokens before it only, so the run's
last step, forwarded once, scores every step's response tokens with the very values their
own rows would give. ``merge_step_prefixes`` makes that row: the last step's tokens, each
step's response tokens in the action mask (the observations between them masked, as in a
multi-turn experience), and each step's per-token fields (advantages, sampled log-probs,
returns...) at their positions. For a loss that is a token-mean of per-token terms the
loss and its gradient are those of the separate rows; ``TOKEN_LEVEL_LOSSES`` names the
policy losses that are, and the trainer merges only with them.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

import torch

from reinforge.core import Experience

#: policy losses whose loss is a sum of per-token terms (GSPO's sequence ratio is not)
TOKEN_LEVEL_LOSSES = frozenset({"ppo", "cispo", "importance_sampling", "opmd", "sft"})

_FLOAT_FIELDS = ("logprobs", "token_level_reward", "advantages", "returns", "teacher_logprobs")


def merge_step_prefixes(exps: Sequence[Experience]) -> list[Experience]:
    """``exps`` with each run whose steps extend one another (each step's tokens the start
    of the next step's prompt) as one experience; other experiences as they are.

    A run is left unmerged when its steps are not such a chain, when they were sampled by
    different model versions, carry images, or differ in which per-token fields they have.
    """
    merged: list[Experience] = []
    for steps in Experience.group_by(exps, "run").values():
        steps = sorted(steps, key=lambda e: e.eid.step)
        if len(steps) > 1 and _is_chain(steps):
            merged.append(_merge(steps))
        else:
            merged.extend(steps)
    return merged


def _is_chain(steps: list[Experience]) -> bool:
    first = steps[0]
    present = [getattr(first, name) is not None for name in _FLOAT_FIELDS]
    version = first.info.get("model_version")
    for exp in steps:
        if exp.multi_modal_inputs is not None or exp.info.get("model_version") != version:
            return False
        if [getattr(exp, name) is not None for name in _FLOAT_FIELDS] != present:
            return False
    for before, after in itertools.pairwise(steps):
        n = len(before.tokens)
        if before.eid.step == after.eid.step or n > after.prompt_length:
            return False
        if not torch.equal(after.tokens[:n], before.tokens):
            return False
    return True


def _merge(steps: list[Experience]) -> Experience:
    last, start = steps[-1], steps[0].prompt_length
    width = len(last.tokens) - start
    mask = torch.zeros(width, dtype=torch.bool)
    values = {
        name: torch.zeros(width, dtype=torch.float32)
        for name in _FLOAT_FIELDS
        if getattr(last, name) is not None
    }
    for exp in steps:
        at = slice(exp.prompt_length - start, len(exp.tokens) - start)
        mask[at] = exp.action_mask
        for name, row in values.items():
            value = getattr(exp, name)  # a list where a workflow assigned it so
            row[at] = torch.as_tensor(value, dtype=torch.float32).detach()
    return dataclasses.replace(
        last, prompt_length=start, action_mask=mask, info=dict(last.info), **values
    )
