"""The trainer on several ranks, as processes: the rank entry (``rank_worker``), the
driver's handle on them (``ranked_trainer``), and how they are started (child processes,
Ray actors, a launcher's). Above :class:`~reinforge.trainer.trainer.Trainer`; what a rank
needs inside the trainer (strategy, rank plan, sharded optimizer) is ``trainer.sharding``."""
