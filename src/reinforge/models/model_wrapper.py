"""ModelWrapper: what a workflow sees of the policy being trained.

It turns chat messages or raw prompts into token ids (the model's own chat
template), asks the engine for samples, and returns them as Experiences carrying
the exact sampled ids and their log-probabilities. Every method has an async twin;
the sync ones may be called from worker threads while the engine batches requests
from many workflows together.

The class is the face Trinity-RFT workflows know (``chat``, ``generate``,
``logprobs``, the OpenAI clients, the history) and little more: the jobs behind it
live in ``reinforge.models.wrapper`` (``sender``: prompts into tracked engine
requests and replies into Experiences; ``chat_prompts``: the chat template and turn
bridging, reached as ``model.chat_prompts``; ``call_history``: the recorded calls;
``sampling_args``: keyword arguments into ``SamplingParams`` and a task's
``rollout_args`` into keyword arguments). The OpenAI API over a wrapper lives in
``reinforge.models.openai_api``, which the wrapper reaches through a registered
slot, never by import.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import torch

from reinforge.core import Experience
from reinforge.models.engine import InferenceEngine
from reinforge.models.wrapper.call_history import HISTORY_SHAPES, CallHistory, check_shape
from reinforge.models.wrapper.chat_prompts import ChatPrompts, ContextLengthError
from reinforge.models.wrapper.inference_config import (
    InferenceModelConfig,
    engine_type,
    weights_folder,
)
from reinforge.models.wrapper.messages import validate_messages
from reinforge.models.wrapper.openai_access import openai_builders
from reinforge.models.wrapper.sampling_args import sampling_params
from reinforge.models.wrapper.sender import EngineSender

__all__ = [
    "HISTORY_SHAPES",
    "ContextLengthError",
    "InferenceModelConfig",
    "ModelWrapper",
    "validate_messages",
]


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
        check_shape(history_shape, "history_shape")
        self.engine = engine
        self.model_name = model_name or getattr(engine, "model_path", None) or type(engine).__name__
        self.enable_history = enable_history
        self.history_shape = history_shape
        self.default_max_tokens = default_max_tokens
        #: seconds a chat/generate call waits for the engine before it is cancelled and
        #: raises TimeoutError (None: no limit; the runner's task timeout still applies)
        self.request_timeout = request_timeout
        self.chat_template = chat_template
        self._history = CallHistory()
        #: every recorded call's experiences (with ``enable_history``)
        self.history: list[Experience] = self._history.items
        self._send = EngineSender(engine, self.model_name, chat_template, self._history)
        self._openai: dict[str, Any] = {}
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

    @property
    def chat_prompts(self) -> ChatPrompts:
        """The chat template of this model (``render_text``, ``render``, ``native_tools``)
        and the index of its recent replies that continued conversations bridge to
        (``turns``)."""
        return self._send.prompts

    async def get_message_token_len(self, messages: list[dict[str, Any]]) -> int:
        """Tokens of the prompt these messages make (generation prompt included; a
        message's images count as the tokens the processor expands them into)."""
        return self._send.message_token_len(messages)

    # ---- sampling and scoring --------------------------------------------------------

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        """Sample ``n`` replies to a conversation; one Experience per reply.

        ``kwargs`` are ``GenerationConfig``'s fields (a task's ``rollout_args`` through
        ``reinforge.models.wrapper.sampling_args.rollout_kwargs``) and the engine-only
        ``stop_token_ids`` / ``top_logprobs``."""
        params = sampling_params(self.default_max_tokens, **kwargs)
        fut, sent = self._send.chat(messages, tools, params)
        completions = self._send.requests.wait(fut, self.request_timeout)
        return self._send.experiences(sent, completions, self.enable_history)

    async def chat_async(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        params = sampling_params(self.default_max_tokens, **kwargs)
        fut, sent = self._send.chat(messages, tools, params)
        completions = await self._send.requests.wait_async(fut, self.request_timeout)
        return self._send.experiences(sent, completions, self.enable_history)

    def generate(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        """Complete raw prompts (no chat template); ``n`` Experiences per prompt, in order."""
        jobs = self._send.generate(prompts, sampling_params(self.default_max_tokens, **kwargs))
        out: list[Experience] = []
        for fut, sent in jobs:
            completions = self._send.requests.wait(fut, self.request_timeout)
            out.extend(self._send.experiences(sent, completions, self.enable_history))
        return out

    async def generate_async(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        jobs = self._send.generate(prompts, sampling_params(self.default_max_tokens, **kwargs))
        wait, timeout = self._send.requests.wait_async, self.request_timeout
        results = await asyncio.gather(*(wait(fut, timeout) for fut, _ in jobs))
        out: list[Experience] = []
        for (_, sent), completions in zip(jobs, results, strict=True):
            out.extend(self._send.experiences(sent, completions, self.enable_history))
        return out

    def logprobs(
        self, tokens: Sequence[int] | torch.Tensor, temperature: float | None = None
    ) -> torch.Tensor:
        """log p(tokens[i] | tokens[:i]) for i >= 1 under the current weights: one less
        than ``len(tokens)``, so a reply's are ``[prompt_length - 1:]``. With
        ``temperature`` (Trinity-RFT's keyword), those of ``logits / temperature``;
        None is 1. Engines ``hf`` and ``mock`` take any temperature > 0; a server
        (``openai``, ``vllm``) only 1, and another raises ``NotImplementedError``."""
        scored = self._send.score(tokens, temperature).result()
        return torch.tensor(scored, dtype=torch.float32)

    async def logprobs_async(
        self, tokens: Sequence[int] | torch.Tensor, temperature: float | None = None
    ) -> torch.Tensor:
        scored = await asyncio.wrap_future(self._send.score(tokens, temperature))
        return torch.tensor(scored, dtype=torch.float32)

    def convert_messages_to_experience(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict] | None = None,
        temperature: float | None = None,
    ) -> Experience:
        """A finished conversation as one Experience, re-tokenized with the chat template
        (``action_mask`` 1 on the assistant turns) and scored under the current weights
        (at ``temperature``, as ``logprobs`` takes it).

        Trinity-RFT's way; its tokens are a re-encoding of the text, not the sampled
        ids (``info["retokenized"]``). Prefer recorded turns where there are some.
        """
        conversation = self._send.conversation(messages, tools)
        scored = self.logprobs(conversation.ids, temperature)
        return self._send.retokenized(conversation, scored, messages, tools)

    async def convert_messages_to_experience_async(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict] | None = None,
        temperature: float | None = None,
    ) -> Experience:
        conversation = self._send.conversation(messages, tools)
        scored = await self.logprobs_async(conversation.ids, temperature)
        return self._send.retokenized(conversation, scored, messages, tools)

    def cancel_pending(self) -> int:
        """Cancel every engine request still in flight and refuse new ones (the engine
        drops a cancelled request at its next step). The runner calls this on a task it
        abandons, so the engine stops decoding for it. Returns how many were cancelled."""
        return self._send.requests.cancel_all()

    def close(self) -> None:
        """Cancel the requests in flight; later calls raise a RuntimeError saying so."""
        self.cancel_pending()

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
        return self._history.extract(clear_history, shape or self.history_shape)

    def clear_history(self) -> None:
        self._history.clear()
