"""Task scheduling: the training taskset read in an order a selector chooses, fed back
the pass rate each task measured.

Trinity-RFT's ``trinity.buffer.task_scheduler`` holds, per taskset, a selector
(:mod:`reinforge.buffer.task_selectors`) and feeds it the pass rates its
``pass_rate_calculator`` operator measured from ``exp.info["task_index"]``. Here the
explorer does both itself: :class:`TaskScheduler` picks each step's tasks and, once the
step has run, takes the mean reward of every task from that step's experiences (the
same quantity upstream's operator computes), so no operator has to be configured. Its
state (selector position and estimates) is stored with the explorer's taskset cursor
in the step's own buffer transaction, so a resumed run continues the same schedule.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from statistics import fmean
from typing import Any

from reinforge.buffer.task_selectors import BaseSelector, TaskSource, build_selector
from reinforge.buffer.taskset_config import DataSelectorConfig
from reinforge.core import Experience, Task

#: the metrics a step's feedback reports (prefixed like Trinity's ``selection/`` ones)
MEAN_PASS_RATE = "selection/mean_pass_rate"
VALID_RATIO = "selection/valid_ratio"


def task_pass_rates(
    exps: Iterable[Experience], taskset_id: int = 0
) -> tuple[list[int], list[float]]:
    """(task positions, mean reward of each) over ``exps`` of taskset ``taskset_id``.

    An experience names its task by ``info["task_index"]`` (``taskset_id``, ``index``),
    as in Trinity-RFT; one without it, or without a reward, is not counted.
    """
    rewards: dict[int, list[float]] = defaultdict(list)
    for exp in exps:
        where = exp.info.get("task_index") if exp.info else None
        if not isinstance(where, dict) or "index" not in where or exp.reward is None:
            continue
        if int(where.get("taskset_id", 0)) == taskset_id:
            rewards[int(where["index"])].append(float(exp.reward))
    indices = sorted(rewards)
    return indices, [fmean(rewards[i]) for i in indices]


class TaskScheduler:
    """Chooses the tasks of each explore step for one training taskset."""

    def __init__(self, tasks: Sequence[Task], config: DataSelectorConfig) -> None:
        self.config = config
        rows = [t.raw_task if isinstance(t.raw_task, dict) else {} for t in tasks]
        self.selector: BaseSelector = build_selector(config, TaskSource.from_rows(rows))

    def select(self, n: int, exclude: Collection[int] = ()) -> list[int]:
        """Positions of the next ``n`` tasks, none of ``exclude`` (this step's)."""
        return [int(i) for i in self.selector.get_indices(n, exclude=set(exclude))]

    def feedback(self, exps: Iterable[Experience]) -> dict[str, float]:
        """Give the selector the pass rates measured in one step; metrics on them."""
        indices, rates = task_pass_rates(exps)
        if not indices:
            return {}
        self.selector.feedback(indices, rates)
        return {
            MEAN_PASS_RATE: fmean(rates),
            VALID_RATIO: sum(0 < r < 1 for r in rates) / len(rates),
        }

    def state_dict(self) -> dict[str, Any]:
        return {"selector_type": self.config.selector_type, **self.selector.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        stored = state.get("selector_type")
        if stored is not None and stored != self.config.selector_type:
            raise ValueError(
                f"the run was started with data_selector '{stored}', now "
                f"'{self.config.selector_type}': a run resumes with the selector it began with"
            )
        self.selector.load_state_dict(state)


def build_scheduler(
    tasks: Sequence[Task], config: DataSelectorConfig | None
) -> TaskScheduler | None:
    """A scheduler for ``config``; None for none or ``sequential`` (the cursor's own order)."""
    if config is None or config.selector_type == "sequential":
        return None
    return TaskScheduler(tasks, config)
