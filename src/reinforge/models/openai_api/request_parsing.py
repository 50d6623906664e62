"""OpenAI request bodies, checked and parsed into what the wrapper is asked.

A request the API cannot serve is refused with an ``APIError`` (OpenAI's error
body, HTTP 400) naming the parameter, never passed on to fail inside the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reinforge.models.engine import check_token_ids
from reinforge.models.wrapper.messages import validate_messages


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
class ParsedRequest:
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


def _sampling_request(
    body: dict[str, Any], *, chat: bool, max_model_len: int | None
) -> ParsedRequest:
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
    return ParsedRequest(
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


def parse_chat_request(body: Any, max_model_len: int | None) -> ParsedRequest:
    """A ``/v1/chat/completions`` body, checked; APIError names what is wrong."""
    if not isinstance(body, dict):
        raise APIError("the request body must be a JSON object")
    call = _sampling_request(body, chat=True, max_model_len=max_model_len)
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


def parse_completion_request(
    body: Any, max_model_len: int | None, vocab_size: int | None
) -> ParsedRequest:
    """A ``/v1/completions`` body, checked; ``vocab_size`` bounds token-id prompts."""
    if not isinstance(body, dict):
        raise APIError("the request body must be a JSON object")
    call = _sampling_request(body, chat=False, max_model_len=max_model_len)
    prompt = body.get("prompt")
    if isinstance(prompt, str) or (
        isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt)
    ):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt:
        prompts = prompt
    else:
        raise APIError("'prompt' must be a string, a list of strings or token ids", param="prompt")
    for p in prompts:
        if not (isinstance(p, str) or (isinstance(p, list) and all(isinstance(t, int) for t in p))):
            raise APIError("each prompt must be a string or a list of token ids", param="prompt")
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
