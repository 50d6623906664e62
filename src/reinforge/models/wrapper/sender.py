"""The engine side of ``ModelWrapper``: prompts in, tracked engine requests out, and
the completions back as Experiences.

A chat prompt is the model's chat template (bridged to the ids sampled before when
the conversation continues an earlier reply, see ``chat_prompts``), or the
processor's prompt when the messages carry images (``multimodal_chat``). Every
request goes through one ``RequestTracker``, so an abandoned task's requests can be
cancelled; a prompt that leaves no room for a reply raises ``ContextLengthError``
before it reaches the engine.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import torch

from reinforge.core import Experience
from reinforge.models.engine import InferenceEngine, SamplingParams
from reinforge.models.vision import has_media
from reinforge.models.wrapper.call_history import CallHistory
from reinforge.models.wrapper.chat_prompts import ChatPrompts, ContextLengthError
from reinforge.models.wrapper.experiences import ExperienceBuilder, SentPrompt
from reinforge.models.wrapper.messages import tools_key, validate_messages
from reinforge.models.wrapper.multimodal_chat import multimodal_prompt
from reinforge.models.wrapper.requests import RequestTracker
from reinforge.models.wrapper.retokenized import (
    ConversationTokens,
    retokenized_experience,
    tokenize_conversation,
)


class EngineSender:
    """Sends one wrapper's prompts to its engine and builds Experiences of the replies."""

    def __init__(
        self,
        engine: InferenceEngine,
        model_name: str,
        chat_template: str | None,
        history: CallHistory,
    ) -> None:
        self.engine = engine
        self.model_name = model_name
        self.chat_template = chat_template
        self.history = history
        self.requests = RequestTracker()
        # built on first use: the engine's tokenizer may be costly to touch
        self._prompts: ChatPrompts | None = None
        self._builder: ExperienceBuilder | None = None

    @property
    def prompts(self) -> ChatPrompts:
        """The chat template and turn bridging of the engine's tokenizer."""
        if self._prompts is None:
            self._prompts = ChatPrompts(self.engine.tokenizer, self.chat_template)
        return self._prompts

    def check_length(self, ids: list[int], parent: int | None) -> None:
        """Refuse a prompt that fills the context (marking the conversation it continues)."""
        limit = getattr(self.engine, "max_model_len", None)
        if limit is None or len(ids) < limit:
            return
        if parent is not None:
            self.history.mark_truncated(parent)
        raise ContextLengthError.for_prompt(len(ids), limit)

    def message_token_len(self, messages: Any) -> int:
        messages = validate_messages(messages)
        if has_media(messages):
            prompt, _, _ = multimodal_prompt(
                self.engine, self.model_name, messages, self.chat_template
            )
            return len(prompt.ids)
        return len(self.engine.tokenizer.encode(self.prompts.render_text(messages)))

    def chat(
        self, messages: Any, tools: list[dict] | None, params: SamplingParams
    ) -> tuple[Future, SentPrompt]:
        messages = validate_messages(messages)
        key = tools_key(tools)
        if has_media(messages):
            return self._multimodal_chat(messages, tools, params, key)
        text, ids, parent = self.prompts.prompt(messages, tools, key)
        self.check_length(ids, parent)
        fut = self.requests.track(self.engine.submit, ids, params)
        return fut, SentPrompt(ids, text, params, messages, tools, parent, key)

    def _multimodal_chat(
        self, messages: list[dict[str, Any]], tools: list[dict] | None, params: Any, key: str
    ) -> tuple[Future, SentPrompt]:
        """A chat with images: the processor renders and expands the prompt; the
        experience keeps its image tensors (no turn bridging for these chats)."""
        prompt, recorded, source = multimodal_prompt(
            self.engine, self.model_name, messages, self.chat_template
        )
        self.check_length(prompt.ids, None)
        submit = self.engine.submit_multimodal
        fut = self.requests.track(submit, prompt.ids, params, prompt.inputs, source)
        sent = SentPrompt(
            prompt.ids, prompt.text, params, recorded, tools, None, key, prompt.inputs
        )
        return fut, sent

    def generate(
        self, prompts: list[str] | list[list[int]], params: SamplingParams
    ) -> list[tuple[Future, SentPrompt]]:
        if isinstance(prompts, str):
            raise TypeError("generate() takes a list of prompts; wrap a single prompt in a list")
        tokenizer = self.engine.tokenizer
        jobs = []
        for prompt in prompts:
            if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
                ids, prompt = prompt, tokenizer.decode(prompt, skip_special_tokens=False)
            else:
                ids = tokenizer.encode(prompt)
            self.check_length(ids, None)
            fut = self.requests.track(self.engine.submit, ids, params)
            jobs.append((fut, SentPrompt(ids, prompt, params)))
        return jobs

    def score(self, tokens: Any, temperature: float | None = None) -> Future:
        """The engine's request for log p(tokens[i] | tokens[:i]), i >= 1, under
        ``logits / temperature`` (None: 1, the model's own distribution)."""
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        if temperature is None or temperature == 1.0:
            return self.requests.track(self.engine.submit_score, ids)
        if not temperature > 0:
            raise ValueError(f"logprobs: temperature must be > 0, not {temperature}")
        if not getattr(self.engine, "scores_with_temperature", False):
            raise NotImplementedError(
                f"logprobs(temperature={temperature}): the {type(self.engine).__name__} "
                "scores tokens at temperature 1 only (an OpenAI-compatible server's "
                "prompt_logprobs are those of the raw logits); use temperature 1 (or None), "
                "or a model on engine: hf"
            )
        return self.requests.track(
            lambda: self.engine.submit_score(ids, temperature=float(temperature))
        )

    def experiences(
        self, sent: SentPrompt, completions: list[Any], record: bool
    ) -> list[Experience]:
        """One Experience per completion (chat replies join the turn index); ``record``
        adds them to the history."""
        if self._builder is None:
            self._builder = ExperienceBuilder(self.engine.tokenizer)
        chat = sent.messages is not None and sent.multi_modal_inputs is None
        turns = self.prompts.turns if chat else None
        out = self._builder.build(sent, completions, self.engine.model_version, turns)
        if record:
            self.history.record(out)
        return out

    def conversation(
        self, messages: list[dict[str, Any]], tools: list[dict] | None
    ) -> ConversationTokens:
        """A finished conversation re-tokenized with the chat template (see ``retokenized``)."""
        return tokenize_conversation(
            self.prompts.render_text,
            self.engine.tokenizer.encode,
            validate_messages(messages),
            tools,
            getattr(self.engine, "max_model_len", None),
        )

    def retokenized(
        self,
        conversation: ConversationTokens,
        scored: torch.Tensor,
        messages: list[dict[str, Any]],
        tools: list[dict] | None,
    ) -> Experience:
        prompt = conversation.ids[: conversation.prompt_length]
        return retokenized_experience(
            conversation,
            scored,
            messages=messages,
            tools=tools,
            prompt_text=self.engine.tokenizer.decode(prompt, skip_special_tokens=False),
            model_version=self.engine.model_version,
        )
