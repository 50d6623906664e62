"""The model gateway of AgentFlows: an OpenAI endpoint per rollout that records every call.

An rLLM 0.3 flow builds its own client, ``AsyncOpenAI(base_url=config.base_url,
api_key="EMPTY")``, so reinforge cannot hand it a client object; it hands it a URL.
Each rollout gets a session on the recording server the black-box agents use
(``models/openai_api/recording.py``: one loopback port per process, reinforge's
``OpenAIService`` and HTTP app, the ones behind ``reinforge serve``), named by its URL,
``/sessions/<key>/v1``: the key in the path picks the session, whatever ``api_key``
the flow sends.

Each session answers through a ``RecordingModel``: the rollout's ``ModelWrapper``,
with the taskset's sampling settings applied to every call (what the flow passes
for those keys is overridden, as rLLM's gateway does), and every reply kept as a
``RecordedCall``: the messages sent and a ``ModelOutput`` with the prompt ids the
wrapper encoded, the ids the engine sampled and their log-probabilities, copied from
the wrapper's Experience, never re-encoded. The model's own call history is not
used, so ``enable_history`` may stay off.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from reinforge.core.model_output import ModelOutput
from reinforge.models.openai_api.recording import recording_server
from reinforge.models.openai_api.service import OpenAIService
from reinforge.workflows.episode.rollout_engine import ModelWrapperEngine

__all__ = ["AgentFlowGateway", "GatewaySession", "RecordedCall", "RecordingModel", "gateway"]

#: distinct seeds for the calls of one rollout: call k of rollout r samples with
#: ``seed + SEED_STRIDE * r + k``
SEED_STRIDE = 100_003


@dataclass
class RecordedCall:
    """One reply the policy gave a flow: the conversation it answered, and the output."""

    messages: list[dict[str, Any]]
    output: ModelOutput
    index: int = 0


class RecordingModel:
    """A ``ModelWrapper`` seen through a session: settings enforced, replies recorded.

    ``enforced`` are sampling keywords that replace what a request asks for (a
    ``seed`` among them is advanced by one per call, so repeated prompts differ).
    Everything else is the wrapped model's (attribute lookups pass through).
    """

    def __init__(self, model: Any, enforced: dict[str, Any] | None = None) -> None:
        self._model = model
        self._enforced = {k: v for k, v in (enforced or {}).items() if k != "n"}
        self._lock = threading.Lock()
        self._requests = 0
        self.calls: list[RecordedCall] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def _arguments(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        args = {**kwargs, **self._enforced}
        with self._lock:
            request = self._requests
            self._requests += 1
        if self._enforced.get("seed") is not None:
            args["seed"] = int(self._enforced["seed"]) + request
        return args

    def _record(self, messages: list[dict[str, Any]], exps: list[Any], tools: bool) -> None:
        sent = copy.deepcopy(list(messages))
        with self._lock:
            for exp in exps:
                output = ModelWrapperEngine.to_model_output(exp, with_tools=tools)
                self.calls.append(RecordedCall(sent, output, len(self.calls)))

    def chat(self, messages: list[dict[str, Any]], tools: Any = None, **kwargs: Any) -> list[Any]:
        exps = self._model.chat(messages, tools, **self._arguments(kwargs))
        self._record(messages, exps, bool(tools))
        return exps

    async def chat_async(
        self, messages: list[dict[str, Any]], tools: Any = None, **kwargs: Any
    ) -> list[Any]:
        exps = await self._model.chat_async(messages, tools, **self._arguments(kwargs))
        self._record(messages, exps, bool(tools))
        return exps

    def generate(self, prompts: list[str], **kwargs: Any) -> list[Any]:
        exps = self._model.generate(prompts, **self._arguments(kwargs))
        self._record([], exps, False)
        return exps

    async def generate_async(self, prompts: list[str], **kwargs: Any) -> list[Any]:
        exps = await self._model.generate_async(prompts, **self._arguments(kwargs))
        self._record([], exps, False)
        return exps


@dataclass
class GatewaySession:
    """One rollout's endpoint: ``base_url`` (ends in ``/v1``), the ``model`` name to
    send, and the calls recorded so far."""

    base_url: str
    model: str
    recorder: RecordingModel = field(repr=False)

    @property
    def calls(self) -> list[RecordedCall]:
        return list(self.recorder.calls)


class AgentFlowGateway:
    """Sessions on this process's recording server (``models/openai_api/recording.py``)."""

    @contextmanager
    def session(
        self, model: Any, *, label: str = "", enforced: dict[str, Any] | None = None
    ) -> Iterator[GatewaySession]:
        """A session answering with ``model`` until the block ends (then its URL gives 401)."""
        recorder = RecordingModel(model, enforced)
        with recording_server().open(OpenAIService(recorder), label) as endpoint:  # type: ignore[arg-type]
            yield GatewaySession(endpoint.session_url, endpoint.model, recorder)


_shared = AgentFlowGateway()


def gateway() -> AgentFlowGateway:
    """This process's gateway."""
    return _shared
