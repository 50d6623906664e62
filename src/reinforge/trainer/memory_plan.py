"""What each trainer rank and the driver will hold for a config and a model size, worked
out before a run (``reinforge config -c CONFIG --memory``).

A pure calculation from the model's shape (``config.json``: hidden size, layers,
vocabulary, ...) and the trainer's settings: strategy and ranks, dtype and mixed
precision, LoRA, a KL reference, AdamW, CPU offload, activation checkpointing and the
micro-batch's tokens. Each line is one kind of memory with the bytes it takes:

- state (exact): parameters, gradients and AdamW's two moments, sharded 1/N under
  FSDP2, whole on every rank under DDP; what ``Trainer.state_bytes`` reports (AdamW
  steps with torch's fused kernel, which makes no temporary: ``optimizer.py``);
- reference (exact): the frozen KL model, in bf16 under bf16 mixed precision;
- gathered (FSDP2): the units a rank holds whole at a time: the root (embeddings, head,
  final norm) and two decoder layers (the one running and the one prefetched), in the
  compute dtype, and one unit's unsharded gradient with the reduce-scatter's flat copy
  of it;
- activations: what backward keeps per token and layer, as autograd's saved-tensor
  hooks count it (the residual stream per layer with checkpointing and one layer
  recomputed, all of a layer's saved tensors without; eager attention's
  probabilities; autocast's weight copies), and the head's pass: the vocabulary
  chunk's backward and, except in one process (``head_logprobs.py``), the head
  weight's gradient it makes;
- start: the most a rank holds while it starts (the whole model on the old path, its
  shard when it starts sharded);
- the driver: the in-process engine's copy and the weight sync's buckets.

The estimate leaves out the allocator's slack and fragmentation; docs/scale_out.md
holds the plan's figures against measured ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reinforge.trainer.trainer_config import TrainerConfig

GIB = 2**30
_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
#: positions per chunk of the vocabulary projection (``token_logprobs.VOCAB_CHUNK``)
VOCAB_CHUNK = 256


@dataclass(frozen=True)
class ModelShape:
    """A Llama/Qwen2-shaped decoder, as its ``config.json`` describes it."""

    hidden: int
    layers: int
    vocab: int
    intermediate: int
    heads: int
    kv_heads: int
    tied: bool = True
    #: q/k/v projections with a bias (Qwen2)
    qkv_bias: bool = False
    name: str = ""

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def layer_parameters(self) -> int:
        kv = self.kv_heads * self.head_dim
        attention = 2 * self.hidden * self.hidden + 2 * self.hidden * kv
        bias = (self.hidden + 2 * kv) if self.qkv_bias else 0
        return attention + bias + 3 * self.hidden * self.intermediate + 2 * self.hidden

    @property
    def root_parameters(self) -> int:
        """Embeddings, final norm and the head (when not tied to the embeddings)."""
        head = 0 if self.tied else self.vocab * self.hidden
        return self.vocab * self.hidden + head + self.hidden

    @property
    def parameters(self) -> int:
        return self.layers * self.layer_parameters + self.root_parameters

    @classmethod
    def from_config(cls, config: dict[str, Any], name: str = "") -> ModelShape:
        """From a HF ``config.json``'s fields (a VLM's ``text_config`` for its decoder)."""
        text = config.get("text_config") or config
        try:
            return cls(
                hidden=int(text["hidden_size"]),
                layers=int(text["num_hidden_layers"]),
                vocab=int(text["vocab_size"]),
                intermediate=int(text["intermediate_size"]),
                heads=int(text["num_attention_heads"]),
                kv_heads=int(text.get("num_key_value_heads") or text["num_attention_heads"]),
                tied=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", True))),
                qkv_bias=text.get("model_type") == "qwen2" or bool(text.get("attention_bias")),
                name=name,
            )
        except KeyError as exc:
            raise ValueError(
                f"{name or 'config.json'}: no field {exc} for the memory plan"
            ) from None

    @classmethod
    def from_path(cls, model_path: str | Path) -> ModelShape:
        path = Path(model_path) / "config.json"
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"memory plan: cannot read {path} ({exc})") from None
        return cls.from_config(config, name=str(model_path))


#: public shapes of models too large to keep here (their config.json fields)
KNOWN_SHAPES: dict[str, ModelShape] = {
    "qwen2.5-1.5b": ModelShape(1536, 28, 151936, 8960, 12, 2, True, True, "qwen2.5-1.5b"),
    "qwen2.5-7b": ModelShape(3584, 28, 152064, 18944, 28, 4, False, True, "qwen2.5-7b"),
    "qwen2.5-14b": ModelShape(5120, 48, 152064, 13824, 40, 8, False, True, "qwen2.5-14b"),
}


@dataclass(frozen=True)
class RunShape:
    """What the plan needs beyond the trainer section (from the rest of the config)."""

    #: tokens of one micro-batch when ``trainer.micro_batch_tokens`` is not set:
    #: ``micro_batch_size`` rows of this length (prompt + response)
    row_tokens: int = 512
    #: the in-process engine's weight dtype (``model.hf.dtype``); None: no engine in
    #: the driver's memory (vLLM servers, a remote engine, mock)
    engine_dtype: str | None = "float32"
    #: the weight sync's bucket size; None: the whole state dict at once
    bucket_bytes: int | None = 256 * 2**20
    #: a process's own memory before any model (Python, torch, transformers): measured
    #: here on the CPU (docs/scale_out.md); a CUDA context adds ~0.5 GiB on each GPU
    runtime_bytes: int = int(0.55 * GIB)
    #: ``trainer.mixed_precision`` resolved for the device ("no", "bf16", "fp16");
    #: None: the config's, with ``auto`` as bf16 (the GPUs a plan is mostly for)
    mixed_precision: str | None = None
    #: the trainer runs on the CPU (``attn_implementation: auto`` is eager there for
    #: rows up to 512 tokens, SDPA on GPUs)
    cpu: bool = False
    #: the share of a row's tokens that are response tokens (the vocabulary
    #: projection runs on those only)
    response_share: float = 0.5


@dataclass
class MemoryPlan:
    """Bytes per item for one trainer rank and for the driver process."""

    shape: ModelShape
    world_size: int
    strategy: str
    rank: dict[str, int] = field(default_factory=dict)
    driver: dict[str, int] = field(default_factory=dict)
    #: the most one rank holds while it starts
    start_bytes: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def state_bytes(self) -> int:
        """What ``Trainer.state_bytes`` reports: trainable parameters, gradients, AdamW."""
        return sum(self.rank.get(k, 0) for k in ("trainable", "gradients", "optimizer"))

    @property
    def rank_total(self) -> int:
        """The most a rank holds during a step: what lives through the step (the
        gradients included: a step of several micro-batches keeps them from its first
        backward on) and the passes' memory (activations, FSDP2's gathered units and
        unsharded gradient). The fused optimizer step adds nothing to it."""
        return sum(self.rank.values())

    @property
    def driver_total(self) -> int:
        return sum(self.driver.values())

    def lines(self) -> list[str]:
        """The plan as short lines (GiB), for a terminal."""
        where = (
            "one process" if self.world_size == 1 else f"{self.world_size} ranks, {self.strategy}"
        )
        who = "the trainer (in the driver's process)" if self.world_size == 1 else "each rank"
        out = [
            f"model {self.shape.name or '?'}: {self.shape.parameters / 1e9:.2f}B parameters ({where})",
            f"{who} at most {self.rank_total / GIB:.2f} GiB during a step:",
        ]
        out += [f"  {k}: {v / GIB:.2f} GiB" for k, v in self.rank.items() if v]
        out.append(f"{who} while it starts: {self.start_bytes / GIB:.2f} GiB")
        besides = " besides the trainer" if self.world_size == 1 else ""
        out.append(f"the driver{besides}: {self.driver_total / GIB:.2f} GiB")
        out += [f"  {k}: {v / GIB:.2f} GiB" for k, v in self.driver.items() if v]
        return out + self.notes


def _adapter_parameters(shape: ModelShape, cfg: TrainerConfig) -> int:
    """LoRA's A and B over every targeted projection of every layer."""
    kv = shape.kv_heads * shape.head_dim
    h, i = shape.hidden, shape.intermediate
    sizes = {
        "q_proj": (h, h),
        "k_proj": (h, kv),
        "v_proj": (h, kv),
        "o_proj": (h, h),
        "gate_proj": (h, i),
        "up_proj": (h, i),
        "down_proj": (i, h),
    }
    per_layer = sum(
        cfg.lora.r * (fan_in + fan_out)
        for name, (fan_in, fan_out) in sizes.items()
        if name in cfg.lora.target_modules
    )
    return shape.layers * per_layer


