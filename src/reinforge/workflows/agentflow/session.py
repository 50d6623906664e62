"""One rollout's model endpoint: the recording server and the wrapper's own history.

An rLLM 0.3 flow builds its own client, ``AsyncOpenAI(base_url=config.base_url,
api_key="EMPTY")``, so reinforge cannot hand it a client object; it hands it a URL.
Each rollout is answered by a ``SessionModel``: a ``ModelWrapper`` of its own over the
rollout model's engine (as the explorer's runner gives each attempt its own wrapper),
with history on, opened on the recording server every black-box agent uses
(``ModelWrapper.agent_endpoint``: one loopback port per process). The flow gets the
endpoint's ``session_url`` (``/sessions/<key>/v1``), so the key in the path picks the
session whatever ``api_key`` the flow sends.

Nothing here records anything itself: the calls are the session wrapper's history,
``extract_experience_from_history()``, the one record every workflow reads, with the
prompt ids the wrapper encoded and the ids the engine sampled. A wrapper per rollout
keeps concurrent rollouts of one task apart (and their multi-turn bridging) without
touching the rollout model's own history, so ``enable_history`` may stay off there.

What the session adds is the taskset's sampling settings: they replace what the flow
asks for on every call (rLLM's gateway does the same), a ``seed`` among them advanced
by one per call so repeated prompts differ.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from reinforge.core import Experience
from reinforge.models.model_wrapper import ModelWrapper

__all__ = ["SEED_STRIDE", "RolloutSession", "SessionModel", "rollout_session"]

#: distinct seeds for the calls of one rollout: call k of rollout r samples with
#: ``seed + SEED_STRIDE * r + k``
SEED_STRIDE = 100_003


class SessionModel(ModelWrapper):
    """A rollout's own ``ModelWrapper`` over ``model``'s engine: history on, the
    ``enforced`` sampling keywords replacing what each request asks for."""

    def __init__(self, model: Any, enforced: dict[str, Any] | None = None) -> None:
        engine = getattr(model, "engine", None)
        if engine is None:
            raise TypeError(
                f"an AgentFlow runs on a reinforge ModelWrapper (it needs the engine to "
                f"serve the flow's endpoint); got a {type(model).__name__}"
            )
        super().__init__(
            engine,
            model_name=getattr(model, "model_name", None),
            enable_history=True,
            default_max_tokens=getattr(model, "default_max_tokens", 256),
            chat_template=getattr(model, "chat_template", None),
            request_timeout=getattr(model, "request_timeout", None),
        )
        self._enforced = {k: v for k, v in (enforced or {}).items() if k != "n"}
        self._seed_lock = threading.Lock()
        self._requests = 0

    def _arguments(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        args = {**kwargs, **self._enforced}
        if self._enforced.get("seed") is not None:
            with self._seed_lock:
                request = self._requests
                self._requests += 1
            args["seed"] = int(self._enforced["seed"]) + request
        return args

    def chat(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        return super().chat(messages, tools, **self._arguments(kwargs))

    async def chat_async(
        self, messages: list[dict[str, Any]], tools: list[dict] | None = None, **kwargs: Any
    ) -> list[Experience]:
        return await super().chat_async(messages, tools, **self._arguments(kwargs))

    def generate(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        return super().generate(prompts, **self._arguments(kwargs))

    async def generate_async(self, prompts: list[str], **kwargs: Any) -> list[Experience]:
        return await super().generate_async(prompts, **self._arguments(kwargs))


@dataclass
class RolloutSession:
    """One rollout's endpoint: ``base_url`` (ends in ``/v1``), the ``model`` name to
    send, and the wrapper whose history records the calls."""

    base_url: str
    model: str
    recorder: SessionModel

    def experiences(self) -> list[Experience]:
        """Every call answered so far, one experience per reply, in the order the
        replies came back (the history is cleared)."""
        return self.recorder.extract_experience_from_history(shape="turn")


@contextmanager
def rollout_session(
    model: Any, *, label: str = "", enforced: dict[str, Any] | None = None
) -> Iterator[RolloutSession]:
    """A session answering with ``model``'s engine until the block ends; then its URL
    gives 401 and requests still in flight are cancelled."""
    recorder = SessionModel(model, enforced)
    try:
        with recorder.agent_endpoint(label) as endpoint:
            yield RolloutSession(endpoint.session_url, endpoint.model, recorder)
    finally:
        recorder.cancel_pending()
