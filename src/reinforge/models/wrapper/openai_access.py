"""The slot through which ModelWrapper reaches the OpenAI protocol without importing it.

``reinforge.models.openai_api`` sits on top of ModelWrapper (its service calls the
wrapper), so the wrapper must never import it back. Instead the protocol package
registers its builders here when it is imported, and ``reinforge.models`` imports the
protocol package, so they are in place before any ModelWrapper can exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class OpenAIBuilders:
    """How to build the OpenAI API objects of a wrapper."""

    #: ModelWrapper -> the ``OpenAIService`` over it
    service: Callable[[Any], Any]
    #: OpenAIService -> an in-process ``openai.OpenAI`` client
    client: Callable[[Any], Any]
    #: OpenAIService -> an in-process ``openai.AsyncOpenAI`` client
    async_client: Callable[[Any], Any]
    #: (OpenAIService, label) -> a context manager of an HTTP ``AgentEndpoint``
    agent_endpoint: Callable[[Any, str], Any]


_registered: OpenAIBuilders | None = None


def register_openai_builders(builders: OpenAIBuilders) -> None:
    """Install the protocol package's builders (it calls this when imported)."""
    global _registered
    _registered = builders


def openai_builders() -> OpenAIBuilders:
    """The registered builders; an error saying what to import when there are none."""
    if _registered is None:
        raise RuntimeError(
            "the OpenAI API of ModelWrapper is not registered; import reinforge.models.openai_api"
        )
    return _registered
