"""A conversation the model never saw as a whole, with the replies it did sample.

The reflecting RAFT workflow samples its second attempt with the first attempt in
the prompt, but trains on the second attempt alone (its own system prompt,
observations and replies), as if it had been a first try. ``splice`` builds that
experience without re-tokenizing a reply: the template renders everything that is
not a reply (the first prompt, and the glue between replies: end-of-turn marker,
next observation, generation prompt), and each reply contributes the exact token ids
that were sampled (``action_mask`` 1, with their sampling log-probs). This is the
same bridging the rollout model does for a continued conversation
(``reinforge.models.conversation``); a template that is not append-only cannot be
spliced (``SpliceError``), and the workflow then re-tokenizes the text instead.
"""

from __future__ import annotations

from typing import Any

import torch

from reinforge.core import Experience


class SpliceError(ValueError):
    """The conversation cannot be rebuilt around the sampled replies token-exactly."""


def _reply_ids(turn: Experience) -> tuple[list[int], list[float]]:
    ids = turn.tokens[turn.prompt_length :].tolist()
    logprobs = turn.logprobs.tolist() if turn.logprobs is not None else [0.0] * len(ids)
    return ids, logprobs


def splice(model: Any, messages: list[dict[str, Any]], turns: list[Experience]) -> Experience:
    """One experience of ``messages`` whose ``k``-th assistant message is ``turns[k]``'s
    sampled reply (module docstring)."""
    replies = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not replies or len(replies) != len(turns):
        raise SpliceError(f"{len(replies)} assistant messages but {len(turns)} sampled turns")
    render, encode = model.chat_prompts.render_text, model.tokenizer.encode
    marker = model.chat_prompts.turns.end_marker()
    eos_ids = set(getattr(model.tokenizer, "eos_token_ids", ()) or ())
    prompt_text = render(messages[: replies[0]], None, True)
    ids = list(encode(prompt_text))
    prompt_length = len(ids)
    mask: list[int] = []
    logprobs: list[float] = []
    for k, (at, turn) in enumerate(zip(replies, turns, strict=True)):
        reply, reply_logprobs = _reply_ids(turn)
        ids += reply
        mask += [1] * len(reply)
        logprobs += reply_logprobs
        if k + 1 == len(replies):
            break
        through = render(messages[: at + 1], None, False)
        following = render(messages[: replies[k + 1]], None, True)
        if not following.startswith(through) or (marker and not through.endswith(marker)):
            raise SpliceError("the chat template is not append-only")
        end = marker
        if reply and reply[-1] in eos_ids:  # the sampled reply already ends the turn
            eos_text = model.tokenizer.decode(reply[-1:], skip_special_tokens=False)
            end = marker[len(eos_text) :] if marker.startswith(eos_text) else marker
        glue = list(encode(end + following[len(through) :]))
        ids += glue
        mask += [0] * len(glue)
        logprobs += [0.0] * len(glue)
    last = turns[-1]
    return Experience(
        tokens=torch.tensor(ids, dtype=torch.long),
        prompt_length=prompt_length,
        logprobs=torch.tensor(logprobs, dtype=torch.float32),
        action_mask=torch.tensor(mask, dtype=torch.bool),
        info={"turns": len(turns), "spliced": True},
        messages=[dict(m) for m in messages],
        response_text=last.response_text,
        prompt_text=prompt_text,
    )
