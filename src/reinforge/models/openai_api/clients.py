"""Real ``openai.OpenAI`` / ``AsyncOpenAI`` clients whose requests never leave the process.

The clients are the official SDK objects; only their httpx transport is replaced by
one that hands each request to an ``OpenAIService``. Agent code written against the
OpenAI SDK therefore runs unchanged against the policy being trained, with no port,
no server thread and no serialization beyond the SDK's own JSON.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx

from reinforge.models.openai_api.service import OpenAIService, ServiceResponse

if TYPE_CHECKING:
    import openai

BASE_URL = "http://reinforge.local/v1"


def _body(request: httpx.Request) -> Any:
    raw = request.content
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # the service answers "must be a JSON object"


def _response(result: ServiceResponse, request: httpx.Request) -> httpx.Response:
    if result.events is not None:
        return httpx.Response(
            result.status,
            headers={"content-type": "text/event-stream"},
            content=result.sse_bytes(),
            request=request,
        )
    return httpx.Response(result.status, json=result.body, request=request)


def _not_found(request: httpx.Request) -> httpx.Response:
    body = {
        "error": {"message": f"no route {request.method} {request.url.path}", "type": "not_found"}
    }
    return httpx.Response(404, json=body, request=request)


class InProcessTransport(httpx.BaseTransport):
    """Serves OpenAI API requests from the calling thread."""

    def __init__(self, service: OpenAIService) -> None:
        self.service = service

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        endpoint = self.service.route(request.method, request.url.path)
        if endpoint is None:
            return _not_found(request)
        return _response(self.service.handle(endpoint, _body(request)), request)


class AsyncInProcessTransport(httpx.AsyncBaseTransport):
    """Serves OpenAI API requests on the calling event loop."""

    def __init__(self, service: OpenAIService) -> None:
        self.service = service

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        endpoint = self.service.route(request.method, request.url.path)
        if endpoint is None:
            return _not_found(request)
        await request.aread()
        return _response(await self.service.handle_async(endpoint, _body(request)), request)


def openai_client(service: OpenAIService, **kwargs: Any) -> openai.OpenAI:
    import openai

    client = openai.OpenAI(
        api_key="in-process",
        base_url=BASE_URL,
        http_client=httpx.Client(transport=InProcessTransport(service), base_url=BASE_URL),
        max_retries=0,
        **kwargs,
    )
    client.model_path = service.served_name  # Trinity's spelling: client.model_path
    client.model_wrapper = service.model  # the ModelWrapper that answers it
    return client


def async_openai_client(service: OpenAIService, **kwargs: Any) -> openai.AsyncOpenAI:
    import openai

    client = openai.AsyncOpenAI(
        api_key="in-process",
        base_url=BASE_URL,
        http_client=httpx.AsyncClient(
            transport=AsyncInProcessTransport(service), base_url=BASE_URL
        ),
        max_retries=0,
        **kwargs,
    )
    client.model_path = service.served_name
    client.model_wrapper = service.model
    return client
