"""The HTTP transport of ``OpenAIService``: a FastAPI app served by uvicorn.

``reinforge serve`` exposes the policy as an OpenAI-compatible server, so agents
and tools outside the process (or on another machine) can use it exactly like
the in-process clients of ``ModelWrapper.get_openai_client()``: both transports
hand request bodies to the same ``OpenAIService`` and send back what it returns,
so responses (token ids, logprobs, tool calls, error bodies) are identical.

Routes: ``POST /v1/chat/completions``, ``POST /v1/completions``,
``GET /v1/models`` and ``GET /health``. With ``api_key`` set, every ``/v1`` route
needs ``Authorization: Bearer <key>``; ``/health`` stays open for probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

if TYPE_CHECKING:
    import uvicorn

    from reinforge.models.openai_api.service import OpenAIService, ServiceResponse

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000


def _error(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, headers=headers)


def _reply(result: ServiceResponse) -> Response:
    if result.events is not None:
        return StreamingResponse(
            iter((result.sse_bytes(),)),
            status_code=result.status,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )
    return JSONResponse(result.body, status_code=result.status)


class _BearerAuth:
    """ASGI middleware: ``/v1`` requests need ``Authorization: Bearer <key>``.

    Checked before routing, so a caller without the key learns nothing about which
    paths exist; pure ASGI rather than ``@app.middleware`` to stay off the hot path.
    The scheme is matched case-insensitively (``bearer`` works too), as HTTP says.
    """

    def __init__(self, app: Any, expected: bytes) -> None:
        self.app = app
        self.expected = expected

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1"):
            scheme, _, given = dict(scope["headers"]).get(b"authorization", b"").partition(b" ")
            if scheme.lower() != b"bearer" or not secrets.compare_digest(
                given.strip(), self.expected
            ):
                response = _error(
                    401,
                    "missing or wrong API key: send 'Authorization: Bearer <key>'",
                    "invalid_request_error",
                    "invalid_api_key",
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _RequestGuard:
    """ASGI middleware: only requests addressed to this server, of bounded size.

    * ``Host`` must name the server (loopback names, or the bound host): a web page
      the user visits could otherwise drive a local server through DNS rebinding.
      No CORS headers are sent, so browsers keep other origins' scripts out.
    * A body larger than ``max_body_bytes`` is refused with 413, whether it declares
      its length or streams it in chunks.
    """

    def __init__(self, app: Any, allowed_hosts: frozenset[str] | None, max_body_bytes: int) -> None:
        self.app = app
        self.allowed_hosts = allowed_hosts
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        host = headers.get(b"host", b"").decode("latin-1").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if self.allowed_hosts is not None and name not in self.allowed_hosts:
            msg = f"Host '{host}' is not this server; use one of {sorted(self.allowed_hosts)}"
            await _error(400, msg, "invalid_request_error", "host_not_allowed")(
                scope, receive, send
            )
            return
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await self._too_large(scope, receive, send)
            return
        seen = 0

        async def counting_receive() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_body_bytes:
                raise _BodyTooLarge
            return message

        try:
            await self.app(scope, counting_receive, send)
        except _BodyTooLarge:
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Any, receive: Any, send: Any) -> None:
        msg = f"request body over {self.max_body_bytes} bytes"
        await _error(413, msg, "invalid_request_error", "request_too_large")(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


#: default limit of a request body (a long multi-turn conversation is well under it)
MAX_BODY_BYTES = 8 * 1024 * 1024
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


def allowed_hosts_for(bind_host: str | None) -> frozenset[str] | None:
    """Host names a request may carry for a server bound to ``bind_host``; None: any
    (a server bound to all interfaces is reached under names it cannot know)."""
    if bind_host in (None, "0.0.0.0", "::", ""):
        return None
    return frozenset({*_LOOPBACK_NAMES, bind_host.lower(), f"[{bind_host.lower()}]"})


def bearer_key(request: Request) -> str:
    """The key of an ``Authorization: Bearer <key>`` header ('' when there is none)."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return given.strip() if scheme.lower() == "bearer" else ""


