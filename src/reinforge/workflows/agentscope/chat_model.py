"""AgentScope chat models whose every call is answered, and recorded, by reinforge.

AgentScope agents talk to a model through its ``OpenAIChatModel``, which sends
``chat.completions.create`` to the ``openai.AsyncOpenAI`` client it holds. Handing it
the rollout model's in-process client (``ModelWrapper.get_openai_async_client``)
makes each call of the agent one token-exact entry of the wrapper's history, which
the workflows turn into experiences; nothing listens on a port. Auxiliary models
(judges, helpers that are not trained) get the same treatment with their own
clients, so their calls stay out of the policy's history.

``agentscope`` is an optional dependency (``pip install 'reinforge[agentscope]'``):
it is imported only when an AgentScope workflow is built, and a missing install is
an error that says how to get it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: the range of AgentScope releases these workflows are written against
AGENTSCOPE_REQUIREMENT = "agentscope>=2.0,<2.1"


def require_agentscope(workflow: str) -> None:
    """Raise an ImportError naming ``workflow`` and the install command when AgentScope
    is missing."""
    try:
        import agentscope  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"{workflow} runs an AgentScope agent, but agentscope is not installed: "
            f"pip install 'reinforge[agentscope]' (or '{AGENTSCOPE_REQUIREMENT}')"
        ) from exc


def sampling_parameters(rollout_args: Mapping[str, Any] | Any) -> dict[str, Any]:
    """The task's ``rollout_args`` as AgentScope's ``OpenAIChatModel.Parameters`` fields
    (temperature, top_p, max_tokens); settings the config left unset stay unset."""
    out: dict[str, Any] = {}
    for name in ("temperature", "top_p", "max_tokens"):
        if isinstance(rollout_args, Mapping):
            value = rollout_args.get(name)
        else:
            value = getattr(rollout_args, name, None)
        if value is not None:
            out[name] = value
    return out


def chat_model_over(
    client: Any,
    *,
    parameters: Mapping[str, Any] | None = None,
    logprobs: bool = True,
    context_size: int | None = None,
) -> Any:
    """An AgentScope ``OpenAIChatModel`` that sends its requests through ``client`` (an
    ``openai.AsyncOpenAI``-like object with ``model_path``), without streaming, asking
    for log-probabilities when ``logprobs`` is set."""
    from agentscope.credential import OpenAICredential

    OpenAIChatModel = policy_model_class()
    base_url = str(getattr(client, "base_url", "") or "http://reinforge.local/v1")
    chat_model = OpenAIChatModel(
        credential=OpenAICredential(api_key="in-process", base_url=base_url),
        model=client.model_path,
        parameters=OpenAIChatModel.Parameters(**dict(parameters or {})),
        stream=False,
        max_retries=0,  # reinforge's engine does not fail transiently: an error is real
        context_size=context_size or 128000,
        extra_body={"logprobs": True} if logprobs else None,
    )
    chat_model.client = client  # replaces the client AgentScope built from the credential
    return chat_model


_MODEL_CLASS: list[type] = []


def policy_model_class() -> type:
    """AgentScope's ``OpenAIChatModel``, made to ask only for the tool choices reinforge
    serves (``auto``, ``none``).

    When a ReAct agent reaches ``max_iters`` without its structured answer, AgentScope
    forces the answer tool (``tool_choice`` naming it); reinforge's engines sample
    freely and have no way to force a tool, so such a call is sent with ``auto`` and
    the reminder AgentScope adds to the prompt asks for the tool instead. An agent
    that still does not call it ends after AgentScope's grace iterations with its
    "maximum iterations exceeded" reply.
    """
    if not _MODEL_CLASS:
        from agentscope.model import OpenAIChatModel
        from agentscope.tool import ToolChoice

        class PolicyOpenAIChatModel(OpenAIChatModel):
            async def __call__(
                self,
                messages: list[Any],
                tools: list[dict] | None = None,
                tool_choice: Any = None,
                **kwargs: Any,
            ) -> Any:
                if tool_choice is not None and tool_choice.mode not in ("auto", "none"):
                    tool_choice = ToolChoice(mode="auto", tools=tool_choice.tools)
                return await super().__call__(messages, tools, tool_choice, **kwargs)

        _MODEL_CLASS.append(PolicyOpenAIChatModel)
    return _MODEL_CLASS[0]


def policy_chat_model(model: Any, rollout_args: Mapping[str, Any] | Any) -> Any:
    """The policy as an AgentScope chat model: its calls land in ``model``'s history,
    sampled with the task's ``rollout_args``."""
    context = getattr(getattr(model, "engine", None), "max_model_len", None)
    return chat_model_over(
        model.get_openai_async_client(),
        parameters=sampling_parameters(rollout_args),
        context_size=context,
    )


def auxiliary_chat_models(clients: list[Any]) -> dict[str, Any]:
    """One AgentScope chat model per auxiliary model, keyed by its config name
    (``explorer.auxiliary_models[].name``; ``auxiliary_model_<i>`` for a client
    without one). Their calls are not recorded: these models are not trained."""
    import openai

    models: dict[str, Any] = {}
    for i, client in enumerate(clients):
        runtime = getattr(client, "auxiliary", None)
        name = getattr(runtime, "name", None) or f"auxiliary_model_{i}"
        async_client = getattr(runtime, "async_client", None) or client
        if not hasattr(async_client, "model_path"):
            async_client.model_path = getattr(client, "model_path", name)
        if isinstance(async_client, openai.OpenAI):  # a sync client without an async twin
            async_client = SyncClientAsAsync(async_client)
        models[name] = chat_model_over(async_client, logprobs=False)
    return models


class SyncClientAsAsync:
    """An ``openai.OpenAI`` client seen through the async interface AgentScope awaits:
    ``chat.completions.create`` runs the blocking call and returns its result. Used
    where the caller owns the event loop and blocking it is harmless (the V0 math
    workflow's private loop on its runner thread)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.model_path = getattr(client, "model_path", "")
        self.base_url = getattr(client, "base_url", "")
        self.chat = self
        self.completions = self

    async def create(self, **kwargs: Any) -> Any:
        return self._client.chat.completions.create(**kwargs)
