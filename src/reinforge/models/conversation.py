"""Token-exact multi-turn conversations.

When a workflow sends a conversation that continues an earlier reply (the earlier
messages plus that reply, then tool results or a user turn), the prompt must hold
the tokens the model actually sampled, not a re-tokenization of the reply's text:
the two can differ, and then the trainer would score tokens the model never chose.

``TurnIndex`` remembers recent replies. For a new conversation it finds the reply it
continues, and builds the prompt as that reply's exact tokens followed by the
template's rendering of everything after it (the "glue": end-of-turn marker, tool
results, the next user message, the generation prompt). This needs the chat
template to be append-only: rendering a conversation must start with the rendering
of its first part. Templates that rewrite earlier turns (e.g. strip old reasoning)
fail that check, and the conversation then falls back to a fresh rendering per turn
(logged once per template).
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from reinforge.models.tool_format import canonical_message, message_text

logger = logging.getLogger(__name__)

_SENTINEL = "\x00REINFORGE_TURN_END\x00"
_warned: set[str] = set()  # fallback reasons already logged in this process

#: (messages, tools, add_generation_prompt) -> the chat template's text
Render = Callable[[list[dict[str, Any]], list[dict] | None, bool], str]


class Turn(NamedTuple):
    """One sampled reply: the exact ids the model saw and produced.

    Recorded on every chat call, so it holds references only; the comparisons that
    identify a continued conversation run when one arrives.
    """

    turn_id: int
    messages: list[dict[str, Any]]  # the prompt messages
    tools_key: str
    replies: list[dict[str, Any]]  # the assistant message(s) a caller may send back
    tokens: np.ndarray  # prompt + sampled ids (the memory of the experience's tokens)
    ended_with_eos: bool


@dataclass
class Bridge:
    """A prompt built on top of an earlier turn."""

    parent: Turn
    prompt_ids: list[int]
    prompt_text: str


class TurnIndex:
    """The most recent replies, searched by the conversation that continues them."""

    def __init__(self, tokenizer: Any, render: Render, capacity: int = 1024) -> None:
        self.tokenizer = tokenizer
        self.render = render
        self._recent: deque[Turn] = deque(maxlen=capacity)
        self._ids = itertools.count(1)
        self._end_marker: str | None = None
        self.fallbacks = 0

    def new_turn_id(self) -> int:
        return next(self._ids)

    def record(self, turn: Turn) -> None:
        """Remember a reply (thread-safe: a deque append is atomic)."""
        self._recent.append(turn)

    def parent_of(self, messages: list[dict[str, Any]], tools_key: str) -> tuple[Turn, int] | None:
        """The recorded turn whose reply is the last assistant message here, and its index."""
        i = next(
            (k for k in range(len(messages) - 1, -1, -1) if messages[k].get("role") == "assistant"),
            None,
        )
        if i is None:
            return None
        text = message_text(messages[i].get("content"))
        reply = prefix = None
        for turn in reversed(list(self._recent)):
            if turn.tools_key != tools_key or len(turn.messages) != i:
                continue
            if all(message_text(r.get("content")) != text for r in turn.replies):
                continue
            if reply is None:
                reply = canonical_message(messages[i])
                prefix = [canonical_message(m) for m in messages[:i]]
            if reply in [canonical_message(r) for r in turn.replies] and prefix == [
                canonical_message(m) for m in turn.messages
            ]:
                return turn, i
        return None

    def end_marker(self) -> str:
        """What the template writes after an assistant message's content (e.g. ``<|im_end|>\\n``)."""
        if self._end_marker is None:
            text = self.render(
                [{"role": "user", "content": "u"}, {"role": "assistant", "content": _SENTINEL}],
                None,
                False,
            )
            cut = text.find(_SENTINEL)
            self._end_marker = text[cut + len(_SENTINEL) :] if cut != -1 else ""
        return self._end_marker

    def bridge(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict] | None,
        tools_key: str,
        prompt_text: str,
    ) -> Bridge | None:
        """Prompt ids for ``messages`` that extend the exact tokens of the turn they continue.

        ``prompt_text`` is the template's rendering of ``messages`` with the generation prompt.
        """
        found = self.parent_of(messages, tools_key)
        if found is None:
            return None
        parent, i = found
        before_reply = self.render(messages[:i], tools, True)
        through_reply = self.render(messages[: i + 1], tools, False)
        if not (through_reply.startswith(before_reply) and prompt_text.startswith(through_reply)):
            self._fallback("the rendering of a conversation does not start with its earlier turns")
            return None
        glue = prompt_text[len(through_reply) :]
        marker = self.end_marker()
        if marker and not through_reply.endswith(marker):
            self._fallback("the end-of-turn marker is not where the template puts it")
            return None
        if parent.ended_with_eos:
            eos_text = self.tokenizer.decode(parent.tokens[-1:].tolist(), skip_special_tokens=False)
            marker = marker[len(eos_text) :] if marker.startswith(eos_text) else marker
        glue_ids = self.tokenizer.encode(marker + glue)
        ids = parent.tokens.tolist() + glue_ids
        return Bridge(parent, ids, self.tokenizer.decode(ids, skip_special_tokens=False))

    def _fallback(self, why: str) -> None:
        self.fallbacks += 1
        if why not in _warned:
            _warned.add(why)
            logger.warning(
                "chat template is not append-only (%s); multi-turn calls are rendered "
                "afresh each turn and history yields one experience per turn",
                why,
            )
