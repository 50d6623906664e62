"""What a trainer process needs to train as one of several ranks: the strategy that wraps
the model (single, DDP, FSDP2), which rank trains which micro-batch, the sharded
optimizer state, the metrics gathered over the ranks, and the ``trainer.parallel``
config section. Below :class:`~reinforge.trainer.trainer.Trainer`; it never imports the
rank processes and their handle (``trainer.parallel``), which sit above it."""
