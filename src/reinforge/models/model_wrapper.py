"""ModelWrapper: what a workflow sees of the policy being trained.

It turns chat messages or raw prompts into token ids (the model's own chat
template), asks the engine for samples, and returns them as Experiences carrying
the exact sampled ids and their log-probabilities. Every method has an async twin;
the sync ones may be called from worker threads while the engine batches requests
from many workflows together.

The jobs behind it live in ``reinforge.models.wrapper``: message validation,
sampling arguments, chat prompts and turn bridging, experience building and
request tracking. The OpenAI API over a wrapper lives in
``reinforge.models.openai_api``, which the wrapper reaches through a registered
slot, never by import.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import torch

from reinforge.core import Experience, GenerationConfig
from reinforge.models.conversation import TurnIndex
from reinforge.models.engine import InferenceEngine, SamplingParams
from reinforge.models.history import merge_conversations
from reinforge.models.vision import has_media
from reinforge.models.wrapper import sampling_args
from reinforge.models.wrapper.chat_prompts import ChatPrompts, ContextLengthError
from reinforge.models.wrapper.experiences import ExperienceBuilder, SentPrompt
from reinforge.models.wrapper.inference_config import (
    InferenceModelConfig,
    engine_type,
    weights_folder,
)
from reinforge.models.wrapper.messages import tools_key, validate_messages
from reinforge.models.wrapper.multimodal_chat import multimodal_prompt
from reinforge.models.wrapper.openai_access import openai_builders
from reinforge.models.wrapper.requests import RequestTracker
from reinforge.models.wrapper.retokenized import (
    ConversationTokens,
    retokenized_experience,
    tokenize_conversation,
)

__all__ = [
    "HISTORY_SHAPES",
    "ContextLengthError",
    "InferenceModelConfig",
    "ModelWrapper",
    "validate_messages",
]

HISTORY_SHAPES = ("turn", "conversation")


class ModelWrapper:
    """The rollout model handed to workflows."""

    def __init__(
        self,
        engine: InferenceEngine,
        *,
        model_name: str | None = None,
        enable_history: bool = False,
        default_max_tokens: int = 256,
        chat_template: str | None = None,
        history_shape: str = "turn",
        request_timeout: float | None = None,
    ) -> None:
        if history_shape not in HISTORY_SHAPES:
            raise ValueError(
                f"history_shape must be one of {HISTORY_SHAPES}, got {history_shape!r}"
            )
        self.engine = engine
        self.model_name = model_name or getattr(engine, "model_path", None) or type(engine).__name__
        self.enable_history = enable_history
        self.history_shape = history_shape
        self.default_max_tokens = default_max_tokens
        #: seconds a chat/generate call waits for the engine before it is cancelled and
        #: raises TimeoutError (None: no limit; the runner's task timeout still applies)
        self.request_timeout = request_timeout
        self.chat_template = chat_template
        self.history: list[Experience] = []
        self._history_lock = threading.Lock()
        # built on first use: the engine's tokenizer may be costly to touch
        self._prompts: ChatPrompts | None = None
        self._builder: ExperienceBuilder | None = None
        self._openai: dict[str, Any] = {}
        self._requests = RequestTracker()
        self._config: InferenceModelConfig | None = None

    @property
    def model_version(self) -> int:
        return self.engine.model_version

    @property
    def tokenizer(self) -> Any:
        return self.engine.tokenizer

    @property
    def model_path(self) -> str:
        """The local folder of the weights, so ``AutoTokenizer.from_pretrained(model.model_path)``
        loads offline; the model's name when the engine has no folder (mock engine)."""
        return weights_folder(self.engine) or self.model_name

    @property
    def config(self) -> InferenceModelConfig:
        """The rollout model's settings under Trinity-RFT's names (built on first use)."""
        if self._config is None:
            self._config = InferenceModelConfig(
                model_path=self.model_path,
                engine_type=engine_type(self.engine),
                max_model_len=getattr(self.engine, "max_model_len", None),
                max_response_tokens=self.default_max_tokens,
                chat_template=self.chat_template,
                enable_history=self.enable_history,
            )
        return self._config

    @property
    def model_config(self) -> InferenceModelConfig:
        """Trinity-RFT's other name for ``config``."""
        return self.config

    # ---- prompts ---------------------------------------------------------------------

    def sampling_params(self, **kwargs: Any) -> SamplingParams:
        """Build SamplingParams from keyword arguments (GenerationConfig names accepted)."""
        return sampling_args.sampling_params(self.default_max_tokens, **kwargs)

    @staticmethod
    def rollout_kwargs(config: GenerationConfig) -> dict[str, Any]:
        """Keyword arguments for ``chat``/``generate`` from a task's rollout_args."""
        return sampling_args.rollout_kwargs(config)

    @property
    def _chat_prompts(self) -> ChatPrompts:
        """The chat template and turn bridging of this wrapper's tokenizer."""
        if self._prompts is None:
            self._prompts = ChatPrompts(self.tokenizer, self.chat_template)
        return self._prompts

    @property
    def native_tools(self) -> bool:
        """Whether the chat template renders tools and tool calls itself."""
        return self._chat_prompts.native_tools

    @property
    def turns(self) -> TurnIndex:
        return self._chat_prompts.turns

    def render_text(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict] | None = None,
        add_generation_prompt: bool = True,
    ) -> str:
        """The chat template's text for OpenAI-style messages (tool calls included)."""
        return self._chat_prompts.render_text(messages, tools, add_generation_prompt)

    def render(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None
    ) -> tuple[str, list[int]]:
        """Prompt text and ids of a fresh rendering (no bridging to earlier turns)."""
        text = self.render_text(messages, tools)
        return text, self.tokenizer.encode(text)

    async def get_message_token_len(self, messages: list[dict[str, Any]]) -> int:
        """Tokens of the prompt these messages make (generation prompt included; a
        message's images count as the tokens the processor expands them into)."""
        messages = validate_messages(messages)
        if has_media(messages):
            prompt, _, _ = multimodal_prompt(
                self.engine, self.model_name, messages, self.chat_template
            )
            return len(prompt.ids)
        return len(self.tokenizer.encode(self.render_text(messages)))

    def _check_length(self, ids: list[int], parent: int | None) -> None:
        limit = getattr(self.engine, "max_model_len", None)
        if limit is None or len(ids) < limit:
            return
        if parent is not None:
            self._mark_truncated(parent)
        raise ContextLengthError.for_prompt(len(ids), limit)

    # ---- requests --------------------------------------------------------------------

    def _submit_chat(
        self, messages: Any, tools: list[dict] | None, kwargs: dict[str, Any]
    ) -> tuple[Future, SentPrompt]:
        messages = validate_messages(messages)
        params = self.sampling_params(**kwargs)
        key = tools_key(tools)
        if has_media(messages):
            return self._submit_multimodal_chat(messages, tools, params, key)
        text, ids, parent = self._chat_prompts.prompt(messages, tools, key)
        self._check_length(ids, parent)
        fut = self._requests.track(self.engine.submit, ids, params)
        return fut, SentPrompt(ids, text, params, messages, tools, parent, key)

    def _submit_multimodal_chat(
        self, messages: list[dict[str, Any]], tools: list[dict] | None, params: Any, key: str
    ) -> tuple[Future, SentPrompt]:
        """A chat with images: the processor renders and expands the prompt; the
        experience keeps its image tensors (no turn bridging for these chats)."""
        prompt, recorded, source = multimodal_prompt(
            self.engine, self.model_name, messages, self.chat_template
        )
        self._check_length(prompt.ids, None)
        submit = self.engine.submit_multimodal
        fut = self._requests.track(submit, prompt.ids, params, prompt.inputs, source)
        sent = SentPrompt(
            prompt.ids, prompt.text, params, recorded, tools, None, key, prompt.inputs
        )
        return fut, sent

    def _submit_generate(
        self, prompts: list[str] | list[list[int]], kwargs: dict[str, Any]
    ) -> list[tuple[Future, SentPrompt]]:
        if isinstance(prompts, str):
            raise TypeError("generate() takes a list of prompts; wrap a single prompt in a list")
        params = self.sampling_params(**kwargs)
        jobs = []
        for prompt in prompts:
            if isinstance(prompt, list) and all(isinstance(t, int) for t in prompt):
                ids, prompt = prompt, self.tokenizer.decode(prompt, skip_special_tokens=False)
            else:
                ids = self.tokenizer.encode(prompt)
            self._check_length(ids, None)
            fut = self._requests.track(self.engine.submit, ids, params)
            jobs.append((fut, SentPrompt(ids, prompt, params)))
        return jobs

    def _experiences(self, sent: SentPrompt, completions: list[Any]) -> list[Experience]:
        if self._builder is None:
            self._builder = ExperienceBuilder(self.tokenizer)
        chat = sent.messages is not None and sent.multi_modal_inputs is None
        turns = self.turns if chat else None
        out = self._builder.build(sent, completions, self.model_version, turns)
        if self.enable_history:
            with self._history_lock:
                self.history.extend(out)
        return out

    def cancel_pending(self) -> int:
        """Cancel every engine request still in flight and refuse new ones (the engine
        drops a cancelled request at its next step). The runner calls this on a task it
        abandons, so the engine stops decoding for it. Returns how many were cancelled."""
        return self._requests.cancel_all()

    def close(self) -> None:
        """Cancel the requests in flight; later calls raise a RuntimeError saying so."""
        self.cancel_pending()

    # ---- public API ------------------------------------------------------------------

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        """Sample ``n`` replies to a conversation; one Experience per reply."""
        fut, sent = self._submit_chat(messages, tools, kwargs)
        return self._experiences(sent, self._requests.wait(fut, self.request_timeout))

    async def chat_async(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        fut, sent = self._submit_chat(messages, tools, kwargs)
        completions = await self._requests.wait_async(fut, self.request_timeout)
        return self._experiences(sent, completions)

    def generate(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        """Complete raw prompts (no chat template); ``n`` Experiences per prompt, in order."""
        out: list[Experience] = []
        for fut, sent in self._submit_generate(prompts, kwargs):
            out.extend(self._experiences(sent, self._requests.wait(fut, self.request_timeout)))
        return out

    async def generate_async(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        jobs = self._submit_generate(prompts, kwargs)
        timeout = self.request_timeout
        results = await asyncio.gather(*(self._requests.wait_async(f, timeout) for f, _ in jobs))
        out: list[Experience] = []
        for (_, sent), completions in zip(jobs, results, strict=True):
            out.extend(self._experiences(sent, completions))
        return out

    def logprobs(self, tokens: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """log p(tokens[i] | tokens[:i]) for i >= 1 under the current weights."""
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        return torch.tensor(
            self._requests.track(self.engine.submit_score, ids).result(), dtype=torch.float32
        )

    async def logprobs_async(self, tokens: Sequence[int] | torch.Tensor) -> torch.Tensor:
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        fut = self._requests.track(self.engine.submit_score, ids)
        return torch.tensor(await asyncio.wrap_future(fut), dtype=torch.float32)

    # ---- re-tokenized conversations -----------------------------------------------------

    def _tokenize_conversation(
        self, messages: list[dict[str, Any]], tools: list[dict] | None
    ) -> ConversationTokens:
        return tokenize_conversation(
            self.render_text,
            self.tokenizer.encode,
            validate_messages(messages),
            tools,
            getattr(self.engine, "max_model_len", None),
        )

    def _retokenized(
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
            prompt_text=self.tokenizer.decode(prompt, skip_special_tokens=False),
            model_version=self.model_version,
        )

    def convert_messages_to_experience(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None
    ) -> Experience:
        """A finished conversation as one Experience, re-tokenized with the chat template
        (``action_mask`` 1 on the assistant turns) and scored under the current weights.

        Trinity-RFT's way; its tokens are a re-encoding of the text, not the sampled
        ids (``info["retokenized"]``). Prefer recorded turns where there are some.
        """
        conversation = self._tokenize_conversation(messages, tools)
        return self._retokenized(conversation, self.logprobs(conversation.ids), messages, tools)

    async def convert_messages_to_experience_async(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None
    ) -> Experience:
        conversation = self._tokenize_conversation(messages, tools)
        scored = await self.logprobs_async(conversation.ids)
        return self._retokenized(conversation, scored, messages, tools)

    # ---- the OpenAI API --------------------------------------------------------------

    @property
    def openai_service(self) -> Any:
        """The OpenAI-compatible API over this wrapper (shared by its clients and servers)."""
        if "service" not in self._openai:
            self._openai["service"] = openai_builders().service(self)
        return self._openai["service"]

    def get_openai_client(self) -> Any:
        """An ``openai.OpenAI`` client served in-process by this wrapper (calls are recorded)."""
        if "sync" not in self._openai:
            self._openai["sync"] = openai_builders().client(self.openai_service)
        return self._openai["sync"]

    def get_openai_async_client(self) -> Any:
        """An ``openai.AsyncOpenAI`` client served in-process by this wrapper."""
        if "async" not in self._openai:
            self._openai["async"] = openai_builders().async_client(self.openai_service)
        return self._openai["async"]

    def agent_endpoint(self, label: str = "") -> Any:
        """A context manager giving an ``AgentEndpoint`` (``base_url``, ``api_key``,
        ``model``) over HTTP for an agent this code cannot hand a client object to, such
        as one in a subprocess: its calls are answered and recorded by this wrapper
        until the block ends. ``label`` (e.g. the task and run) starts the key."""
        return openai_builders().agent_endpoint(self.openai_service, label)

    # ---- history ---------------------------------------------------------------------

    def _mark_truncated(self, turn_id: int) -> None:
        """The conversation that ``turn_id`` belongs to hit the context length."""
        with self._history_lock:
            for exp in reversed(self.history):
                if exp.info.get("turn_id") == turn_id:
                    exp.truncate_status = "prompt_truncated"
                    exp.info["context_length_exceeded"] = True
                    return

    def extract_experience_from_history(
        self, clear_history: bool = True, shape: str | None = None
    ) -> list[Experience]:
        """Experiences of every call since the last extraction (needs ``enable_history``).

        ``shape`` (default: the wrapper's ``history_shape``) is ``"turn"``, one
        experience per sampled reply, or ``"conversation"``, one experience per
        conversation with every turn's sampled tokens in it (``action_mask`` 1) and the
        tokens between turns masked out (0). Turns whose conversation could not be
        bridged token-exactly stay separate experiences.
        """
        if not self.enable_history:
            raise RuntimeError(
                "history is off; create the ModelWrapper with enable_history=True "
                "(in YAML: explorer.rollout_model.enable_history: true)"
            )
        shape = shape or self.history_shape
        if shape not in HISTORY_SHAPES:
            raise ValueError(f"shape must be one of {HISTORY_SHAPES}, got {shape!r}")
        with self._history_lock:
            out = list(self.history)
            if clear_history:
                self.history.clear()
        return merge_conversations(out) if shape == "conversation" else out

    def clear_history(self) -> None:
        with self._history_lock:
            self.history.clear()