def saved_bytes_per_token(
    shape: ModelShape, compute_bytes: int, autocast: bool, eager_row_length: int | None
) -> int:
    """What backward keeps of one decoder layer for each token, as autograd's
    saved-tensor hooks count it (SmolLM2 in fp32 and under bf16 autocast, eager and
    SDPA attention; tests/trainer/test_memory_plan.py checks it on a model).
    ``compute_bytes``: the forward's dtype; ``eager_row_length``: the row length under
    eager attention, None under SDPA. Autocast's copies of the weights are apart
    (per layer, not per token)."""
    h, i, kv = shape.hidden, shape.intermediate, shape.kv_heads * shape.head_dim
    a = compute_bytes
    # both RMSNorms keep their input and its normalised value in fp32
    norms = 4 * h * 4
    # the norms' outputs as the projections take them: under autocast q/k/v and
    # gate/up each keep their own cast copy (autocast's cache is off), else one each
    inputs = (5 if autocast else 2) * h * a
    # gate, its SiLU, up and their product (down_proj's input)
    mlp = 4 * i * a
    if eager_row_length is not None:
        # q and k after rotary, k and v repeated to every head, o_proj's input; each
        # head's row of probabilities (softmax in fp32, and its cast under autocast)
        attention = 4 * h * a + shape.heads * eager_row_length * (4 + (a if autocast else 0))
    else:  # SDPA: q after rotary, its output, k and v once per KV head, a logsumexp
        attention = (2 * h + 2 * kv) * a + shape.heads * 4
    return norms + inputs + mlp + attention


