"""Completions of the engine into Experiences, and the turns of chats into the turn index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from reinforge.core import Experience
from reinforge.models.conversation import Turn, TurnIndex
from reinforge.models.engine import Completion, SamplingParams
from reinforge.models.tool_format import parse_tool_calls


@dataclass(slots=True)
class SentPrompt:
    """A prompt sent to the engine, with what its completions need to become Experiences."""

    prompt_ids: list[int]
    prompt_text: str
    params: SamplingParams
    #: the chat's messages (None for a raw ``generate`` prompt)
    messages: list[dict[str, Any]] | None = None
    tools: list[dict] | None = None
    #: the turn this chat continues (see ``ChatPrompts.prompt``)
    parent_turn_id: int | None = None
    tools_key: str = ""
    #: the processor's image tensors of a prompt with images (see ``multimodal_chat``)
    multi_modal_inputs: dict[str, Any] | None = None


def _long_array(ids: list[int]) -> np.ndarray:
    """int64 array of a list of ids; ``torch.from_numpy`` of it is several times cheaper
    than ``torch.tensor(list)``.

    A numpy array (unlike ``array.array``, or a tensor) is not tracked by the garbage
    collector: the turn index keeps the tokens of a wrapper's last 1024 replies, and
    every tracked object makes each full collection slower (a tensor takes about as
    long to visit as the rest of its turn together).
    """
    return np.array(ids, dtype=np.int64)


def _float_tensor(values: list[float]) -> torch.Tensor:
    """float32 tensor of a list of floats (same rounding as ``torch.tensor``, less overhead)."""
    return torch.from_numpy(np.array(values, dtype=np.float32))


class ExperienceBuilder:
    """Turns one tokenizer's completions into Experiences (stop strings cut, tool calls
    parsed, ``model_version`` stamped) and records chat replies as turns."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.eos_ids = frozenset(getattr(tokenizer, "eos_token_ids", ()))

    def build(
        self,
        sent: SentPrompt,
        completions: list[Completion],
        model_version: int,
        turns: TurnIndex | None,
    ) -> list[Experience]:
        """One Experience per completion; ``turns`` (chats only) records each reply."""
        out = []
        prompt_ids, messages, tools = sent.prompt_ids, sent.messages, sent.tools
        parent = sent.parent_turn_id
        for comp in completions:
            tokens = _long_array(prompt_ids + comp.token_ids)  # shared by exp and turn
            text = self.tokenizer.decode(comp.token_ids)
            for stop in sent.params.stop:
                cut = text.find(stop)
                if cut != -1:
                    text = text[:cut]
            reply: dict[str, Any] = {"role": "assistant", "content": text}
            parsed = parse_tool_calls(text) if tools else None
            if parsed is not None and parsed.tool_calls:
                reply = {
                    "role": "assistant",
                    "content": parsed.content,
                    "tool_calls": parsed.tool_calls,
                }
            exp = Experience(
                tokens=torch.from_numpy(tokens),
                prompt_length=len(prompt_ids),
                logprobs=_float_tensor(comp.logprobs),
                prompt_text=sent.prompt_text,
                response_text=text,
                messages=None if messages is None else [*messages, reply],
                tools=tools,
                truncate_status="response_truncated" if comp.finish_reason == "length" else None,
                info={
                    "model_version": model_version
                    if comp.model_version is None
                    else comp.model_version,
                    "finish_reason": comp.finish_reason,
                },
                multi_modal_inputs=sent.multi_modal_inputs,
            )
            if comp.top_logprobs is not None:
                exp.info["top_logprobs"] = comp.top_logprobs
            if parsed is not None:
                if parsed.tool_calls:
                    exp.info["tool_calls"] = parsed.tool_calls
                if parsed.error:
                    exp.info["tool_call_error"] = parsed.error
            if turns is not None:
                turn_id = turns.new_turn_id()
                exp.info["turn_id"] = turn_id
                if parent is not None:
                    exp.info["parent_turn_id"] = parent
                ended_with_eos = bool(comp.token_ids) and comp.token_ids[-1] in self.eos_ids
                turns.record(
                    Turn(
                        turn_id,
                        messages,
                        sent.tools_key,
                        [reply]
                        if parsed is None
                        else [{"role": "assistant", "content": text}, reply],
                        tokens,
                        ended_with_eos,
                    )
                )
            out.append(exp)
        return out
