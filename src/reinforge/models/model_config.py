"""The ``model`` config section: which weights, which engine, how long outputs may be."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class HFEngineOptions(_Strict):
    device: str | None = None
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    max_batch_size: int = Field(64, ge=1)
    batch_window_ms: float = Field(20.0, ge=0)
    seed: int = 0
    num_threads: int | None = Field(None, ge=1)


class MockEngineOptions(_Strict):
    policy: Literal["arithmetic", "echo"] | None = None
    replies: dict[str, str] | list[str] | None = None
    error_rate: float = Field(0.0, ge=0, le=1)
    default_reply: str = "I do not know."
    seed: int = 0
    tokenizer: Literal["bytes", "model"] = "bytes"


class ModelConfig(_Strict):
    """The policy: which weights, which engine, how long its outputs may be."""

    model_path: str = "smollm2-135m-instruct"
    engine: Literal["hf", "mock"] = "hf"
    cache_dir: str | None = None
    max_response_tokens: int = Field(256, ge=1)
    max_model_len: int | None = Field(None, ge=16)
    hf: HFEngineOptions = Field(default_factory=HFEngineOptions)
    mock: MockEngineOptions = Field(default_factory=MockEngineOptions)

    def engine_options(self) -> dict[str, Any]:
        if self.engine == "mock":
            opts = self.mock.model_dump()
            if self.max_model_len:
                opts["max_model_len"] = self.max_model_len
            return opts
        opts = self.hf.model_dump()
        opts["max_model_len"] = self.max_model_len
        return opts

    def create_engine(self) -> Any:
        """The engine this section describes (``reinforge.models.create_engine``)."""
        from reinforge.models.factory import create_engine

        return create_engine(
            self.engine, self.model_path, cache_dir=self.cache_dir, options=self.engine_options()
        )
