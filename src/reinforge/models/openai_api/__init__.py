"""The OpenAI protocol over a ModelWrapper: service, in-process clients, HTTP server.

``service``: ``OpenAIService``, request bodies in and response bodies out
(``request_parsing`` and ``response_shaping`` do the two halves); ``clients``: real
``openai.OpenAI`` / ``AsyncOpenAI`` clients whose requests never leave the process;
``server``: the FastAPI app of ``reinforge serve``; ``recording``: the HTTP endpoint
through which an agent in another process calls (and is recorded by) a workflow's
wrapper.

This package sits on top of ``ModelWrapper`` and is never imported by it. Importing
it registers its builders with the wrapper's slot
(``reinforge.models.wrapper.openai_access``), which is how
``ModelWrapper.get_openai_client()`` reaches it; ``reinforge.models`` imports this
package, so the builders are always in place. Not to be confused with the ``openai``
engine (``reinforge.models.engines.openai``), which samples from an external server.

Names load on first use (httpx, FastAPI and the wrapper are not imported here).
"""

from __future__ import annotations

from typing import Any

from reinforge.core.lazy_exports import lazy_exports
from reinforge.models.wrapper.openai_access import OpenAIBuilders, register_openai_builders

_EXPORTS = {
    "APIError": "reinforge.models.openai_api.request_parsing",
    "OpenAIService": "reinforge.models.openai_api.service",
    "ServiceResponse": "reinforge.models.openai_api.service",
    "AsyncInProcessTransport": "reinforge.models.openai_api.clients",
    "InProcessTransport": "reinforge.models.openai_api.clients",
    "async_openai_client": "reinforge.models.openai_api.clients",
    "openai_client": "reinforge.models.openai_api.clients",
    "AgentEndpoint": "reinforge.models.openai_api.recording",
    "recording_server": "reinforge.models.openai_api.recording",
    "ServerThread": "reinforge.models.openai_api.server",
    "create_app": "reinforge.models.openai_api.server",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


def _service(model: Any) -> Any:
    from reinforge.models.openai_api.service import OpenAIService

    return OpenAIService(model)


def _client(service: Any) -> Any:
    from reinforge.models.openai_api.clients import openai_client

    return openai_client(service)


def _async_client(service: Any) -> Any:
    from reinforge.models.openai_api.clients import async_openai_client

    return async_openai_client(service)


def _agent_endpoint(service: Any, label: str) -> Any:
    from reinforge.models.openai_api.recording import recording_server

    return recording_server().open(service, label)


register_openai_builders(OpenAIBuilders(_service, _client, _async_client, _agent_endpoint))
