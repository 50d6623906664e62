"""ModelWrapper: what a workflow sees of the policy being trained.

It turns chat messages or raw prompts into token ids (the model's own chat
template), asks the engine for samples, and returns them as Experiences carrying
the exact sampled ids and their log-probabilities. Every method has an async twin;
the sync ones may be called from worker threads while the engine batches requests
from many workflows together.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from reinforge.core import Experience, GenerationConfig
from reinforge.models.conversation import Turn, TurnIndex
from reinforge.models.engine import Completion, InferenceEngine, SamplingParams
from reinforge.models.history import merge_conversations
from reinforge.models.tool_format import (
    parse_tool_calls,
    render_messages,
    template_source,
    template_supports_tools,
)

_ROLES = {"system", "user", "assistant", "tool", "developer"}
_SAMPLING_KEYS = {f.name for f in fields(SamplingParams)}
_IGNORED_KEYS = {"logprobs"}  # log-probabilities are always returned
HISTORY_SHAPES = ("turn", "conversation")
_ATOMIC = (str, int, float, bool, type(None))
_CONFIG_FIELDS: dict[type, tuple[str, ...]] = {}


def _copy_value(value: Any) -> Any:
    """An independent copy of a config value (what ``asdict`` would give), cheaply."""
    if isinstance(value, _ATOMIC):
        return value
    if type(value) is list and all(isinstance(v, _ATOMIC) for v in value):
        return value.copy()
    return copy.deepcopy(value)


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


def _tools_key(tools: list[dict] | None) -> str:
    return "" if not tools else json.dumps(tools, sort_keys=True)


def validate_messages(messages: Any) -> list[dict[str, Any]]:
    """Check the OpenAI-style message list shape; raise ValueError naming the bad entry."""
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ValueError(f"messages[{i}] must be a dict, got {type(msg).__name__}")
        role = msg.get("role")
        if not isinstance(role, str) or role not in _ROLES:
            raise ValueError(
                f"messages[{i}] has unknown role {role!r}; expected one of {sorted(_ROLES)}"
            )
        content = msg.get("content")
        if content is not None and not isinstance(content, str | list):
            raise ValueError(
                f"messages[{i}].content must be a string, got {type(content).__name__}"
            )
        if isinstance(content, list) and not all(isinstance(part, dict) for part in content):
            raise ValueError(f"messages[{i}].content parts must be objects like {{'type': 'text'}}")
        calls = msg.get("tool_calls")
        if calls is not None and (
            not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls)
        ):
            raise ValueError(f"messages[{i}].tool_calls must be a list of tool call objects")
    return list(messages)


class ContextLengthError(ValueError):
    """A prompt leaves no room for a reply within the engine's ``max_model_len``."""


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
        self._turns: TurnIndex | None = None
        self._native_tools: bool | None = None
        self._openai: dict[str, Any] = {}
        self._eos_set: frozenset[int] | None = None
        # engine requests in flight, so an abandoned task's can be cancelled
        self._pending: set[Future] = set()
        self._pending_lock = threading.Lock()
        self._closed = False

    @property
    def model_version(self) -> int:
        return self.engine.model_version

    @property
    def tokenizer(self) -> Any:
        return self.engine.tokenizer

    @property
    def model_path(self) -> str:
        return self.model_name

    # ---- helpers ---------------------------------------------------------------------

    def sampling_params(self, **kwargs: Any) -> SamplingParams:
        """Build SamplingParams from keyword arguments (GenerationConfig names accepted)."""
        args: dict[str, Any] = {}
        for key, value in kwargs.items():
            if key in _IGNORED_KEYS or value is None:
                continue
            if key not in _SAMPLING_KEYS:
                raise TypeError(
                    f"unknown sampling argument '{key}'; known: {sorted(_SAMPLING_KEYS | _IGNORED_KEYS)}"
                )
            args[key] = value
        args.setdefault("max_tokens", self.default_max_tokens)
        if isinstance(args.get("stop"), str):
            args["stop"] = [args["stop"]]
        return SamplingParams(**args)

    @staticmethod
    def rollout_kwargs(config: GenerationConfig) -> dict[str, Any]:
        """Keyword arguments for ``chat``/``generate`` from a task's rollout_args."""
        cls = type(config)
        if cls.to_dict is not GenerationConfig.to_dict:
            return {k: v for k, v in config.to_dict().items() if v is not None and k != "logprobs"}
        # What ``to_dict`` (dataclasses.asdict) gives, without its recursive deep copy
        # of every scalar: containers are still copied, so nothing is shared.
        names = _CONFIG_FIELDS.get(cls)
        if names is None:
            names = _CONFIG_FIELDS[cls] = tuple(f.name for f in fields(cls) if f.name != "logprobs")
        out: dict[str, Any] = {}
        for name in names:
            value = getattr(config, name)
            if value is not None:
                out[name] = value if isinstance(value, _ATOMIC) else _copy_value(value)
        return out

    @property
    def native_tools(self) -> bool:
        """Whether the chat template renders tools and tool calls itself."""
        if self._native_tools is None:
            self._native_tools = template_supports_tools(
                template_source(self.tokenizer, self.chat_template)
            )
        return self._native_tools

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

    @property
    def turns(self) -> TurnIndex:
        if self._turns is None:
            self._turns = TurnIndex(self.tokenizer, self.render_text)
        return self._turns

    def _prompt(
        self, messages: list[dict[str, Any]], tools: list[dict] | None, tools_key: str
    ) -> tuple[str, list[int], int | None]:
        """Prompt text and ids; a continued conversation keeps its earlier sampled ids."""
        text = self.render_text(messages, tools)
        if any(m.get("role") == "assistant" for m in messages):
            bridge = self.turns.bridge(messages, tools, tools_key, text)
            if bridge is not None:
                return bridge.prompt_text, bridge.prompt_ids, bridge.parent.turn_id
        return text, self.tokenizer.encode(text), None

    def _check_length(self, ids: list[int], parent: int | None) -> None:
        limit = getattr(self.engine, "max_model_len", None)
        if limit is None or len(ids) < limit:
            return
        if parent is not None:
            self._mark_truncated(parent)
        raise ContextLengthError(
            f"the prompt has {len(ids)} tokens, but the model's context length is {limit}: "
            "no room for a reply; shorten the conversation"
        )

    def _mark_truncated(self, turn_id: int) -> None:
        """The conversation that ``turn_id`` belongs to hit the context length."""
        with self._history_lock:
            for exp in reversed(self.history):
                if exp.info.get("turn_id") == turn_id:
                    exp.truncate_status = "prompt_truncated"
                    exp.info["context_length_exceeded"] = True
                    return

    def _experiences(
        self,
        prompt_ids: list[int],
        prompt_text: str,
        completions: list[Completion],
        params: SamplingParams,
        messages: list[dict[str, Any]] | None,
        tools: list[dict] | None = None,
        parent: int | None = None,
        tools_key: str = "",
    ) -> list[Experience]:
        out = []
        version = self.model_version
        turns = self.turns if messages is not None else None
        eos_ids = self._eos_ids
        for comp in completions:
            tokens = _long_array(prompt_ids + comp.token_ids)  # shared by exp and turn
            text = self.tokenizer.decode(comp.token_ids)
            for stop in params.stop:
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
                prompt_text=prompt_text,
                response_text=text,
                messages=None if messages is None else [*messages, reply],
                tools=tools,
                truncate_status="response_truncated" if comp.finish_reason == "length" else None,
                info={"model_version": version, "finish_reason": comp.finish_reason},
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
                ended_with_eos = bool(comp.token_ids) and comp.token_ids[-1] in eos_ids
                turns.record(
                    Turn(
                        turn_id,
                        messages,
                        tools_key,
                        [reply]
                        if parsed is None
                        else [{"role": "assistant", "content": text}, reply],
                        tokens,
                        ended_with_eos,
                    )
                )
            out.append(exp)
        if self.enable_history:
            with self._history_lock:
                self.history.extend(out)
        return out

    @property
    def _eos_ids(self) -> frozenset[int]:
        if self._eos_set is None:
            self._eos_set = frozenset(getattr(self.tokenizer, "eos_token_ids", ()))
        return self._eos_set

    def _track(self, submit: Callable[..., Future], *args: Any) -> Future:
        """Every engine request goes through here: it is remembered until it resolves,
        so ``cancel_pending`` can cancel an abandoned task's requests.

        Futures that are done on return (the mock engine answers in ``submit``) are
        not tracked at all: this is on the path of every sampled reply.
        """
        if self._closed:
            raise self._closed_error()
        fut = submit(*args)
        if fut.done():
            return fut
        with self._pending_lock:
            closed = self._closed  # closed meanwhile: the request must not escape
            if not closed:
                self._pending.add(fut)
        if closed:
            fut.cancel()
            raise self._closed_error()
        fut.add_done_callback(self._forget)
        return fut

    def _wait(self, fut: Future) -> Any:
        """The engine's answer, within ``request_timeout`` (then the request is cancelled)."""
        try:
            return fut.result(timeout=self.request_timeout)
        except FutureTimeout:
            fut.cancel()
            raise TimeoutError(f"no reply from the engine within {self.request_timeout}s") from None

    async def _wait_async(self, fut: Future) -> Any:
        if self.request_timeout is None:
            return await asyncio.wrap_future(fut)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(fut), self.request_timeout)
        except TimeoutError:
            fut.cancel()
            raise TimeoutError(f"no reply from the engine within {self.request_timeout}s") from None

    def _closed_error(self) -> RuntimeError:
        return RuntimeError(
            "this ModelWrapper is closed (its task timed out or was abandoned, or the "
            "explorer shut down): it sends no more requests to the engine"
        )

    def _forget(self, fut: Future) -> None:
        with self._pending_lock:
            self._pending.discard(fut)

    def cancel_pending(self) -> int:
        """Cancel every engine request still in flight and refuse new ones (the engine
        drops a cancelled request at its next step). The runner calls this on a task it
        abandons, so the engine stops decoding for it. Returns how many were cancelled."""
        with self._pending_lock:
            self._closed = True
            pending, self._pending = list(self._pending), set()
        return sum(fut.cancel() for fut in pending)

    def close(self) -> None:
        """Cancel the requests in flight; later calls raise a RuntimeError saying so."""
        self.cancel_pending()

    def _submit_chat(self, messages, tools, kwargs) -> tuple[Future, Any]:
        messages = validate_messages(messages)
        params = self.sampling_params(**kwargs)
        tools_key = _tools_key(tools)
        text, ids, parent = self._prompt(messages, tools, tools_key)
        self._check_length(ids, parent)
        fut = self._track(self.engine.submit, ids, params)
        return fut, (ids, text, params, messages, tools, parent, tools_key)

    def _submit_generate(self, prompts, kwargs) -> list[tuple[Future, Any]]:
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
            jobs.append(
                (self._track(self.engine.submit, ids, params), (ids, prompt, params, None, None))
            )
        return jobs

    # ---- public API ------------------------------------------------------------------

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        """Sample ``n`` replies to a conversation; one Experience per reply."""
        fut, ctx = self._submit_chat(messages, tools, kwargs)
        return self._experiences(ctx[0], ctx[1], self._wait(fut), *ctx[2:])

    async def chat_async(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        fut, ctx = self._submit_chat(messages, tools, kwargs)
        completions = await self._wait_async(fut)
        return self._experiences(ctx[0], ctx[1], completions, *ctx[2:])

    def generate(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        """Complete raw prompts (no chat template); ``n`` Experiences per prompt, in order."""
        out: list[Experience] = []
        for fut, ctx in self._submit_generate(prompts, kwargs):
            out.extend(self._experiences(ctx[0], ctx[1], self._wait(fut), *ctx[2:]))
        return out

    async def generate_async(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        jobs = self._submit_generate(prompts, kwargs)
        results = await asyncio.gather(*(self._wait_async(f) for f, _ in jobs))
        out: list[Experience] = []
        for (_, ctx), completions in zip(jobs, results, strict=True):
            out.extend(self._experiences(ctx[0], ctx[1], completions, *ctx[2:]))
        return out

    def logprobs(self, tokens: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """log p(tokens[i] | tokens[:i]) for i >= 1 under the current weights."""
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        return torch.tensor(
            self._track(self.engine.submit_score, ids).result(), dtype=torch.float32
        )

    async def logprobs_async(self, tokens: Sequence[int] | torch.Tensor) -> torch.Tensor:
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        fut = self._track(self.engine.submit_score, ids)
        return torch.tensor(await asyncio.wrap_future(fut), dtype=torch.float32)

    @property
    def openai_service(self) -> Any:
        """The OpenAI-compatible API over this wrapper (shared by its clients and servers)."""
        if "service" not in self._openai:
            from reinforge.models.openai_service import OpenAIService

            self._openai["service"] = OpenAIService(self)
        return self._openai["service"]

    def get_openai_client(self) -> Any:
        """An ``openai.OpenAI`` client served in-process by this wrapper (calls are recorded)."""
        if "sync" not in self._openai:
            from reinforge.models.openai_client import openai_client

            self._openai["sync"] = openai_client(self.openai_service)
        return self._openai["sync"]

    def get_openai_async_client(self) -> Any:
        """An ``openai.AsyncOpenAI`` client served in-process by this wrapper."""
        if "async" not in self._openai:
            from reinforge.models.openai_client import async_openai_client

            self._openai["async"] = async_openai_client(self.openai_service)
        return self._openai["async"]

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
