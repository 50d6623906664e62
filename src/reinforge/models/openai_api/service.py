"""The OpenAI-compatible API over a ModelWrapper, independent of any transport.

``OpenAIService`` turns request bodies of ``/v1/chat/completions``,
``/v1/completions`` and ``/v1/models`` into response bodies (or server-sent-event
chunks when ``stream`` is set). Two transports share it: the in-process httpx
transport behind ``ModelWrapper.get_openai_client()`` and the HTTP server of
``reinforge serve``. Every call goes through the wrapper, so with history on it is
recorded exactly like ``ModelWrapper.chat``.

Requests are parsed by ``request_parsing`` and answers shaped by
``response_shaping``; this module holds the endpoints and the routing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reinforge.models.openai_api.request_parsing import (
    APIError,
    ParsedRequest,
    parse_chat_request,
    parse_completion_request,
)
from reinforge.models.openai_api.response_shaping import ResponseShaper
from reinforge.models.vision.images import MediaInputError
from reinforge.models.wrapper.chat_prompts import ContextLengthError

if TYPE_CHECKING:
    from reinforge.core import Experience
    from reinforge.models.model_wrapper import ModelWrapper

__all__ = ["APIError", "OpenAIService", "ServiceResponse"]


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


class OpenAIService:
    """OpenAI-style request bodies in, response bodies out, through one ModelWrapper."""

    def __init__(self, model: ModelWrapper, served_name: str | None = None) -> None:
        self.model = model
        self.served_name = served_name or model.model_name
        self.shaper = ResponseShaper(model)

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

    # ---- endpoints -------------------------------------------------------------------

    def _sample_error(self, exc: Exception) -> APIError:
        if isinstance(exc, ContextLengthError):
            return APIError(str(exc), param="messages", code="context_length_exceeded")
        if isinstance(exc, MediaInputError):  # a remote, missing or unreadable image, or a
            # text-only model asked about one
            return APIError(str(exc), param="messages", code="invalid_image")
        if isinstance(exc, ValueError | TypeError):
            return APIError(str(exc))
        if isinstance(exc, TimeoutError):
            return APIError(str(exc), status=504, code="timeout")
        return APIError(f"{type(exc).__name__}: {exc}", status=500)

    def _finish_chat(self, exps: list[Experience], call: ParsedRequest) -> ServiceResponse:
        body = self.shaper.chat_body(exps, call, self.served_name)
        if call.stream:
            return ServiceResponse(events=self.shaper.chat_events(body, call))
        return ServiceResponse(body=body)

    def _finish_completion(self, exps: list[Experience], call: ParsedRequest) -> ServiceResponse:
        body = self.shaper.completion_body(exps, call, self.served_name)
        if call.stream:
            return ServiceResponse(events=self.shaper.completion_events(body, call))
        return ServiceResponse(body=body)

    def chat(self, body: Any) -> ServiceResponse:
        call = parse_chat_request(body, self._max_model_len())
        try:
            exps = self.model.chat(call.messages, call.tools, **call.kwargs)
        except Exception as exc:
            raise self._sample_error(exc) from exc
        return self._finish_chat(exps, call)

    async def chat_async(self, body: Any) -> ServiceResponse:
        call = parse_chat_request(body, self._max_model_len())
        try:
            exps = await self.model.chat_async(call.messages, call.tools, **call.kwargs)
        except Exception as exc:
            raise self._sample_error(exc) from exc
        return self._finish_chat(exps, call)

    def completion(self, body: Any) -> ServiceResponse:
        call = parse_completion_request(body, self._max_model_len(), self._vocab_size())
        try:
            exps = self.model.generate(call.prompts, **call.kwargs)
        except Exception as exc:
            raise self._sample_error(exc) from exc
        return self._finish_completion(exps, call)

    async def completion_async(self, body: Any) -> ServiceResponse:
        call = parse_completion_request(body, self._max_model_len(), self._vocab_size())
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
