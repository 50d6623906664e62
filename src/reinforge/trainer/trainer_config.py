"""The ``trainer`` config section: algorithm, optimiser, LoRA, micro-batching, staleness."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from reinforge.buffer.sft_dataset_config import SftDatasetConfig
from reinforge.core.strict_model import StrictModel
from reinforge.trainer.sharding.parallel_config import ParallelConfig


class LoraSettings(StrictModel):
    enabled: bool = False
    r: int = Field(16, ge=1)
    alpha: float = Field(32.0, gt=0)
    dropout: float = Field(0.0, ge=0, lt=1)
    target_modules: list[str] = Field(
        default_factory=lambda: [
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "gate_proj",
            "up_proj",
            "down_proj",
        ]
    )


class SftAuxConfig(SftDatasetConfig):
    """Demonstrations mixed into RL steps: an SFT loss term beside the policy loss."""

    weight: float = Field(
        0.1, ge=0, description="the SFT term's weight in the step's loss; 0 trains plain RL"
    )
    batch_size: int = Field(4, ge=1, description="demonstrations per RL step")


class TrainerConfig(StrictModel):
    algorithm: str = Field(
        "grpo",
        description="preset: grpo, dapo, gspo, rloo, reinforce_plus_plus, cispo, opmd, sft, "
        "multi_step_grpo, step_wise_grpo, gigpo",
    )
    algorithm_args: dict[str, Any] = Field(
        default_factory=dict,
        description="overrides of the preset's AlgorithmSpec fields, e.g. {kl_loss: none} or "
        "{sampler_correction: {type: tis, cap: 2.0}} (truncated importance sampling: each "
        "token's policy-gradient term weighted by min(pi_old/pi_sampler, cap))",
    )
    lr: float = Field(1e-6, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = Field(0, ge=0)
    max_grad_norm: float | None = Field(1.0, gt=0)
    micro_batch_size: int = Field(8, ge=1, description="sequences per forward/backward pass")
    micro_batch_tokens: int | None = Field(
        None,
        ge=1,
        description="at most this many padded tokens (rows x longest row) per "
        "forward/backward pass as well: long rows (multi-turn conversations) then come "
        "fewer to a micro-batch, so activation memory follows the tokens, not the row "
        "count; a longer row is a micro-batch of its own. None: micro_batch_size alone",
    )
    merge_step_prefixes: bool = Field(
        True,
        description="train each step-wise run (steps whose prompts hold the earlier "
        "steps' exact tokens) as one row with every step's response tokens and "
        "advantages, instead of one row per step: the same token-mean loss and "
        "gradient, with each token forwarded once (a run of T steps forwarded its first "
        "tokens T times). Only with loss_agg_mode token-mean and a token-level policy "
        "loss; other settings train the steps as they are",
    )
    share_prompts: bool = Field(
        True,
        description="run each prompt once per micro-batch for the rows that share it (a "
        "GRPO group's replies; multi-turn rows with the same first prompt): the rows go "
        "behind one copy of the prompt in a packed row, with the same loss and gradient "
        "and fewer tokens. Applies where rows share prompt ids and packing saves tokens, "
        "not with an entropy bonus or images; train/prompt_sharing/* say how much applied",
    )
    update_epochs: int = Field(1, ge=1, description="optimiser passes over each batch")
    lora: LoraSettings = Field(default_factory=LoraSettings)
    dtype: Literal["float32", "bfloat16"] = "float32"
    mixed_precision: Literal["no", "bf16", "fp16", "auto"] = Field(
        "no",
        description="bf16: run the forward passes (policy and reference) under bfloat16 "
        "autocast while weights, gradients and optimizer state stay in `dtype`; much "
        "faster on CPUs with AVX-512 BF16 / AMX and on GPUs from Ampere on, many times "
        "slower where it is emulated (AVX2-only CPUs, older GPUs); fp16: float16 autocast "
        "with a gradient scaler (GPUs); auto: bf16 where it is native, fp16 on an older "
        "GPU, else no",
    )
    device: str = Field(
        "auto",
        pattern=r"^(auto|cpu|cuda(:\d+)?)$",
        description="where the policy, the reference model and the optimizer live: auto "
        "(CUDA when present, else cpu), cpu, cuda or cuda:N. With several ranks on CUDA, "
        "rank r uses GPU r (the base index shifts them)",
    )
    parallel: ParallelConfig = Field(default_factory=ParallelConfig)
    gradient_checkpointing: bool | None = Field(
        None,
        description="recompute each decoder layer's activations in backward instead of "
        "keeping them (less memory, ~1/3 more compute); None: on with several trainer "
        "ranks (parallel.world_size > 1, where models are large), off in one process",
    )
    attn_implementation: Literal["auto", "sdpa", "eager"] = Field(
        "auto",
        description="attention kernel of the forward passes; auto: eager for CPU "
        "micro-batches up to 512 tokens per row (faster there), sdpa otherwise",
    )
    old_logprobs: Literal["trainer", "sampler"] = Field(
        "trainer",
        description="what the PPO-style ratio divides by. trainer: for experiences sampled "
        "by the weights being trained (model_version equal to the trainer's), the trainer's "
        "own log-probs from the step's first pass (the exact pi_old; the engine's differ by "
        "its numerics: bf16, another kernel); stale experiences always use the sampler's. "
        "sampler: always the log-probs the engine reported",
    )
    max_staleness: int | None = Field(
        None,
        ge=0,
        description="drop experiences whose model_version is older than this many versions",
    )
    sft_aux: SftAuxConfig | None = Field(
        None,
        description="Trinity-RFT's auxiliary SFT buffer: every RL step also takes the SFT "
        "loss of `batch_size` demonstrations, weighted by `weight`",
    )
    seed: int = 0

    @property
    def checkpoint_activations(self) -> bool:
        """``gradient_checkpointing`` with its default resolved."""
        if self.gradient_checkpointing is None:
            return self.parallel.world_size > 1
        return self.gradient_checkpointing

    @model_validator(mode="after")
    def _correction_needs_trainer_pi_old(self) -> TrainerConfig:
        correction = self.algorithm_args.get("sampler_correction")
        if correction is not None and self.old_logprobs == "sampler":
            raise ValueError(
                "algorithm_args.sampler_correction needs old_logprobs: trainer; with "
                "old_logprobs: sampler pi_old already is the sampler's log-prob, so the "
                "correction's weight pi_old/pi_sampler would be 1 on every token"
            )
        return self
