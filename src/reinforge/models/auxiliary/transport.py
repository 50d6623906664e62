"""httpx transports behind auxiliary model clients: sampling defaults, a concurrency
limit, and round-robin over a model's server URLs.

They wrap the transport that actually answers (an in-process ``OpenAIService`` or
HTTP to a server), so every request a workflow or operator sends through the
official ``openai`` SDK gets the auxiliary model's defaults and limits, whatever
code sent it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable
from typing import Any

import httpx

_SAMPLING_PATHS = ("/chat/completions", "/completions")


def with_defaults(request: httpx.Request, defaults: dict[str, Any]) -> httpx.Request:
    """The request with each default filled in where the body does not set it."""
    if request.method != "POST" or not request.url.path.endswith(_SAMPLING_PATHS):
        return request
    try:
        body = json.loads(request.content or b"{}")
    except ValueError:
        return request
    if not isinstance(body, dict):
        return request
    changed = False
    for key, value in defaults.items():
        if key == "max_tokens" and body.get("max_completion_tokens") is not None:
            continue
        if body.get(key) is None:
            body[key] = value
            changed = True
    if not changed:
        return request
    headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
    return httpx.Request(
        request.method,
        request.url,
        headers=headers,
        content=json.dumps(body).encode(),
        extensions=request.extensions,
    )


class RoundRobin:
    """Picks the next of a model's server URLs for each request (URLs may change)."""

    def __init__(self, urls: Callable[[], list[str]]) -> None:
        self._urls = urls
        self._counter = itertools.count()

    def route(self, request: httpx.Request) -> httpx.Request:
        urls = self._urls()
        if not urls:
            raise httpx.ConnectError("no healthy server for this auxiliary model", request=request)
        target = httpx.URL(urls[next(self._counter) % len(urls)])
        request.url = request.url.copy_with(
            scheme=target.scheme, host=target.host, port=target.port
        )
        return request


def _addressed(
    request: httpx.Request, defaults: dict[str, Any], router: RoundRobin | None
) -> httpx.Request:
    """What both transports send: the request with the model's defaults, to the next of
    its servers when it has a router."""
    request = with_defaults(request, defaults)
    return request if router is None else router.route(request)


class LimitedTransport(httpx.BaseTransport):
    """Defaults, then at most ``limit`` requests at once (shared by every sync client)."""

    def __init__(
        self,
        inner: httpx.BaseTransport,
        defaults: dict[str, Any],
        limit: threading.BoundedSemaphore,
        router: RoundRobin | None = None,
    ) -> None:
        self.inner, self.defaults, self.limit, self.router = inner, defaults, limit, router

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request = _addressed(request, self.defaults, self.router)
        with self.limit:
            return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class AsyncLimitedTransport(httpx.AsyncBaseTransport):
    """The async twin; its limit is an asyncio semaphore per event loop."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        defaults: dict[str, Any],
        limit: int,
        router: RoundRobin | None = None,
    ) -> None:
        self.inner, self.defaults, self.router = inner, defaults, router
        self._limit = limit
        self._semaphores: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = self._semaphores[loop] = asyncio.Semaphore(self._limit)
        return sem

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request = _addressed(request, self.defaults, self.router)
        async with self._semaphore():
            return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()
