"""Rollout engines for episode workflows: ``await engine.get_model_response(messages)``.

rLLM workflows talk to the policy through a rollout engine whose one method returns
a ``ModelOutput``. ``ModelWrapperEngine`` provides that method on top of
reinforge's ``ModelWrapper``: the output carries the prompt ids the wrapper encoded
and the ids the engine sampled, copied from the wrapper's Experience, so nothing
the model generated is ever re-tokenized.
"""

from __future__ import annotations

import copy
import logging
from collections import deque
from typing import Any

from reinforge.core.episode import TerminationEvent, TerminationReason
from reinforge.core.model_output import ModelOutput
from reinforge.models.tool_format import parse_tool_calls

__all__ = ["ChatParser", "ModelOutput", "ModelWrapperEngine", "RolloutEngine", "split_reasoning"]

logger = logging.getLogger(__name__)

# Routing and bookkeeping hints rLLM's own engines accept; they mean nothing to a
# ModelWrapper, so they are dropped instead of failing as unknown sampling arguments.
IGNORED_HINTS = frozenset(
    {
        "application_id",
        "enforce_max_prompt_length",
        "validate",
        "accumulate_reasoning",
        "skip_special_tokens",
    }
)

_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"


class RolloutEngine:
    """What an episode workflow sees of the policy."""

    tokenizer: Any = None

    @property
    def weight_version(self) -> int:
        """Version of the policy weights replies are sampled from."""
        return 0

    async def get_model_response(
        self, messages: list[dict[str, Any]], **kwargs: Any
    ) -> ModelOutput:
        """Sample one reply to ``messages``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_model_response()")


def split_reasoning(text: str) -> tuple[str | None, str]:
    """``(reasoning, content)`` of a reply that may open with a ``<think>`` block."""
    head, sep, tail = text.partition(_THINK_CLOSE)
    if not sep:
        return None, text
    return head.replace(_THINK_OPEN, "", 1).strip(), tail.lstrip("\n")


def _tool_calls(info: dict[str, Any], content: str) -> tuple[list[dict[str, Any]] | None, str]:
    """Structured tool calls of a reply: the wrapper's own, else parsed from the text."""
    calls = info.get("tool_calls")
    if calls:
        return list(calls), content
    parsed = parse_tool_calls(content)
    if not parsed.tool_calls:
        return None, content
    return list(parsed.tool_calls), parsed.content or ""


class ChatParser:
    """rLLM's ``rollout_engine.chat_parser``: the chat template's text for messages, as
    the wrapper renders them (its own template, tools included)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    @property
    def tokenizer(self) -> Any:
        return self.model.tokenizer

    def parse(
        self,
        messages: list[dict[str, Any]],
        add_generation_prompt: bool = False,
        is_first_msg: bool = False,
        tools: list[dict[str, Any]] | None = None,
        **hints: Any,
    ) -> str:
        """The template's text for ``messages`` (``is_first_msg`` and rLLM's other
        rendering hints change nothing here: the whole conversation is rendered)."""
        return self.model.chat_prompts.render_text(messages, tools, add_generation_prompt)


class ModelWrapperEngine(RolloutEngine):
    """``get_model_response`` over a ``ModelWrapper`` (one sample per call).

    ``sampling`` holds default sampling arguments (``temperature``, ``max_tokens``,
    ...); keyword arguments of a call override them. With ``max_prompt_length`` set,
    a prompt longer than that many tokens is not sent: the call raises
    ``TerminationEvent(MAX_PROMPT_LENGTH_EXCEEDED)``, which ends the episode with that
    reason, as rLLM's engines do. ``max_response_length`` is the reply budget rLLM's
    workflows read (default: the sampling ``max_tokens``, else the model's), and
    ``chat_parser`` renders messages with the model's chat template.

    The last ``record_calls`` calls (messages sent, output returned) are kept in
    ``_reinforge_calls``, so that steps whose agent stored only the reply text can be given
    their token ids afterwards (``attach.attach_model_outputs``).
    """

    def __init__(
        self,
        model: Any,
        *,
        sampling: dict[str, Any] | None = None,
        max_prompt_length: int | None = None,
        max_response_length: int | None = None,
        record_calls: int = 1024,
    ) -> None:
        self.model = model
        self.sampling = {k: v for k, v in (sampling or {}).items() if k != "n"}
        self.max_prompt_length = max_prompt_length
        self._max_response_length = max_response_length
        self.chat_parser = ChatParser(model)
        # reinforge's own record, under a name no user subclass will reuse
        self._reinforge_calls: deque[tuple[list[dict[str, Any]], ModelOutput]] = deque(
            maxlen=record_calls
        )

    @property
    def tokenizer(self) -> Any:  # type: ignore[override]
        return self.model.tokenizer

    @property
    def weight_version(self) -> int:
        return int(self.model.model_version)

    @property
    def max_response_length(self) -> int:
        if self._max_response_length is not None:
            return int(self._max_response_length)
        if self.sampling.get("max_tokens") is not None:
            return int(self.sampling["max_tokens"])
        return int(self.model.config.max_response_tokens)

    def _call_args(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        args = dict(self.sampling)
        for key, value in kwargs.items():
            if key in IGNORED_HINTS:
                continue
            args[key] = value
        n = args.pop("n", 1)
        if n != 1:
            raise ValueError(f"get_model_response samples one reply; got n={n}")
        return args

    async def get_model_response(
        self, messages: list[dict[str, Any]], **kwargs: Any
    ) -> ModelOutput:
        tools = kwargs.pop("tools", None)
        args = self._call_args(kwargs)
        if self.max_prompt_length is not None:
            _, ids = self.model.chat_prompts.render(messages, tools)
            if len(ids) > self.max_prompt_length:
                logger.debug("prompt of %d tokens > max_prompt_length", len(ids))
                raise TerminationEvent(TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED)
        (exp,) = await self.model.chat_async(messages, tools=tools, **args)
        output = self.to_model_output(exp, with_tools=bool(tools))
        self._reinforge_calls.append((copy.deepcopy(list(messages)), output))
        return output

    @staticmethod
    def to_model_output(exp: Any, with_tools: bool = False) -> ModelOutput:
        """The ModelOutput of one Experience from ``ModelWrapper.chat``: ids copied, not re-encoded."""
        ids = exp.tokens.tolist()
        cut = exp.prompt_length
        text = exp.response_text or ""
        reasoning, content = split_reasoning(text)
        tool_calls = None
        if with_tools:
            tool_calls, content = _tool_calls(exp.info, content)
        return ModelOutput(
            text=text,
            content=content,
            reasoning=reasoning,
            tool_calls=tool_calls,
            prompt_ids=ids[:cut],
            completion_ids=ids[cut:],
            logprobs=None if exp.logprobs is None else exp.logprobs.tolist(),
            finish_reason=exp.info.get("finish_reason"),
            weight_version=exp.info.get("model_version"),
        )
