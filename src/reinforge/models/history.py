"""Recorded turns → one experience per conversation.

Each recorded turn knows the turn it continued (``info["parent_turn_id"]``), and its
tokens start with that turn's tokens exactly (see ``conversation.TurnIndex``). A
conversation is a chain of such turns; its experience is the last turn's tokens,
with the first turn's prompt as the prompt, ``action_mask`` 1 on every span the
model sampled and 0 on what came between (end-of-turn markers, tool results, user
messages), and each sampled token's log-probability in place.

When several turns continue the same one (``n`` > 1, retries), each leaf gets its
own experience and shares the common turns.
"""

from __future__ import annotations

import torch

from reinforge.core import Experience


def _chain(leaf: Experience, by_id: dict[int, Experience]) -> list[Experience]:
    chain = [leaf]
    while (parent := by_id.get(chain[-1].info.get("parent_turn_id"))) is not None:
        chain.append(parent)
    chain.reverse()
    return chain


def is_token_prefix(short: torch.Tensor, long: torch.Tensor) -> bool:
    """Whether ``long`` starts with all of ``short``."""
    return short.shape[0] <= long.shape[0] and bool(torch.equal(long[: short.shape[0]], short))


def merge_chain(chain: list[Experience]) -> Experience:
    """One experience for a chain of turns, each extending the previous one's tokens."""
    root, leaf = chain[0], chain[-1]
    for turn in chain[:-1]:
        if not is_token_prefix(turn.tokens, leaf.tokens):
            raise ValueError(
                f"turn {turn.info.get('turn_id')} is not a token prefix of turn "
                f"{leaf.info.get('turn_id')}; cannot merge"
            )
    start = root.prompt_length
    n = leaf.tokens.shape[0] - start
    mask = torch.zeros(n, dtype=torch.bool)
    logprobs = torch.zeros(n, dtype=torch.float32)
    for turn in chain:
        lo, hi = turn.prompt_length - start, turn.tokens.shape[0] - start
        mask[lo:hi] = True
        if turn.logprobs is not None:
            logprobs[lo:hi] = turn.logprobs
    truncated = next((t.truncate_status for t in reversed(chain) if t.truncate_status), None)
    info = dict(leaf.info)
    info["turns"] = len(chain)
    info["turn_ids"] = [t.info.get("turn_id") for t in chain]
    versions = [t.info["model_version"] for t in chain if t.info.get("model_version") is not None]
    if versions:  # the oldest weights that sampled a token of it (trainer.max_staleness)
        info["model_version"] = min(versions)
    info.pop("top_logprobs", None)
    return Experience(
        tokens=leaf.tokens,
        prompt_length=start,
        logprobs=logprobs,
        action_mask=mask,
        reward=leaf.reward,
        eid=leaf.eid,
        info=info,
        metrics=dict(leaf.metrics),
        messages=leaf.messages,
        tools=leaf.tools,
        response_text=leaf.response_text,
        prompt_text=root.prompt_text,
        truncate_status=truncated,
    )


def merge_conversations(turns: list[Experience]) -> list[Experience]:
    """Group recorded turns into conversations; experiences of the leaves, in call order."""
    by_id = {e.info["turn_id"]: e for e in turns if e.info.get("turn_id") is not None}
    parents = {e.info.get("parent_turn_id") for e in turns}
    out: list[Experience] = []
    for exp in turns:
        turn_id = exp.info.get("turn_id")
        if turn_id is not None and turn_id in parents:
            continue  # an inner turn: part of a longer conversation
        chain = _chain(exp, by_id)
        out.append(exp if len(chain) == 1 else merge_chain(chain))
    return out
