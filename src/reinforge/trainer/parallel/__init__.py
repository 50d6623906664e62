"""The trainer on several ranks (torch.distributed): config, plan, strategies, the ranks."""