def _activations(
    shape: ModelShape, cfg: TrainerConfig, run: RunShape, a: int, strategy: str, autocast: bool
) -> dict[str, int]:
    """One micro-batch's forward and backward at their peak (the head's backward, when
    every layer's saved tensors still exist), by kind:

    - layers: each layer's saved tensors (``saved_bytes_per_token``); with
      checkpointing only each layer's input (the fp32 residual stream) and, in
      backward, one layer recomputed at a time;
    - weight casts: bf16 autocast without FSDP2's bf16 gather keeps each linear's bf16
      weight copy for backward (all layers', or the recomputed layer's);
    - head: the final norm's saved tensors, the response positions' hidden rows, and the
      backward of one vocabulary chunk. In one process (``head_logprobs.py``): the
      chunk's logits, turned into their gradient in place, and under autocast the
      weight's bf16 copy; the weight's gradient goes into ``.grad``. Otherwise
      (``target_logprob.py``): the chunk's logits and their gradient, and the head
      weight's gradient the chunk makes (under autocast in bf16, then cast to fp32), a
      temporary beside the gradient where one exists already (under DDP; past the
      first chunk under FSDP2, whose unsharded gradient is counted apart).
    """
    from reinforge.trainer.attention import EAGER_MAX_COLUMNS

    rows = cfg.micro_batch_size
    tokens = cfg.micro_batch_tokens or rows * run.row_tokens
    row_length = min(run.row_tokens, tokens)
    responses = min(tokens, max(1, round(tokens * run.response_share)))
    eager = cfg.attn_implementation == "eager" or (
        cfg.attn_implementation == "auto" and run.cpu and row_length <= EAGER_MAX_COLUMNS
    )
    per_token = saved_bytes_per_token(shape, a, autocast, row_length if eager else None)
    casts = shape.layer_parameters * a if autocast and strategy != "fsdp2" else 0
    out: dict[str, int] = {}
    if cfg.checkpoint_activations:
        out["activations"] = shape.layers * tokens * shape.hidden * 4 + tokens * per_token + casts
    else:
        out["activations"] = shape.layers * (tokens * per_token + casts)
    chunk = min(VOCAB_CHUNK, responses)
    head = 2 * tokens * shape.hidden * 4 + responses * shape.hidden * 4
    weight = shape.vocab * shape.hidden
    if strategy == "single":
        head += chunk * shape.vocab * a + (weight * a if autocast else 0)
    else:
        head += 2 * chunk * shape.vocab * a
        if strategy != "fsdp2" or responses > VOCAB_CHUNK:  # FSDP2 gathers in bf16: no cast
            head += weight * (4 + (a if autocast and strategy != "fsdp2" else 0))
    out["head pass"] = head
    return out


