"""The ``openai`` engine: a remote OpenAI-compatible server as the rollout engine."""

from reinforge.models.engines.openai.engine import OpenAIEngine
from reinforge.models.engines.openai.protocol import ServerProtocolError

__all__ = ["OpenAIEngine", "ServerProtocolError"]