def create_app(
    service: OpenAIService | None,
    *,
    api_key: str | None = None,
    service_for_key: Callable[[str], OpenAIService | None] | None = None,
    bind_host: str | None = DEFAULT_HOST,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """A FastAPI app answering the OpenAI API from ``service``.

    With ``service_for_key`` instead, each ``/v1`` request is answered by the service
    its bearer key names (the recording endpoint: one key per running task); a key
    that names none gets a 401. ``bind_host`` sets which ``Host`` headers are
    accepted (see ``_RequestGuard``)."""
    if (service is None) == (service_for_key is None):
        raise ValueError("create_app takes a service or service_for_key, exactly one")
    # no /docs or /openapi.json: the routes are exactly those of the in-process transport
    app = FastAPI(title="reinforge", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.service = service

    def service_of(request: Request) -> OpenAIService | JSONResponse:
        if service is not None:
            return service
        found = service_for_key(bearer_key(request))  # type: ignore[misc]
        if found is None:
            return _error(
                401,
                "this API key names no running task (its task ended, or the key was never "
                "issued): use the base_url and api_key the workflow handed the agent",
                "invalid_request_error",
                "invalid_api_key",
            )
        return found

    if api_key:
        app.add_middleware(_BearerAuth, expected=api_key.encode())
    # added last, so it runs first: foreign hosts and huge bodies never reach auth or routes
    app.add_middleware(
        _RequestGuard, allowed_hosts=allowed_hosts_for(bind_host), max_body_bytes=max_body_bytes
    )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own 404/405 bodies are {"detail": ...}; SDKs expect OpenAI's shape.
        if exc.status_code == 404:
            message = f"no route {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"method {request.method} not allowed on {request.url.path}"
        else:
            message = str(exc.detail)
        kind = "not_found" if exc.status_code == 404 else "invalid_request_error"
        return _error(exc.status_code, message, kind)

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        # a bug, not a bad request: answer in OpenAI's shape (uvicorn logs the traceback)
        return _error(500, f"{type(exc).__name__}: {exc}", "internal_error")

    async def handle(endpoint: str, request: Request) -> Response:
        raw = await request.body()
        body = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError as exc:
                return _error(
                    400, f"the request body is not valid JSON: {exc}", "invalid_request_error"
                )
            except RecursionError:
                return _error(400, "the request body is nested too deeply", "invalid_request_error")
        answering = service_of(request)
        if isinstance(answering, JSONResponse):
            return answering
        result = await _unless_disconnected(request, answering.handle_async(endpoint, body))
        if result is None:  # nobody is listening any more
            return Response(status_code=499)
        return _reply(result)

    @app.post("/v1/chat/completions")
    async def chat_completions(request: Request) -> Response:
        return await handle("chat", request)

    @app.post("/v1/completions")
    async def completions(request: Request) -> Response:
        return await handle("completion", request)

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        answering = service_of(request)
        if isinstance(answering, JSONResponse):
            return answering
        return _reply(await answering.handle_async("models", None))

    @app.get("/health")
    async def health() -> Response:
        if service is None:
            return JSONResponse({"status": "ok"})
        return _reply(await service.handle_async("health", None))

    return app


async def _unless_disconnected(
    request: Request, work: Coroutine[Any, Any, ServiceResponse]
) -> ServiceResponse | None:
    """Run ``work`` until done, or cancel it (None) when the client disconnects first.

    Cancelling the task cancels the engine futures it awaits (``asyncio.wrap_future``
    passes cancellation on), so the engine stops decoding for a client that is gone.
    """
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        task.cancel()  # a no-op once done
    with contextlib.suppress(asyncio.CancelledError):
        return await task
    return None


async def _disconnected(request: Request) -> None:
    """Return once the client has gone (the body was read, so only a disconnect is left)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def bind_socket(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> socket.socket:
    """A listening TCP socket (port 0 picks a free one); OSError says why binding failed.

    Binding before uvicorn starts lets the caller report a taken port as a clear
    error (uvicorn would log it and exit) and learn the port that 0 resolved to.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def socket_url(sock: socket.socket) -> str:
    """``http://host:port`` of a bound socket (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _uvicorn_server(app: FastAPI, log_level: str, access_log: bool) -> uvicorn.Server:
    import uvicorn

    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, lifespan="off")
    return uvicorn.Server(config)


def run_server(
    app: FastAPI,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    sock: socket.socket | None = None,
    log_level: str = "info",
    access_log: bool = True,
) -> None:
    """Serve ``app`` with uvicorn until interrupted (on ``sock`` if given, else host:port)."""
    sock = sock or bind_socket(host, port)
    try:
        _uvicorn_server(app, log_level, access_log).run(sockets=[sock])
    finally:
        sock.close()


class ServerThread:
    """``app`` served by uvicorn on a background thread (tests, benchmarks, notebooks).

    ``with ServerThread(app) as server: OpenAI(base_url=server.url + "/v1")``; the
    default port 0 picks a free loopback port.
    """

    def __init__(
        self,
        app: FastAPI,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        log_level: str = "warning",
        access_log: bool = False,
    ) -> None:
        self.sock = bind_socket(host, port)
        self.url = socket_url(self.sock)
        self.port: int = self.sock.getsockname()[1]
        self._server = _uvicorn_server(app, log_level, access_log)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def start(self, timeout: float = 30.0) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the server at {self.url} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(10)
        self.sock.close()

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
