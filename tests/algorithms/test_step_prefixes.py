"""``merge_step_prefixes``: a step-wise run's steps become one row with every step's
response tokens and per-token fields at their places; anything that is not such a chain
stays as it is."""

from __future__ import annotations

import torch

from reinforge.algorithms import collate
from reinforge.algorithms.step_prefixes import merge_step_prefixes
from reinforge.core import Experience
from reinforge.core.eid import EID


def _step(tokens: list[int], prompt: int, step: int, run: int = 0, **fields) -> Experience:
    n = len(tokens) - prompt
    exp = Experience(
        tokens=tokens,
        prompt_length=prompt,
        advantages=[float(10 * step + i) for i in range(n)],
        logprobs=[-float(step + 1)] * n,
        reward=float(step),
        eid=EID(batch=1, task=0, run=run, step=step),
        **fields,
    )
    return exp


def _run(run: int = 0) -> list[Experience]:
    """Three steps: each prompt is the conversation so far plus an observation."""
    return [
        _step([1, 2, 3, 4, 5], 3, 0, run),  # prompt 1 2 3, reply 4 5
        _step([1, 2, 3, 4, 5, 6, 7, 8, 9], 7, 1, run),  # observation 6 7, reply 8 9
        _step([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 10, 2, run),  # observation 10, reply 11
    ]


def test_a_run_becomes_one_row_with_each_step_at_its_place() -> None:
    steps = _run()
    (row,) = merge_step_prefixes(list(reversed(steps)))  # in any order
    assert row.tokens.tolist() == list(range(1, 12)) and row.prompt_length == 3
    assert row.action_mask.tolist() == [1, 1, 0, 0, 1, 1, 0, 1]
    assert row.advantages.tolist() == [0, 1, 0, 0, 10, 11, 0, 20]
    assert row.logprobs.tolist() == [-1, -1, 0, 0, -2, -2, 0, -3]
    assert row.eid == steps[-1].eid and row.reward == 2.0
    assert row.returns is None
    # every trained token sits in the column where its own step's row had it
    merged = collate([row], pad_token_id=0)
    for exp in steps:
        alone = collate([exp], pad_token_id=0)
        cols = alone.loss_mask[0].nonzero()[:, 0]
        assert merged.loss_mask[0, cols].all()
        assert torch.equal(merged.advantages[0, cols], alone.advantages[0, cols])
        assert torch.equal(merged.old_logprobs[0, cols], alone.old_logprobs[0, cols])
    assert int(merged.loss_mask.sum()) == sum(e.response_length for e in steps)
    assert steps[0].prompt_length == 3 and steps[0].advantages.tolist() == [0, 1]  # untouched


def test_runs_merge_apart_and_a_missing_step_is_fine() -> None:
    first, second = _run(0), _run(1)
    rows = merge_step_prefixes([first[0], first[2], *second])  # run 0 lost its middle step
    assert len(rows) == 2
    by_run = {r.eid.run: r for r in rows}
    assert by_run[0].action_mask.tolist() == [1, 1, 0, 0, 0, 0, 0, 1]
    assert by_run[1].action_mask.tolist() == [1, 1, 0, 0, 1, 1, 0, 1]


def test_what_is_not_a_chain_stays_as_it_is() -> None:
    single = _run()[:1]
    assert merge_step_prefixes(single) == single
    changed = _run()
    changed[1] = _step([1, 2, 9, 4, 5, 6, 7, 8, 9], 7, 1)  # an earlier token differs
    assert len(merge_step_prefixes(changed)) == 3
    overlapping = _run()
    overlapping[1] = _step([1, 2, 3, 4, 5, 6, 7, 8, 9], 4, 1)  # prompt ends inside step 0's reply
    assert len(merge_step_prefixes(overlapping)) == 3
    versions = _run()
    versions[2].info["model_version"] = 3
    assert len(merge_step_prefixes(versions)) == 3
    fields = _run()
    fields[1].logprobs = None
    assert len(merge_step_prefixes(fields)) == 3
    repeated = _run()
    repeated[1].eid = EID(batch=1, task=0, run=0, step=0)
    assert len(merge_step_prefixes(repeated)) == 3
