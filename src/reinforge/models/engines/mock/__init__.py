"""The ``mock`` engine: a deterministic scripted policy that needs no weights."""

from reinforge.models.engines.mock.engine import MockEngine, fake_logprob

__all__ = ["MockEngine", "fake_logprob"]
