"""One entry of ``explorer.auxiliary_models``: a second model next to the policy."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from reinforge.models.model_config import ModelConfig


class AuxiliaryModelConfig(ModelConfig):
    """A model that workflows and operators call as a judge, reward model or tool.

    It has the policy's ``model`` fields (``model_path``, ``engine`` and the engine's
    section) plus a name, its own sampling defaults and a concurrency limit. It is
    never trained and never receives weight syncs, except with ``share_policy: true``:
    then it *is* the policy (same engine, same weights, synced with it), called
    without recording history, which is what a trainable judge needs.

    With ``engine: openai`` the clients talk to the server directly (the server
    applies its own chat template), so no tokenizer of the remote model is needed.
    """

    name: str = Field(..., min_length=1, description="what workflows and operators ask for")
    share_policy: bool = Field(
        False, description="use the policy itself (its engine and weights) as this model"
    )
    temperature: float | None = Field(
        0.0, ge=0, description="default sampling temperature of a request that sets none"
    )
    top_p: float | None = Field(None, gt=0, le=1)
    max_concurrency: int = Field(8, ge=1, description="requests in flight at once")
    request_timeout: float = Field(120.0, gt=0, description="seconds per request")
    structured_output: Literal["prompt", "json_schema"] = Field(
        "prompt",
        description="how judges ask for JSON: 'prompt' states the schema in the prompt and "
        "validates the reply; 'json_schema' also sends response_format (the server must "
        "support guided decoding: vLLM, OpenAI)",
    )
    cache: bool = Field(True, description="reuse a judge's verdict for an identical request")
    max_judge_attempts: int = Field(
        3, ge=1, description="tries per judge call before its reply counts as failed"
    )

    @model_validator(mode="after")
    def _engine_fits(self) -> AuxiliaryModelConfig:
        if self.share_policy and "engine" in self.model_fields_set:
            raise ValueError(
                f"auxiliary model '{self.name}': share_policy uses the policy's engine; "
                "remove 'engine' (and the engine section)"
            )
        return self

    def sampling_defaults(self) -> dict[str, float | int]:
        """What a request that does not say otherwise is sent with."""
        out: dict[str, float | int] = {"max_tokens": self.max_response_tokens}
        if self.temperature is not None:
            out["temperature"] = self.temperature
        if self.top_p is not None:
            out["top_p"] = self.top_p
        return out
