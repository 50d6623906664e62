"""A finished conversation re-tokenized into one Experience, the way Trinity-RFT builds it.

Used when the model's sampled turns were not recorded (a workflow that called
``model.chat`` itself and assembled the messages): the conversation is rendered
with the chat template, the assistant turns are found by rendering each prefix of
it, and the log-probabilities are scored afterwards under the current weights. The
tokens are a re-encoding of the text, so they can differ from the ones the model
sampled; the experience says so with ``info["retokenized"] = True``. Recorded turns
are merged token-exactly instead (``reinforge.workflows.multi_turn``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from reinforge.core import Experience
from reinforge.models.wrapper.chat_prompts import ContextLengthError

#: (messages, tools, add_generation_prompt) -> the chat template's text
Render = Callable[[list[dict[str, Any]], list[dict] | None, bool], str]


@dataclass
class ConversationTokens:
    """A conversation's token ids, which of them the assistant wrote, and how it was cut."""

    ids: list[int]
    #: 1 on the tokens of assistant turns (their reply and end-of-turn marker)
    assistant_mask: list[int]
    prompt_length: int
    truncate_status: str | None = None


def tokenize_conversation(
    render: Render,
    encode: Callable[[str], list[int]],
    messages: list[dict[str, Any]],
    tools: list[dict] | None,
    max_model_len: int | None,
) -> ConversationTokens:
    """Token ids of the whole conversation and the mask of its assistant turns.

    An assistant turn spans from the end of the prompt before it (generation prompt
    included) to the end of the conversation through it; this assumes each rendering
    extends the previous one, as append-only chat templates do. A conversation longer
    than ``max_model_len - 1`` tokens is cut there (``response_truncated``).
    """
    ids = encode(render(messages, tools, False))
    mask = [0] * len(ids)
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        start = len(encode(render(messages[:i], tools, True))) if i else 0
        end = len(encode(render(messages[: i + 1], tools, False)))
        for position in range(start, min(end, len(ids))):
            mask[position] = 1
    if 1 not in mask:
        raise ValueError(
            "the conversation has no assistant message: nothing the model wrote to learn from"
        )
    prompt_length = mask.index(1)
    truncate_status = None
    if max_model_len is not None and len(ids) > max_model_len - 1:
        if prompt_length >= max_model_len - 1:
            raise ContextLengthError.for_prompt(prompt_length, max_model_len)
        ids, mask = ids[: max_model_len - 1], mask[: max_model_len - 1]
        truncate_status = "response_truncated"
    return ConversationTokens(ids, mask, prompt_length, truncate_status)


def retokenized_experience(
    conversation: ConversationTokens,
    scored: torch.Tensor,
    *,
    messages: list[dict[str, Any]],
    tools: list[dict] | None,
    prompt_text: str,
    model_version: int,
) -> Experience:
    """The Experience of a tokenized conversation; ``scored`` holds log p(ids[i] | ids[:i])
    for i >= 1. Log-probabilities are kept on the assistant's tokens only (0 elsewhere)."""
    start = conversation.prompt_length
    mask = torch.tensor(conversation.assistant_mask[start:], dtype=torch.bool)
    # scored[i - 1] is the log-probability of ids[i]
    logprobs = scored[start - 1 :] if start else torch.cat([torch.zeros(1), scored])
    logprobs = torch.where(mask, logprobs.to(torch.float32), 0.0)
    replies = [m.get("content") or "" for m in messages if m.get("role") == "assistant"]
    return Experience(
        tokens=conversation.ids,
        prompt_length=start,
        logprobs=logprobs,
        action_mask=mask,
        messages=list(messages),
        tools=tools,
        prompt_text=prompt_text,
        response_text="\n".join(replies),
        truncate_status=conversation.truncate_status,
        info={"model_version": model_version, "retokenized": True},
    )
