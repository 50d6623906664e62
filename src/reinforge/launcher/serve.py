"""Build the OpenAI-compatible server of ``reinforge serve`` from a config's ``model`` section.

Kept apart from the CLI so the app can be built (and tested) without starting
uvicorn: ``build_server(cfg)`` loads the engine exactly as ``reinforge explore``
does and wraps it in a ModelWrapper without history (a server answers requests,
it does not collect experiences).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from reinforge.models import ModelWrapper

if TYPE_CHECKING:
    from fastapi import FastAPI

    from reinforge.config import ReinforgeConfig


@dataclass
class Server:
    """The app to serve and the model behind it (close it when the server stops)."""

    app: FastAPI
    model: ModelWrapper

    @property
    def served_model_name(self) -> str:
        return self.model.model_name

    def close(self) -> None:
        self.model.engine.close()


def build_server(
    cfg: ReinforgeConfig,
    *,
    api_key: str | None = None,
    served_model_name: str | None = None,
    host: str | None = "127.0.0.1",
) -> Server:
    """Engine + ModelWrapper from ``cfg.model``, and the FastAPI app over them.

    ``served_model_name`` (default: ``model.model_path``) is the name ``/v1/models``
    lists and responses carry; requests may name any model, as with vLLM's default.
    """
    from reinforge.models.openai_api.server import create_app

    spec = cfg.model
    engine = spec.create_engine()
    try:
        model = ModelWrapper(
            engine,
            model_name=served_model_name or spec.model_path,
            enable_history=False,
            default_max_tokens=spec.max_response_tokens,
        )
        app = create_app(model.openai_service, api_key=api_key, bind_host=host)
    except BaseException:
        engine.close()
        raise
    return Server(app, model)
