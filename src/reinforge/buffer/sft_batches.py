"""The batches of an SFT dataset, step by step: shuffled per epoch and length-bucketed.

The batch of step ``k`` is a pure function of the dataset, the seed and ``k``, so a
resumed run (which knows only its last trained step) trains exactly the batches the
interrupted one would have.

Length bucketing: each epoch's shuffled order is cut into windows of
``length_bucket_window`` batches; a window is sorted by token count, cut into
batches, and those batches are put back in a shuffled order. A batch then holds
rows of similar length (less padding in its micro-batches) while the epoch still
visits lengths in random order. Packing several conversations into one row was not
chosen: it needs attention masks that keep the conversations apart.
"""

from __future__ import annotations

import math
import random
from functools import lru_cache

from reinforge.core import Experience


class SftBatches:
    """Step ``k`` (1-based) -> its batch of demonstrations; epochs repeat as needed."""

    def __init__(
        self,
        experiences: list[Experience],
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 42,
        window: int = 16,
    ) -> None:
        if not experiences:
            raise ValueError("an SFT dataset needs at least one conversation")
        self.experiences = experiences
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.window = window
        self.steps_per_epoch = math.ceil(len(experiences) / batch_size)

    def planned_steps(self, total_epochs: int, total_steps: int | None) -> int:
        """Steps of a run: ``total_steps`` when set, else every batch of every epoch."""
        return total_steps if total_steps is not None else self.steps_per_epoch * total_epochs

    def batch(self, step: int) -> list[Experience]:
        if step < 1:
            raise ValueError(f"steps count from 1, got {step}")
        epoch, index = divmod(step - 1, self.steps_per_epoch)
        return [self.experiences[i] for i in self._epoch_batches(epoch)[index]]

    @lru_cache(maxsize=2)  # noqa: B019 - one epoch's plan at a time, per dataset object
    def _epoch_batches(self, epoch: int) -> list[list[int]]:
        rng = random.Random(f"{self.seed}:{epoch}")
        order = list(range(len(self.experiences)))
        if self.shuffle:
            rng.shuffle(order)
        size = self.batch_size
        span = size * self.window
        batches: list[list[int]] = []
        for start in range(0, len(order), span):
            chunk = order[start : start + span]
            if self.window > 1:
                chunk.sort(key=lambda i: len(self.experiences[i].tokens))
            window = [chunk[i : i + size] for i in range(0, len(chunk), size)]
            if self.shuffle:
                rng.shuffle(window)
            batches.extend(window)
        return batches
