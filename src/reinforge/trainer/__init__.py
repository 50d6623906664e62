"""Training: the policy model, one optimiser step per batch, weight sync and checkpoints."""
