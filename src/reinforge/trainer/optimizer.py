"""The trainer's optimiser and learning-rate schedule (fp16's gradient scaler is the
parallel strategy's: ``sharding/strategy.py``).

Split out of ``trainer.py`` (house rules): how they are built is configuration, not
the step; the step only calls them.
"""

from __future__ import annotations

import torch

from reinforge.trainer.policy_model import trainable_parameters
from reinforge.trainer.trainer_config import TrainerConfig


def build_optimizer(
    model: torch.nn.Module, cfg: TrainerConfig
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """AdamW over the trainable parameters and its linear warm-up to ``cfg.lr``."""
    optimizer = torch.optim.AdamW(
        trainable_parameters(model), lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay
    )
    warmup = cfg.warmup_steps
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) if warmup else 1.0
    )
    return optimizer, scheduler
