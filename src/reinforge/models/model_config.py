"""The ``model`` config section: which weights, which engine, how long outputs may be."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from reinforge.core.strict_model import StrictModel


class HFEngineOptions(StrictModel):
    device: str | None = None
    #: auto: bfloat16 where the device computes it natively (GPUs, CPUs with AVX-512
    #: BF16 / AMX), else float32 (reinforge.core.precision)
    dtype: Literal["float32", "bfloat16", "float16", "auto"] = "float32"
    max_batch_size: int = Field(64, ge=1)
    batch_window_ms: float = Field(20.0, ge=0)
    seed: int = 0
    num_threads: int | None = Field(None, ge=1)
    #: tokens of finished sequences whose KV is kept for reuse by prompts that extend
    #: them (multi-turn conversations); 0 turns prefix reuse off
    prefix_cache_tokens: int = Field(8192, ge=0)
    #: int8: sample through int8 copies of the Linear layers (CPU; re-made after every
    #: weight sync; scores stay fp32), cheaper where bf16 is not native; null: off
    quantize: Literal["int8"] | None = None
    #: mode both without overlap, synced after every step: the engine's weights are freed
    #: during each training step and rebuilt by the sync (its copy off the step's peak
    #: memory; not with int8 or a LoRA trainer)
    free_weights_while_training: bool = True
    #: the same loop, the engine in the trainer's dtype (fp32 under `auto` without native
    #: bf16): the engine reads the trainer's parameters in place, holding no copy, and a
    #: sync moves no bytes (not with int8, a LoRA trainer or trainer ranks)
    share_weights_with_trainer: bool = True


class MockEngineOptions(StrictModel):
    policy: Literal["arithmetic", "echo"] | None = None
    replies: dict[str, str] | list[str] | None = None
    error_rate: float = Field(0.0, ge=0, le=1)
    default_reply: str = "I do not know."
    seed: int = 0
    tokenizer: Literal["bytes", "model"] = "bytes"


class OpenAIEngineOptions(StrictModel):
    """A running OpenAI-compatible server (vLLM, SGLang, ``reinforge serve``) by URL."""

    #: one URL or several replicas of the same model, e.g. ``http://127.0.0.1:8000``
    base_url: str | list[str] = "http://127.0.0.1:8000"
    #: the model name the server knows; default: ``model_path``
    model: str | None = None
    api_key: str | None = None
    request_timeout: float = Field(600.0, gt=0)
    max_retries: int = Field(3, ge=0)


class VLLMEngineOptions(StrictModel):
    """vLLM servers that reinforge starts from the vLLM virtualenv and keeps in sync."""

    #: the vLLM venv's Python; default ``$REINFORGE_VLLM_PYTHON`` or ``.venv-vllm/bin/python``
    python: str | None = None
    replicas: int = Field(1, ge=1)
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    kv_cache_gb: float = Field(2.0, gt=0)
    enforce_eager: bool = True
    #: LoRA rank the servers accept; set when the trainer trains a LoRA adapter
    max_lora_rank: int | None = Field(None, ge=1)
    #: adapter versions kept loaded (at least ``max_staleness + 1``)
    keep_versions: int = Field(2, ge=1)
    #: where synced weights and server logs go (must be visible to every replica);
    #: default: a temporary folder removed at exit
    work_dir: str | None = None
    startup_timeout: float = Field(600.0, gt=0)
    sync_timeout: float = Field(300.0, gt=0)
    request_timeout: float = Field(600.0, gt=0)
    max_retries: int = Field(3, ge=0)
    extra_args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)

    def python_path(self) -> str:
        import os

        return self.python or os.environ.get("REINFORGE_VLLM_PYTHON") or ".venv-vllm/bin/python"


class ModelConfig(StrictModel):
    """The policy: which weights, which engine, how long its outputs may be."""

    model_path: str = "smollm2-135m-instruct"
    init_from: str | None = Field(
        None,
        description="start from another run's weights: a run directory (its newest "
        "checkpoint), a checkpoints/step_N folder or an exported HF model directory "
        "(relative to the current directory, like run_dir). The policy, the reference "
        "model and the engine start from them; model_path still gives the architecture "
        "and tokenizer, and the optimiser starts fresh. E.g. RL after `mode: sft`",
    )
    engine: Literal["hf", "mock", "openai", "vllm"] = "hf"
    cache_dir: str | None = None
    max_response_tokens: int = Field(256, ge=1)
    max_model_len: int | None = Field(None, ge=16)
    hf: HFEngineOptions = Field(default_factory=HFEngineOptions)
    mock: MockEngineOptions = Field(default_factory=MockEngineOptions)
    openai: OpenAIEngineOptions = Field(default_factory=OpenAIEngineOptions)
    vllm: VLLMEngineOptions = Field(default_factory=VLLMEngineOptions)

    @property
    def has_weights(self) -> bool:
        """Whether the engine runs the policy's own weights (so it can be trained and synced)."""
        return self.engine in ("hf", "vllm")

    def engine_options(self) -> dict[str, Any]:
        if self.engine == "openai":
            o = self.openai
            return {
                "urls": [o.base_url] if isinstance(o.base_url, str) else list(o.base_url),
                "model": o.model or self.model_path,
                "api_key": o.api_key,
                "timeout": o.request_timeout,
                "max_retries": o.max_retries,
                "max_model_len": self.max_model_len or 4096,
            }
        if self.engine == "vllm":
            opts = self.vllm.model_dump(exclude={"python"})
            opts["python"] = self.vllm.python_path()
            opts["max_model_len"] = self.max_model_len or 2048
            return opts
        if self.engine == "mock":
            opts = self.mock.model_dump()
            if self.max_model_len:
                opts["max_model_len"] = self.max_model_len
            return opts
        opts = self.hf.model_dump()
        opts["max_model_len"] = self.max_model_len
        return opts

    def create_engine(self, **extra: Any) -> Any:
        """The engine this section describes (``reinforge.models.create_engine``); ``extra``
        goes to the engine's constructor (e.g. the Ray backend's ``server_factory``)."""
        from reinforge.models.factory import create_engine

        options = {**self.engine_options(), **extra}
        return create_engine(
            self.engine, self.model_path, cache_dir=self.cache_dir, options=options
        )
