"""``ModelWrapper``'s face: small, and everything a ported Trinity-RFT workflow calls.

The jobs behind it live in ``reinforge.models.wrapper`` (docs/architecture.md); the
class keeps what workflows use. Counted here is everything its own body defines
(methods, properties, private helpers and ``__init__``), so moving a helper out of
sight by renaming it does not pass.
"""

from __future__ import annotations

import inspect

from reinforge.models import ModelWrapper
from reinforge.models.engines.mock import MockEngine

#: the most the class body may define
MOST = 25

#: what Trinity-RFT's ``ModelWrapper`` offers workflow authors, as its documentation
#: uses it: the workflow guide (``chat``, ``get_openai_client``), the step-wise reward
#: workflows (``enable_history``, ``extract_experience_from_history``), the workflows
#: package (``MultiTurnWorkflow``: ``convert_messages_to_experience(_async)``,
#: ``get_message_token_len``, ``model_path``, ``config``), and the async twins and
#: scoring its workflows call (``chat_async``, ``generate(_async)``,
#: ``logprobs(_async)``, ``get_openai_async_client``, ``model_version``)
TRINITY_METHODS = {
    "chat",
    "chat_async",
    "generate",
    "generate_async",
    "logprobs",
    "logprobs_async",
    "convert_messages_to_experience",
    "convert_messages_to_experience_async",
    "get_message_token_len",
    "get_openai_client",
    "get_openai_async_client",
    "extract_experience_from_history",
}
TRINITY_ATTRIBUTES = {
    "enable_history",
    "history",
    "model_path",
    "model_name",
    "model_version",
    "config",
    "model_config",
    "tokenizer",
}
#: reinforge's own, which its workflows, runner and server use
REINFORGE_ONLY = {"chat_prompts", "agent_endpoint", "openai_service", "cancel_pending", "close"}


def _defined() -> dict[str, object]:
    return {
        name: value
        for name, value in vars(ModelWrapper).items()
        if inspect.isfunction(value) or isinstance(value, (property, staticmethod, classmethod))
    }


def test_the_class_defines_at_most_25_methods() -> None:
    defined = _defined()
    assert len(defined) <= MOST, f"{len(defined)} defined on ModelWrapper: {sorted(defined)}"


def test_every_documented_trinity_method_is_there_and_callable() -> None:
    defined = _defined()
    for name in TRINITY_METHODS | REINFORGE_ONLY - {"chat_prompts", "openai_service"}:
        assert inspect.isfunction(defined.get(name)), name
    for name in ("chat_async", "generate_async", "logprobs_async", "get_message_token_len"):
        assert inspect.iscoroutinefunction(defined[name]), name
    params = inspect.signature(ModelWrapper.extract_experience_from_history).parameters
    assert "clear_history" in params  # Trinity's keyword


def test_every_documented_trinity_attribute_reads() -> None:
    model = ModelWrapper(MockEngine(), enable_history=True)
    for name in TRINITY_ATTRIBUTES | {"chat_prompts"}:
        getattr(model, name)
    assert model.enable_history is True and model.history == []
    model.chat([{"role": "user", "content": "hi"}])
    assert len(model.history) == 1  # history is the recorded list itself
    assert model.extract_experience_from_history() and model.history == []
