"""Chat prompts: the model's own chat template, and token-exact continued conversations.

A conversation that continues earlier replies of the model is not simply re-rendered:
its earlier turns keep the ids that were sampled (``TurnIndex`` finds the turn a
conversation continues and bridges to it), so a multi-turn experience holds the
exact tokens the model produced.
"""

from __future__ import annotations

from typing import Any

from reinforge.models.conversation import TurnIndex
from reinforge.models.tool_format import render_messages, template_source, template_supports_tools


class ContextLengthError(ValueError):
    """A prompt leaves no room for a reply within the engine's ``max_model_len``."""

    @classmethod
    def for_prompt(cls, prompt_tokens: int, limit: int) -> ContextLengthError:
        return cls(
            f"the prompt has {prompt_tokens} tokens, but the model's context length is {limit}: "
            "no room for a reply; shorten the conversation"
        )


class ChatPrompts:
    """Renders messages with one tokenizer's chat template and remembers sampled turns."""

    def __init__(self, tokenizer: Any, chat_template: str | None) -> None:
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self._native_tools: bool | None = None
        self._turns: TurnIndex | None = None

    @property
    def native_tools(self) -> bool:
        """Whether the chat template renders tools and tool calls itself."""
        if self._native_tools is None:
            self._native_tools = template_supports_tools(
                template_source(self.tokenizer, self.chat_template)
            )
        return self._native_tools

    @property
    def turns(self) -> TurnIndex:
        """The model's recent replies, which continued conversations bridge to."""
        if self._turns is None:
            self._turns = TurnIndex(self.tokenizer, self.render_text)
        return self._turns

    def render_text(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """The chat template's text for OpenAI-style messages (tool calls included)."""
        return render_messages(
            self.tokenizer,
            messages,
            tools,
            add_generation_prompt,
            self.chat_template,
            self.native_tools,
        )

    def render(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None
    ) -> tuple[str, list[int]]:
        """Prompt text and ids of a fresh rendering (no bridging to earlier turns)."""
        text = self.render_text(messages, tools)
        return text, self.tokenizer.encode(text)

    def prompt(
        self, messages: list[dict[str, Any]], tools: list[dict] | None, tools_key: str
    ) -> tuple[str, list[int], int | None]:
        """Prompt text, ids and the turn it continues (None: a fresh rendering); a
        continued conversation keeps its earlier sampled ids."""
        text = self.render_text(messages, tools)
        if any(m.get("role") == "assistant" for m in messages):
            bridge = self.turns.bridge(messages, tools, tools_key, text)
            if bridge is not None:
                return bridge.prompt_text, bridge.prompt_ids, bridge.parent.turn_id
        return text, self.tokenizer.encode(text), None
