"""HTTP to one or more OpenAI-compatible servers from a private event-loop thread.

Engines are called from worker threads and from event loops alike and hand back
``concurrent.futures.Future`` objects. A single background loop owns the httpx
client, so every request shares one connection pool, and cancelling a returned
future cancels the request in flight: the connection is closed, which vLLM takes
as an abort, so an abandoned rollout stops costing decode steps.

Requests go to the healthy endpoint with the fewest requests in flight. Connection
failures, 5xx and 429 answers are retried with exponential backoff (on another
endpoint where there is one); other 4xx answers are the caller's error and raise at
once with the server's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class ServerRequestError(ValueError):
    """The server refused the request (a 4xx other than 408/429)."""


class ServerUnavailableError(ConnectionError):
    """No endpoint answered within the retries."""


@dataclass
class Endpoint:
    """One server: its base URL (ending in ``/v1``'s parent), whether to use it, its load."""

    url: str
    healthy: bool = True
    in_flight: int = 0


class EndpointPool:
    """The servers of one engine, their health and load; usable from any thread."""

    def __init__(self, urls: list[str]) -> None:
        if not urls:
            raise ValueError("an openai engine needs at least one server URL")
        self.endpoints = [Endpoint(u.rstrip("/")) for u in urls]
        self._lock = threading.Lock()

    def acquire(self, avoid: Endpoint | None = None) -> Endpoint | None:
        with self._lock:
            usable = [e for e in self.endpoints if e.healthy and e is not avoid]
            if not usable:
                usable = [e for e in self.endpoints if e.healthy]
            if not usable:
                return None
            best = min(usable, key=lambda e: e.in_flight)
            best.in_flight += 1
            return best

    def release(self, endpoint: Endpoint) -> None:
        with self._lock:
            endpoint.in_flight -= 1

    def replace(self, urls: list[str]) -> None:
        with self._lock:
            self.endpoints = [Endpoint(u) for u in urls]

    def set_healthy(self, index: int, healthy: bool) -> None:
        with self._lock:
            self.endpoints[index].healthy = healthy


class LoopThread:
    """An asyncio loop on a daemon thread; ``submit`` runs a coroutine there."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Awaitable[T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]

    def call(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        return self.submit(coro).result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


class OpenAIHTTP:
    """POSTs JSON to the pool's servers with retries; one httpx client on one loop."""

    def __init__(
        self,
        pool: EndpointPool,
        *,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        name: str = "reinforge-openai-engine",
    ) -> None:
        self.pool = pool
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._loop = LoopThread(name)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client: httpx.AsyncClient = self._loop.call(self._make_client(headers))

    async def _make_client(self, headers: dict[str, str]) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=512, max_keepalive_connections=64)
        return httpx.AsyncClient(headers=headers, timeout=self.timeout, limits=limits)

    def submit(self, path: str, body: dict[str, Any], parse: Callable[[dict, str], T]) -> Future[T]:
        """POST ``body`` to ``path`` on some server; the future resolves to ``parse(json, url)``."""
        return self._loop.submit(self._post(path, body, parse))

    def call(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        """Run a coroutine of this engine (e.g. an admin request) and wait for it."""
        return self._loop.call(coro, timeout)

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        params: Any = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        return await self._client.request(
            method, url, json=json, params=params, timeout=timeout or self.timeout
        )

    async def _post(self, path: str, body: dict[str, Any], parse: Callable[[dict, str], T]) -> T:
        last: Exception | None = None
        endpoint: Endpoint | None = None
        for attempt in range(self.max_retries + 1):
            endpoint = self.pool.acquire(avoid=endpoint)
            if endpoint is None:
                last = ServerUnavailableError("no healthy server")
            else:
                try:
                    response = await self._client.post(endpoint.url + path, json=body)
                except (httpx.TransportError, httpx.TimeoutException) as exc:
                    last = ServerUnavailableError(
                        f"{endpoint.url}{path}: {type(exc).__name__}: {exc}"
                    )
                else:
                    if response.status_code == 200:
                        return parse(response.json(), endpoint.url)
                    message = _error_text(response)
                    if response.status_code not in _RETRY_STATUS:
                        raise ServerRequestError(
                            f"{endpoint.url}{path} answered {response.status_code}: {message}"
                        )
                    last = ServerUnavailableError(
                        f"{endpoint.url}{path} answered {response.status_code}: {message}"
                    )
                finally:
                    self.pool.release(endpoint)
            if attempt < self.max_retries:
                await asyncio.sleep(self.backoff * 2**attempt * (0.5 + random.random()))
        raise ServerUnavailableError(f"gave up after {self.max_retries + 1} attempts: {last}")

    def close(self) -> None:
        with contextlib.suppress(Exception):  # the loop may already be gone at exit
            self._loop.call(self._client.aclose(), timeout=5)
        self._loop.stop()


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            return str(err.get("message", err))[:500]
        return str(err)[:500]
    return str(body)[:500]
