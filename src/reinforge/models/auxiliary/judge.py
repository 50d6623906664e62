"""Asking a model for a verdict: structured replies, bounded retries, a cache, timings.

A ``Judge`` wraps an OpenAI-compatible client (an auxiliary model's, or any other).
``ask`` sends chat messages, parses the reply with a parser that raises
``JudgeReplyError`` when the reply is unusable, and retries up to the model's
``max_judge_attempts``. What comes back is always a ``Verdict``, never an exception:
a judge that times out, is unreachable or talks nonsense yields ``ok=False`` with
the reason, so the caller can mask what depended on it and the run goes on.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import openai
from pydantic import BaseModel, ValidationError

from reinforge.models.auxiliary.cache import request_key

#: temperature of a retry when the first try was greedy: a greedy judge asked again
#: at temperature 0 would repeat the same unusable reply
RETRY_TEMPERATURE = 0.7


class JudgeReplyError(ValueError):
    """A judge's reply cannot be used; ``kind`` says why ('unparseable', 'out_of_range')."""

    def __init__(self, message: str, kind: str = "unparseable") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class Verdict:
    """The outcome of one judge request (after retries)."""

    value: Any = None
    ok: bool = False
    reason: str | None = None  # 'timeout', 'unreachable', 'unparseable', 'out_of_range', 'error'
    error: str | None = None
    attempts: int = 0
    latency: float = 0.0
    cached: bool = False
    reply: str | None = None

    def metrics(self) -> dict[str, float]:
        """Per-experience numbers; the explorer reports them per step."""
        return {
            "judge_success": float(self.ok),
            "judge_latency": self.latency,
            "judge_attempts": float(self.attempts),
            "judge_cached": float(self.cached),
        }


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in a reply: a fenced ```json block, the whole reply, or else the
    last object or list that parses. Raises ``JudgeReplyError`` when there is none."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        try:
            return json.loads(candidate.strip())
        except ValueError:
            pass
    decoder = json.JSONDecoder()
    found: Any = None
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                found, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
    if found is None:
        raise JudgeReplyError(f"no JSON object or list in the reply: {text[:120]!r}")
    return found


def json_reply(schema: type[BaseModel]) -> Callable[[str], BaseModel]:
    """A parser: the reply's JSON, validated against ``schema``."""

    def parse(text: str) -> BaseModel:
        data = extract_json(text)
        try:
            return schema.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "reply"
            kind = (
                "out_of_range"
                if first["type"].endswith(("_than", "_than_equal"))
                else "unparseable"
            )
            raise JudgeReplyError(f"{where}: {first['msg']}", kind) from None

    return parse


def response_format(schema: type[BaseModel]) -> dict[str, Any]:
    """``response_format`` for servers with guided decoding (vLLM, OpenAI)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
    }


def _failure(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, JudgeReplyError):
        return exc.kind, str(exc)
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return "timeout", str(exc) or "the judge did not answer in time"
    if isinstance(exc, openai.APIConnectionError):
        return "unreachable", str(exc)
    if isinstance(exc, openai.APIStatusError):
        kind = "timeout" if exc.status_code == 504 else "error"
        return kind, f"HTTP {exc.status_code}: {exc.message}"
    return "error", f"{type(exc).__name__}: {exc}"


class Judge:
    """Structured questions to one model. ``client`` is an auxiliary model's client
    (its config gives attempts, caching and structured output) or any OpenAI client."""

    def __init__(
        self,
        client: Any,
        *,
        attempts: int | None = None,
        cache: bool | None = None,
        schema_mode: str | None = None,
    ) -> None:
        aux = getattr(client, "auxiliary", None)
        config = getattr(aux, "config", None)
        self.name = getattr(aux, "name", None) or getattr(client, "model_path", "judge")
        self.model = getattr(client, "model_path", None) or self.name
        if aux is not None:
            self.client, self.async_client = aux.client, aux.async_client
        elif inspect.iscoroutinefunction(client.chat.completions.create):
            self.client, self.async_client = None, client
        else:
            self.client, self.async_client = client, None
        self.attempts = attempts or (config.max_judge_attempts if config else 3)
        use_cache = cache if cache is not None else bool(config and config.cache)
        self.cache = aux.cache if (use_cache and aux is not None) else None
        self.schema_mode = schema_mode or (config.structured_output if config else "prompt")

    def _request(self, messages: list[dict], schema: type[BaseModel] | None, kwargs: dict) -> dict:
        body = {"model": self.model, "messages": messages, **kwargs}
        if schema is not None and self.schema_mode == "json_schema":
            body["response_format"] = response_format(schema)
        return body

    def _cached(self, body: dict) -> tuple[str | None, Verdict | None]:
        if self.cache is None:
            return None, None
        key = request_key(self.name, body)
        hit = self.cache.get(key)
        if hit is None:
            return key, None
        value, reply = hit
        return key, Verdict(value=value, ok=True, attempts=0, cached=True, reply=reply)

    def _attempts(self, body: dict, verdict: Verdict) -> Iterator[dict]:
        """The retry loop of ``ask`` and ``ask_async``, which only send: the request of
        each attempt (``body``, then ``body`` at a retry temperature after a failure)
        until ``verdict`` succeeds or the judge's attempts run out."""
        request = body
        for attempt in range(1, self.attempts + 1):
            verdict.attempts = attempt
            yield request
            if verdict.ok:
                return
            if not body.get("temperature"):
                request = {**body, "temperature": RETRY_TEMPERATURE}

    @staticmethod
    def _accept(verdict: Verdict, completion: Any, parse: Callable[[str], Any]) -> None:
        """Record a reply; ``parse`` raising leaves the verdict failed (the caller retries)."""
        verdict.reply = completion.choices[0].message.content or ""
        verdict.value = parse(verdict.reply)
        verdict.ok, verdict.reason, verdict.error = True, None, None

    def _finish(self, verdict: Verdict, key: str | None, start: float) -> Verdict:
        """Time the verdict and cache it if it succeeded."""
        verdict.latency = time.monotonic() - start
        if verdict.ok and key is not None:
            self.cache.put(key, (verdict.value, verdict.reply))
        return verdict

    def ask(
        self,
        messages: list[dict[str, Any]],
        parse: Callable[[str], Any],
        *,
        schema: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> Verdict:
        """Send ``messages``; ``parse`` the reply; retry; never raise."""
        body = self._request(messages, schema, kwargs)
        key, hit = self._cached(body)
        if hit is not None:
            return hit
        verdict, start = Verdict(), time.monotonic()
        for request in self._attempts(body, verdict):
            try:
                self._accept(verdict, self.client.chat.completions.create(**request), parse)
            except Exception as exc:  # every failure is a verdict, not a crash
                verdict.reason, verdict.error = _failure(exc)
        return self._finish(verdict, key, start)

    async def ask_async(
        self,
        messages: list[dict[str, Any]],
        parse: Callable[[str], Any],
        *,
        schema: type[BaseModel] | None = None,
        **kwargs: Any,
    ) -> Verdict:
        """``ask`` on the event loop (needs an async client: an auxiliary model's)."""
        if self.async_client is None:
            return await asyncio.to_thread(self.ask, messages, parse, schema=schema, **kwargs)
        body = self._request(messages, schema, kwargs)
        key, hit = self._cached(body)
        if hit is not None:
            return hit
        verdict, start = Verdict(), time.monotonic()
        for request in self._attempts(body, verdict):
            try:
                completion = await self.async_client.chat.completions.create(**request)
                self._accept(verdict, completion, parse)
            except Exception as exc:  # every failure is a verdict, not a crash
                verdict.reason, verdict.error = _failure(exc)
        return self._finish(verdict, key, start)
