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
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from reinforge.core import Experience, GenerationConfig
from reinforge.models.engine import Completion, InferenceEngine, SamplingParams

_ROLES = {"system", "user", "assistant", "tool", "developer"}
_SAMPLING_KEYS = {f.name for f in fields(SamplingParams)}
_IGNORED_KEYS = {"logprobs"}  # log-probabilities are always returned
_ATOMIC = (str, int, float, bool, type(None))
_CONFIG_FIELDS: dict[type, tuple[str, ...]] = {}


def _copy_value(value: Any) -> Any:
    """An independent copy of a config value (what ``asdict`` would give), cheaply."""
    if isinstance(value, _ATOMIC):
        return value
    if type(value) is list and all(isinstance(v, _ATOMIC) for v in value):
        return value.copy()
    return copy.deepcopy(value)


def _long_tensor(ids: list[int]) -> torch.Tensor:
    """int64 tensor of a list of ids; several times cheaper than ``torch.tensor(list)``.

    Built on a numpy array, which (unlike ``array.array``) the garbage collector does
    not track: experiences pile up in memory, and each tracked object makes every
    full collection slower.
    """
    return torch.from_numpy(np.array(ids, dtype=np.int64))


def _float_tensor(values: list[float]) -> torch.Tensor:
    """float32 tensor of a list of floats (same rounding as ``torch.tensor``, less overhead)."""
    return torch.from_numpy(np.array(values, dtype=np.float32))


def validate_messages(messages: Any) -> list[dict[str, Any]]:
    """Check the OpenAI-style message list shape; raise ValueError naming the bad entry."""
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ValueError(f"messages[{i}] must be a dict, got {type(msg).__name__}")
        role = msg.get("role")
        if role not in _ROLES:
            raise ValueError(
                f"messages[{i}] has unknown role {role!r}; expected one of {sorted(_ROLES)}"
            )
        content = msg.get("content")
        if content is not None and not isinstance(content, str | list):
            raise ValueError(
                f"messages[{i}].content must be a string, got {type(content).__name__}"
            )
    return list(messages)


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
    ) -> None:
        self.engine = engine
        self.model_name = model_name or getattr(engine, "model_path", None) or type(engine).__name__
        self.enable_history = enable_history
        self.default_max_tokens = default_max_tokens
        self.chat_template = chat_template
        self.history: list[Experience] = []
        self._history_lock = threading.Lock()

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

    def render(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None
    ) -> tuple[str, list[int]]:
        text = self.tokenizer.render_chat(
            messages, add_generation_prompt=True, tools=tools, chat_template=self.chat_template
        )
        return text, self.tokenizer.encode(text)

    def _experiences(
        self,
        prompt_ids: list[int],
        prompt_text: str,
        completions: list[Completion],
        params: SamplingParams,
        messages: list[dict[str, Any]] | None,
        tools: list[dict] | None = None,
    ) -> list[Experience]:
        out = []
        version = self.model_version
        for comp in completions:
            text = self.tokenizer.decode(comp.token_ids)
            for stop in params.stop:
                cut = text.find(stop)
                if cut != -1:
                    text = text[:cut]
            exp = Experience(
                tokens=_long_tensor(prompt_ids + comp.token_ids),
                prompt_length=len(prompt_ids),
                logprobs=_float_tensor(comp.logprobs),
                prompt_text=prompt_text,
                response_text=text,
                messages=None
                if messages is None
                else [*messages, {"role": "assistant", "content": text}],
                tools=tools,
                truncate_status="response_truncated" if comp.finish_reason == "length" else None,
                info={"model_version": version, "finish_reason": comp.finish_reason},
            )
            out.append(exp)
        if self.enable_history:
            with self._history_lock:
                self.history.extend(out)
        return out

    def _submit_chat(self, messages, tools, kwargs) -> tuple[Future, Any]:
        messages = validate_messages(messages)
        params = self.sampling_params(**kwargs)
        text, ids = self.render(messages, tools)
        fut = self.engine.submit(ids, params)
        return fut, (ids, text, params, messages, tools)

    def _submit_generate(self, prompts, kwargs) -> list[tuple[Future, Any]]:
        if isinstance(prompts, str):
            raise TypeError("generate() takes a list of prompts; wrap a single prompt in a list")
        params = self.sampling_params(**kwargs)
        jobs = []
        for prompt in prompts:
            ids = self.tokenizer.encode(prompt)
            jobs.append((self.engine.submit(ids, params), (ids, prompt, params, None, None)))
        return jobs

    # ---- public API ------------------------------------------------------------------

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        """Sample ``n`` replies to a conversation; one Experience per reply."""
        fut, ctx = self._submit_chat(messages, tools, kwargs)
        return self._experiences(ctx[0], ctx[1], fut.result(), *ctx[2:])

    async def chat_async(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        fut, ctx = self._submit_chat(messages, tools, kwargs)
        completions = await asyncio.wrap_future(fut)
        return self._experiences(ctx[0], ctx[1], completions, *ctx[2:])

    def generate(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        """Complete raw prompts (no chat template); ``n`` Experiences per prompt, in order."""
        out: list[Experience] = []
        for fut, ctx in self._submit_generate(prompts, kwargs):
            out.extend(self._experiences(ctx[0], ctx[1], fut.result(), *ctx[2:]))
        return out

    async def generate_async(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        jobs = self._submit_generate(prompts, kwargs)
        results = await asyncio.gather(*(asyncio.wrap_future(f) for f, _ in jobs))
        out: list[Experience] = []
        for (_, ctx), completions in zip(jobs, results, strict=True):
            out.extend(self._experiences(ctx[0], ctx[1], completions, *ctx[2:]))
        return out

    def logprobs(self, tokens: Sequence[int] | torch.Tensor) -> torch.Tensor:
        """log p(tokens[i] | tokens[:i]) for i >= 1 under the current weights."""
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        return torch.tensor(self.engine.score(ids), dtype=torch.float32)

    async def logprobs_async(self, tokens: Sequence[int] | torch.Tensor) -> torch.Tensor:
        ids = tokens.tolist() if isinstance(tokens, torch.Tensor) else list(tokens)
        return torch.tensor(await self.engine.score_async(ids), dtype=torch.float32)

    def extract_experience_from_history(self, clear_history: bool = True) -> list[Experience]:
        """Experiences of every call since the last extraction (needs ``enable_history``)."""
        if not self.enable_history:
            raise RuntimeError("history is off; create the ModelWrapper with enable_history=True")
        with self._history_lock:
            out = list(self.history)
            if clear_history:
                self.history.clear()
        return out
