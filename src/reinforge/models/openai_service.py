"""The OpenAI-compatible API over a ModelWrapper, independent of any transport.

``OpenAIService`` turns request bodies of ``/v1/chat/completions``,
``/v1/completions`` and ``/v1/models`` into response bodies (or server-sent-event
chunks when ``stream`` is set). Two transports share it: the in-process httpx
transport behind ``ModelWrapper.get_openai_client()`` and the HTTP server of
``reinforge serve``. Every call goes through the wrapper, so with history on it is
recorded exactly like ``ModelWrapper.chat``.

Like vLLM, responses carry the token ids: ``prompt_token_ids`` at the top level and
``token_ids`` in each choice. Streaming sends the finished completion as a
sequence of chunks (one per sampled token): the engines sample whole completions,
so the first chunk arrives when the last token is known.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reinforge.models.engine import check_token_ids

if TYPE_CHECKING:
    from reinforge.core import Experience
    from reinforge.models.model_wrapper import ModelWrapper


class APIError(Exception):
    """An error the API reports to the client (OpenAI's error body, HTTP status)."""

    def __init__(
        self, message: str, *, status: int = 400, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        kind = "invalid_request_error" if self.status < 500 else "internal_error"
        return {
            "error": {"message": str(self), "type": kind, "param": self.param, "code": self.code}
        }


@dataclass
class ServiceResponse:
    status: int = 200
    body: dict[str, Any] | None = None
    #: server-sent events (already JSON-encodable dicts); ``[DONE]`` is added on the wire
    events: list[dict[str, Any]] | None = None

    def sse_bytes(self) -> bytes:
        lines = [f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in self.events or ()]
        lines.append("data: [DONE]\n\n")
        return "".join(lines).encode()


@dataclass
class _Call:
    """A parsed request: what to send to the wrapper and how to shape the answer."""

    kwargs: dict[str, Any]
    logprobs: bool = False
    top_logprobs: int = 0
    stream: bool = False
    include_usage: bool = False
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    prompts: list[Any] = field(default_factory=list)


#: most samples one request may ask for (a huge ``n`` would stall a shared engine)
MAX_N = 128
#: most samples (prompts x n) one completions request may ask for
MAX_SAMPLES = 1024
#: integer fields (``seed``, ``top_k``...) must fit a signed 64-bit int, as engines hold them
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

_UNSUPPORTED_NONDEFAULT = {
    "frequency_penalty": 0,
    "presence_penalty": 0,
    "logit_bias": None,
    "best_of": None,
    "echo": False,
    "suffix": None,
    "response_format": None,
}


def _number(body: dict[str, Any], key: str, kind: type, default: Any = None) -> Any:
    value = body.get(key, default)
    if value is None:
        return default
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise APIError(f"'{key}' must be a {kind.__name__}, got {value!r}", param=key)
    if kind is int and not _INT64_MIN <= value <= _INT64_MAX:
        raise APIError(f"'{key}' must fit a 64-bit integer, got {value}", param=key)
    return value


def _sampling(body: dict[str, Any], *, chat: bool, max_model_len: int | None) -> _Call:
    for key, default in _UNSUPPORTED_NONDEFAULT.items():
        value = body.get(key)
        if value not in (None, default) and not (
            key == "response_format" and value == {"type": "text"}
        ):
            raise APIError(f"'{key}' is not supported by this server", param=key)
    limit_key = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    kwargs: dict[str, Any] = {
        "n": _number(body, "n", int, 1),
        "temperature": _number(body, "temperature", float, 1.0),
        "top_p": _number(body, "top_p", float, 1.0),
        "top_k": _number(body, "top_k", int, -1),
        "seed": _number(body, "seed", int),
        "max_tokens": _number(body, limit_key, int),
    }
    if not 1 <= kwargs["n"] <= MAX_N:
        raise APIError(f"'n' must be between 1 and {MAX_N}, got {kwargs['n']}", param="n")
    limit = kwargs["max_tokens"]
    if limit is not None and limit < 1:
        raise APIError(f"'{limit_key}' must be at least 1, got {limit}", param=limit_key)
    if limit is not None and max_model_len is not None and limit > max_model_len:
        # more tokens than the context holds can never be sampled: a mistake, not a wish
        raise APIError(
            f"'{limit_key}' must be at most the model's context length {max_model_len}, "
            f"got {limit}",
            param=limit_key,
        )
    stop = body.get("stop")
    if stop is not None:
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
            raise APIError("'stop' must be a string or a list of strings", param="stop")
        kwargs["stop"] = stop
    if chat:
        logprobs = bool(body.get("logprobs") or False)
        top = _number(body, "top_logprobs", int, 0)
    else:
        raw = body.get("logprobs")
        logprobs = raw is not None and raw is not False
        top = int(raw) if isinstance(raw, int) and not isinstance(raw, bool) else 0
    if top:
        kwargs["top_logprobs"] = top
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise APIError("'stream_options' must be an object", param="stream_options")
    return _Call(
        kwargs=kwargs,
        logprobs=logprobs,
        top_logprobs=top,
        stream=bool(body.get("stream") or False),
        include_usage=bool(options.get("include_usage")),
    )


def _validate_tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise APIError("'tools' must be a list", param="tools")
    for i, tool in enumerate(tools):
        fn = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise APIError(
                f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}",
                param=f"tools[{i}]",
            )
    return tools or None


class OpenAIService:
    """OpenAI-style request bodies in, response bodies out, through one ModelWrapper."""

    def __init__(self, model: ModelWrapper, served_name: str | None = None) -> None:
        self.model = model
        self.served_name = served_name or model.model_name

    # ---- parsing ---------------------------------------------------------------------

    def _max_model_len(self) -> int | None:
        limit = getattr(self.model.engine, "max_model_len", None)
        return limit if isinstance(limit, int) else None

    def _vocab_size(self) -> int | None:
        """How many token ids the engine accepts (its own count, else the tokenizer's)."""
        for owner in (self.model.engine, self.model.tokenizer):
            size = getattr(owner, "vocab_size", None)
            if isinstance(size, int) and size > 0:
                return size
        return None

    def _chat_call(self, body: Any) -> _Call:
        from reinforge.models.model_wrapper import validate_messages

        if not isinstance(body, dict):
            raise APIError("the request body must be a JSON object")
        call = _sampling(body, chat=True, max_model_len=self._max_model_len())
        try:
            call.messages = validate_messages(body.get("messages"))
        except ValueError as exc:
            raise APIError(str(exc), param="messages") from None
        call.tools = _validate_tools(body.get("tools"))
        choice = body.get("tool_choice", "auto")
        if choice == "none":
            call.tools = None
        elif choice not in ("auto", None) and call.tools:
            raise APIError(
                "only tool_choice 'auto' and 'none' are supported: the model decides "
                "whether to call a tool",
                param="tool_choice",
            )
        return call

    def _completion_call(self, body: Any) -> _Call:
        if not isinstance(body, dict):
            raise APIError("the request body must be a JSON object")
        call = _sampling(body, chat=False, max_model_len=self._max_model_len())
        prompt = body.get("prompt")
        if isinstance(prompt, str) or (
            isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)
        ):
            prompts = [prompt]
        elif isinstance(prompt, list) and prompt:
            prompts = prompt
        else:
            raise APIError(
                "'prompt' must be a string, a list of strings or token ids", param="prompt"
            )
        vocab_size = self._vocab_size()
        for p in prompts:
            if not (
                isinstance(p, str) or (isinstance(p, list) and all(isinstance(t, int) for t in p))
            ):
                raise APIError(
                    "each prompt must be a string or a list of token ids", param="prompt"
                )
            if isinstance(p, list):
                # before the tokenizer decodes them: a fast tokenizer overflows on ids
                # outside its integer type (-1, 2**40), which is no server error
                try:
                    check_token_ids(p, vocab_size)
                except ValueError as exc:
                    raise APIError(f"'prompt': {exc}", param="prompt") from None
        n = call.kwargs.get("n", 1)
        if len(prompts) * n > MAX_SAMPLES:
            raise APIError(
                f"{len(prompts)} prompts x n={n} asks for more than {MAX_SAMPLES} samples "
                "in one request; split it",
                param="prompt",
            )
        call.prompts = prompts
        return call

    # ---- shaping ---------------------------------------------------------------------

    def _token_text(self, token_id: int) -> str:
        return self.model.tokenizer.decode([token_id], skip_special_tokens=False)

    def _chat_logprobs(self, exp: Experience, call: _Call) -> dict[str, Any] | None:
        if not call.logprobs:
            return None
        ids = exp.response_tokens.tolist()
        lps = exp.logprobs.tolist()
        tops = exp.info.get("top_logprobs") or [[] for _ in ids]
        content = []
        for tid, lp, top in zip(ids, lps, tops, strict=True):
            text = self._token_text(tid)
            content.append(
                {
                    "token": text,
                    "logprob": lp,
                    "bytes": list(text.encode()),
                    "top_logprobs": [
                        {
                            "token": (t := self._token_text(a)),
                            "logprob": b,
                            "bytes": list(t.encode()),
                        }
                        for a, b in top[: call.top_logprobs]
                    ],
                }
            )
        return {"content": content}

    def _usage(self, exps: list[Experience], n: int) -> dict[str, int]:
        """Token counts; the ``n`` samples of a prompt count its tokens once."""
        prompt = sum(e.prompt_length for e in exps[::n])
        completion = sum(e.response_length for e in exps)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _chat_body(self, exps: list[Experience], call: _Call) -> dict[str, Any]:
        choices = []
        for i, exp in enumerate(exps):
            message: dict[str, Any] = {"role": "assistant", "content": exp.response_text}
            finish = exp.info.get("finish_reason", "stop")
            calls = exp.info.get("tool_calls")
            if calls:
                message = {
                    "role": "assistant",
                    "content": exp.messages[-1].get("content"),
                    "tool_calls": calls,
                }
                finish = "tool_calls"
            choice = {
                "index": i,
                "message": message,
                "logprobs": self._chat_logprobs(exp, call),
                "finish_reason": finish,
                "token_ids": exp.response_tokens.tolist(),
            }
            exp.info.pop("top_logprobs", None)  # answered; not worth storing
            choices.append(choice)
        return {
            "id": "chatcmpl-" + uuid.uuid4().hex,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_name,
            "choices": choices,
            "usage": self._usage(exps, call.kwargs["n"]),
            "prompt_token_ids": exps[0].prompt_tokens.tolist() if exps else [],
        }

    def _completion_body(self, exps: list[Experience], call: _Call) -> dict[str, Any]:
        choices = []
        for i, exp in enumerate(exps):
            logprobs = None
            if call.logprobs:
                ids = exp.response_tokens.tolist()
                tokens = [self._token_text(t) for t in ids]
                offsets, pos = [], 0
                for t in tokens:
                    offsets.append(pos)
                    pos += len(t)
                tops = exp.info.get("top_logprobs")
                logprobs = {
                    "tokens": tokens,
                    "token_logprobs": exp.logprobs.tolist(),
                    "top_logprobs": None
                    if tops is None
                    else [
                        {self._token_text(a): b for a, b in row[: call.top_logprobs]}
                        for row in tops
                    ],
                    "text_offset": offsets,
                }
            exp.info.pop("top_logprobs", None)
            choices.append(
                {
                    "index": i,
                    "text": exp.response_text,
                    "logprobs": logprobs,
                    "finish_reason": exp.info.get("finish_reason", "stop"),
                    "token_ids": exp.response_tokens.tolist(),
                    "prompt_token_ids": exp.prompt_tokens.tolist(),
                }
            )
        return {
            "id": "cmpl-" + uuid.uuid4().hex,
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.served_name,
            "choices": choices,
            "usage": self._usage(exps, call.kwargs["n"]),
        }

    def _chat_events(self, body: dict[str, Any], call: _Call) -> list[dict[str, Any]]:
        """The chunks a streaming client receives for a finished chat completion."""
        base = {k: body[k] for k in ("id", "created", "model")}
        base["object"] = "chat.completion.chunk"
        events = []
        for choice in body["choices"]:
            idx, message = choice["index"], choice["message"]
            events.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": idx,
                            "delta": {"role": "assistant", "content": ""},
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    ],
                }
            )
            pieces = self._pieces(choice["token_ids"], message.get("content") or "")
            lp = (choice.get("logprobs") or {}).get("content")
            for k, piece in enumerate(pieces):
                chunk_lp = {"content": [lp[k]]} if lp and k < len(lp) else None
                events.append(
                    {
                        **base,
                        "choices": [
                            {
                                "index": idx,
                                "delta": {"content": piece},
                                "logprobs": chunk_lp,
                                "finish_reason": None,
                            }
                        ],
                    }
                )
            if message.get("tool_calls"):
                deltas = [{"index": j, **call_} for j, call_ in enumerate(message["tool_calls"])]
                events.append(
                    {
                        **base,
                        "choices": [
                            {
                                "index": idx,
                                "delta": {"tool_calls": deltas},
                                "logprobs": None,
                                "finish_reason": None,
                            }
                        ],
                    }
                )
            events.append(
                {
                    **base,
                    "choices": [
                        {
                            "index": idx,
                            "delta": {},
                            "logprobs": None,
                            "finish_reason": choice["finish_reason"],
                        }
                    ],
                }
            )
        if call.include_usage:
            events.append({**base, "choices": [], "usage": body["usage"]})
        return events

    def _pieces(self, token_ids: list[int], content: str) -> list[str]:
        """``content`` cut at token boundaries (one piece per sampled token where possible)."""
        pieces: list[str] = []
        done = 0
        decode = self.model.tokenizer.decode
        for k in range(1, len(token_ids) + 1):
            if done >= len(content):
                break
            text = decode(token_ids[:k])
            end = min(len(text), len(content))
            if end > done and content.startswith(text[done:end], done):
                pieces.append(content[done:end])
                done = end
        if done < len(content):
            pieces.append(content[done:])
        return pieces

    def _completion_events(self, body: dict[str, Any], call: _Call) -> list[dict[str, Any]]:
        events = []
        for choice in body["choices"]:
            events.append(
                {
                    **{k: body[k] for k in ("id", "created", "model", "object")},
                    "choices": [{**choice}],
                }
            )
        if call.include_usage:
            events.append(
                {k: body[k] for k in ("id", "created", "model", "object")}
                | {"choices": [], "usage": body["usage"]}
            )
        return events

    # ---- endpoints -------------------------------------------------------------------

    def _sample_error(self, exc: Exception) -> APIError:
        from reinforge.models.model_wrapper import ContextLengthError

        if isinstance(exc, ContextLengthError):
            return APIError(str(exc), param="messages", code="context_length_exceeded")
        if isinstance(exc, ValueError | TypeError):
            return APIError(str(exc))
        if isinstance(exc, TimeoutError):
            return APIError(str(exc), status=504, code="timeout")
        return APIError(f"{type(exc).__name__}: {exc}", status=500)

    def _finish_chat(self, exps: list[Experience], call: _Call) -> ServiceResponse:
        body = self._chat_body(exps, call)
        if call.stream:
            return ServiceResponse(events=self._chat_events(body, call))
        return ServiceResponse(body=body)

    def _finish_completion(self, exps: list[Experience], call: _Call) -> ServiceResponse:
        body = self._completion_body(exps, call)
        if call.stream:
            return ServiceResponse(events=self._completion_events(body, call))
        return ServiceResponse(body=body)

    def chat(self, body: Any) -> ServiceResponse:
        call = self._chat_call(body)
        try:
            exps = self.model.chat(call.messages, call.tools, **call.kwargs)
        except Exception as exc:
            raise self._sample_error(exc) from exc
        return self._finish_chat(exps, call)

    async def chat_async(self, body: Any) -> ServiceResponse:
        call = self._chat_call(body)
        try:
            exps = await self.model.chat_async(call.messages, call.tools, **call.kwargs)
        except Exception as exc:
            raise self._sample_error(exc) from exc
        return self._finish_chat(exps, call)

    def completion(self, body: Any) -> ServiceResponse:
        call = self._completion_call(body)
        try:
            exps = self.model.generate(call.prompts, **call.kwargs)
        except Exception as exc:
            raise self._sample_error(exc) from exc
        return self._finish_completion(exps, call)

    async def completion_async(self, body: Any) -> ServiceResponse:
        call = self._completion_call(body)
        try:
            exps = await self.model.generate_async(call.prompts, **call.kwargs)
        except Exception as exc:
            raise self._sample_error(exc) from exc
        return self._finish_completion(exps, call)

    def models(self) -> ServiceResponse:
        entry = {"id": self.served_name, "object": "model", "created": 0, "owned_by": "reinforge"}
        max_len = getattr(self.model.engine, "max_model_len", None)
        if max_len is not None:
            entry["max_model_len"] = max_len
        return ServiceResponse(body={"object": "list", "data": [entry]})

    # ---- routing (shared by the transports) ------------------------------------------

    def route(self, method: str, path: str) -> str | None:
        """Which endpoint a request goes to: 'chat', 'completion', 'models', 'health'."""
        path = path.rstrip("/")
        table = {
            ("POST", "/v1/chat/completions"): "chat",
            ("POST", "/v1/completions"): "completion",
            ("GET", "/v1/models"): "models",
            ("GET", "/health"): "health",
        }
        return table.get((method.upper(), path))

    def handle(self, endpoint: str, body: Any) -> ServiceResponse:
        """Serve one request synchronously (errors become OpenAI error bodies)."""
        try:
            if endpoint == "chat":
                return self.chat(body)
            if endpoint == "completion":
                return self.completion(body)
            if endpoint == "models":
                return self.models()
            return ServiceResponse(body={"status": "ok"})
        except APIError as exc:
            return ServiceResponse(status=exc.status, body=exc.body())

    async def handle_async(self, endpoint: str, body: Any) -> ServiceResponse:
        try:
            if endpoint == "chat":
                return await self.chat_async(body)
            if endpoint == "completion":
                return await self.completion_async(body)
            if endpoint == "models":
                return self.models()
            return ServiceResponse(body={"status": "ok"})
        except APIError as exc:
            return ServiceResponse(status=exc.status, body=exc.body())
