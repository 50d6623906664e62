"""The ``trainer.parallel`` config section: how many trainer ranks, and how they split
the model."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reinforge.core.strict_model import StrictModel


class ParallelConfig(StrictModel):
    """``world_size: 1`` trains in the run's own process (no process group). More ranks
    run as child processes (``cluster.backend: local``) that join one
    ``torch.distributed`` group: gloo on the CPU, NCCL on CUDA."""

    world_size: int = Field(1, ge=1, description="trainer ranks; 1 trains in process")
    strategy: Literal["ddp", "fsdp2"] = Field(
        "ddp",
        description="ddp: every rank holds the whole model and AdamW state, gradients are "
        "all-reduced; fsdp2: parameters, gradients and optimizer state are sharded across "
        "the ranks (torch's fully_shard), each decoder layer gathered for its forward",
    )
    cpu_offload: bool = Field(
        False,
        description="fsdp2 only: keep the sharded parameters and optimizer state in host "
        "memory between uses (for models whose shards do not fit the GPU)",
    )
    timeout_s: float = Field(
        1800.0,
        gt=0,
        description="deadline for one rank command (a step, a weight gather, a checkpoint) "
        "and for each collective: a rank that dies or hangs fails the step, naming it",
    )
    threads_per_rank: int | None = Field(
        None,
        ge=1,
        description="torch threads of each rank on the CPU (default: the machine's cores "
        "divided by world_size; ranks sharing cores with default threads run many times "
        "slower)",
    )
    share_gpus: bool = Field(
        False,
        description="let trainer ranks use GPUs that the vLLM engines reinforge starts use "
        "(by default each gets GPUs of its own: the engines the first ones, the ranks the "
        "next; too few GPUs is an error)",
    )
    listen: str | None = Field(
        None,
        description="host:port where the driver waits for trainer ranks that a launcher "
        "(torchrun, srun, a Kubeflow PyTorchJob) starts; reinforge then starts no rank "
        "itself. The ranks get it as REINFORGE_DRIVER, and the same secret as the driver "
        "in REINFORGE_RANK_AUTHKEY (docs/scale_out.md)",
        pattern=r"^[^:\s]+:\d+$",
    )
