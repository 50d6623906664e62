"""How a step's experiences are cut into micro-batches: by rows, and by padded tokens.

A micro-batch's activation memory grows with its padded tokens (rows x longest row,
``collate`` pads every row to the longest), not with its row count: 16 single-turn
rows of 60 tokens hold a fraction of what 16 multi-turn conversations of 270 tokens
hold (the calculator agent's, measured in docs/benchmarks.md, "Memory of the agent demo"). With
``trainer.micro_batch_tokens`` a micro-batch also stops before its padded tokens
would pass that budget, so memory follows the tokens whatever the rows' lengths.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

from reinforge.core import Experience

E = TypeVar("E", bound=Experience)


def padded_tokens(rows: Sequence[Experience]) -> int:
    """Tokens of ``rows`` once collated: the row count times the longest row."""
    return len(rows) * max((len(e.tokens) for e in rows), default=0)


def order_rows(exps: Sequence[E], by_prompt: bool = False) -> list[E]:
    """The rows in training order: by length (micro-batches of similar lengths pad
    less); with ``by_prompt`` the rows sharing a prompt (length and ids) next to each
    other, so that consecutive micro-batches hold whole groups and each group's prompt
    runs once (``shared_prompts.py``): the larger groups first (equal sizes stay in
    step with the micro-batch size), then by their tokens (what their packed row
    holds), each group's rows by length."""
    rows = sorted(exps, key=lambda e: len(e.tokens))
    if not by_prompt:
        return rows
    groups: dict[tuple[int, ...], list[E]] = {}
    for exp in rows:  # each group keeps the length order
        p = int(exp.prompt_length)
        groups.setdefault((p, *exp.tokens[:p].tolist()), []).append(exp)
    ordered = sorted(groups.values(), key=lambda g: (-len(g), sum(len(e.tokens) for e in g)))
    return [exp for group in ordered for exp in group]


def split_micro_batches(
    exps: Sequence[E], max_rows: int, max_tokens: int | None = None
) -> Iterator[list[E]]:
    """Consecutive slices of ``exps`` (order kept) of at most ``max_rows`` rows and, when
    ``max_tokens`` is set, at most ``max_tokens`` padded tokens; a row longer than
    ``max_tokens`` is a micro-batch of its own."""
    if max_rows < 1:
        raise ValueError("max_rows must be at least 1")
    current: list[E] = []
    longest = 0
    for exp in exps:
        width = max(longest, len(exp.tokens))
        full = len(current) >= max_rows
        over = max_tokens is not None and (len(current) + 1) * width > max_tokens
        if current and (full or over):
            yield current
            current, width = [], len(exp.tokens)
        current.append(exp)
        longest = width
    if current:
        yield current
