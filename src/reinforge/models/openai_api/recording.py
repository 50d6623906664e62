"""The recording endpoint: an agent reinforge cannot rewrite calls the policy over HTTP.

An agent built on LangGraph, CrewAI or its own service takes a ``base_url``, an
``api_key`` and a model name, nothing more. A workflow opens an ``AgentEndpoint`` for
its task (``model.agent_endpoint(label)``) and hands those three to the agent, in the
same process or in a subprocess (``AgentEndpoint.env()`` sets the variables the
``openai`` SDK reads). Every call made with that key is answered by the workflow's own
``OpenAIService``, so it goes through its ``ModelWrapper`` and, with history on, is
recorded token-exact, multi-turn prefixes merged, as in-process calls are. When the
endpoint closes the key stops working (401), and the workflow sets the reward on what
was recorded.

One HTTP server per process serves every open key (started on first use, on a free
loopback port); keys are random, prefixed with the label so logs say whose call it was.
An agent that sends a fixed ``api_key`` (rLLM's flows send ``"EMPTY"``) is given
``AgentEndpoint.session_url`` instead, ``/sessions/<key>/v1``: the key in the path
picks the service, whatever key the request carries.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from reinforge.models.openai_api.server import ServerThread
    from reinforge.models.openai_api.service import OpenAIService


SESSION_PREFIX = "/sessions/"


@dataclass(frozen=True)
class AgentEndpoint:
    """What an agent needs to call the policy: an OpenAI ``base_url`` (ending in
    ``/v1``), the ``api_key`` that names its task, and the ``model`` name to send."""

    base_url: str
    api_key: str
    model: str

    @property
    def session_url(self) -> str:
        """A ``base_url`` that names this endpoint by itself (any ``api_key`` works)."""
        return f"{self.base_url.removesuffix('/v1')}{SESSION_PREFIX}{self.api_key}/v1"

    def env(self) -> dict[str, str]:
        """The environment variables the ``openai`` SDK reads, plus ``OPENAI_MODEL``."""
        return {
            "OPENAI_BASE_URL": self.base_url,
            "OPENAI_API_KEY": self.api_key,
            "OPENAI_MODEL": self.model,
        }


class _SessionPaths:
    """ASGI middleware: ``/sessions/<key>/v1/...`` is ``/v1/...`` with the bearer key
    ``<key>``, so an endpoint can be named by its URL alone."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope.get("type") == "http" else ""
        if path.startswith(SESSION_PREFIX):
            key, _, rest = path[len(SESSION_PREFIX) :].partition("/")
            if key:
                scope = dict(scope)
                scope["path"] = "/" + rest
                scope["raw_path"] = scope["path"].encode()
                headers = [(k, v) for k, v in scope.get("headers", []) if k != b"authorization"]
                scope["headers"] = [*headers, (b"authorization", b"Bearer " + key.encode())]
        await self.app(scope, receive, send)


class RecordingServer:
    """One loopback HTTP server answering each key with the service it was opened for."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self._services: dict[str, OpenAIService] = {}
        self._lock = threading.Lock()
        self._server: ServerThread | None = None

    def _url(self) -> str:
        with self._lock:
            if self._server is None:
                from reinforge.models.openai_api.server import ServerThread, create_app

                app = create_app(None, service_for_key=self._services.get, bind_host=self.host)
                self._server = ServerThread(_SessionPaths(app), host=self.host).start()  # type: ignore[arg-type]
            return self._server.url

    @contextmanager
    def open(self, service: OpenAIService, label: str = "") -> Iterator[AgentEndpoint]:
        """An endpoint whose key reaches ``service`` until the block ends."""
        url = self._url()
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-")[:60]
        key = f"reinforge-{slug}-{secrets.token_urlsafe(16)}" if slug else secrets.token_urlsafe(16)
        self._services[key] = service
        try:
            yield AgentEndpoint(f"{url}/v1", key, service.served_name)
        finally:
            self._services.pop(key, None)

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                self._server.stop()
                self._server = None


_shared: RecordingServer | None = None
_shared_lock = threading.Lock()


def recording_server() -> RecordingServer:
    """This process's recording server (created on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = RecordingServer()
        return _shared