def plan_memory(shape: ModelShape, cfg: TrainerConfig, run: RunShape | None = None) -> MemoryPlan:
    """The memory plan of ``cfg`` (its parallel section, precision, LoRA, algorithm) on
    a model of ``shape``."""
    from reinforge.algorithms import resolve_algorithm

    run = run or RunShape()
    n = cfg.parallel.world_size
    strategy = cfg.parallel.strategy if n > 1 else "single"
    share = n if strategy == "fsdp2" else 1
    dtype = _DTYPE_BYTES[cfg.dtype]
    precision = run.mixed_precision or cfg.mixed_precision.replace("auto", "bf16")
    bf16 = precision == "bf16"
    act = 2 if precision in ("bf16", "fp16") else dtype
    params = shape.parameters
    lora = cfg.lora.enabled
    trainable = _adapter_parameters(shape, cfg) if lora else params
    spec = resolve_algorithm(cfg.algorithm, cfg.algorithm_args)
    plan = MemoryPlan(shape=shape, world_size=n, strategy=strategy)
    r = plan.rank
    r["runtime"] = run.runtime_bytes
    tbytes = 4 if lora else dtype  # peft keeps adapters in fp32
    r["trainable"] = trainable * tbytes // share
    r["frozen base"] = (params * dtype // share) if lora else 0
    r["gradients"] = trainable * tbytes // share
    r["optimizer"] = 2 * trainable * tbytes // share
    if strategy == "ddp":
        r["ddp buckets"] = trainable * tbytes  # DDP's all-reduce copy of the gradients
    if spec.use_reference and not lora:
        r["reference"] = params * (2 if bf16 else dtype) // share
    if strategy == "fsdp2":
        compute = 2 if bf16 else dtype
        unit = 2 * shape.layer_parameters + shape.root_parameters
        r["gathered units"] = unit * compute
        if not lora:
            # the unit's gradient (in the gather's dtype) and the flat fp32 copy the
            # reduce-scatter fills from it before it is freed
            largest = max(shape.layer_parameters, shape.root_parameters)
            r["unsharded gradient"] = largest * (compute + 4)
    autocast = act < dtype  # fp32 weights, bf16/fp16 forward passes
    r.update(_activations(shape, cfg, run, act, strategy, autocast))
    if cfg.parallel.cpu_offload and strategy == "fsdp2":
        plan.notes.append(
            "cpu_offload: trainable, gradients and optimizer live in host memory; "
            "the GPU holds the gathered units and the activations"
        )
    whole = params * dtype + (r.get("reference", 0) * share)
    if strategy == "fsdp2":  # each rank reads its rows straight into its shards
        plan.start_bytes = run.runtime_bytes + whole // n
    else:
        plan.start_bytes = run.runtime_bytes + whole
    d = plan.driver
    d["runtime"] = run.runtime_bytes if n > 1 else 0
    if run.engine_dtype is not None:
        d["engine weights"] = params * _DTYPE_BYTES.get(run.engine_dtype, 4)
    merged = params * (2 if bf16 else dtype)
    d["sync"] = 2 * run.bucket_bytes if run.bucket_bytes else 3 * params * dtype
    if lora:
        d["sync"] = min(d["sync"], merged)
    return plan


def run_shape(config: Any) -> RunShape:
    """The parts of a whole run config (``reinforge.config.schema``) that the plan needs."""
    model = config.model
    length = (model.max_model_len or 0) or (model.max_response_tokens + 256)
    engine_dtype = model.hf.dtype if model.engine == "hf" else None
    if engine_dtype == "auto":
        engine_dtype = "bfloat16"
    sync = config.synchronizer
    buckets = getattr(sync, "weight_transport", "whole") == "buckets"
    bucket = getattr(sync, "bucket_mb", 256) * 2**20 if buckets else None
    on_gpu = config.trainer.device.startswith("cuda") or (
        config.trainer.device == "auto" and _cuda_available()
    )
    return RunShape(
        row_tokens=length,
        response_share=min(1.0, model.max_response_tokens / length),
        engine_dtype=engine_dtype,
        bucket_bytes=bucket,
        cpu=not on_gpu,
    )


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()
