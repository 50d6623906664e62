"""Mirror of ``trinity.buffer.task_scheduler``.

Upstream's scheduler is built by its explorer from the whole Trinity config; reinforge's
explorer builds :class:`~reinforge.buffer.task_scheduler.TaskScheduler` from the
training taskset's ``data_selector`` section the same way, so user code only names a
selector in YAML. The class is exported under upstream's name for code that reads
``state_dict()`` or calls ``feedback``; its constructor takes the loaded tasks and the
``data_selector`` config instead of upstream's ``(explorer_state, config)``.
"""

from reinforge.buffer.task_scheduler import TaskScheduler, task_pass_rates

TasksetScheduler = TaskScheduler
TasksetSchedulerBase = TaskScheduler

__all__ = ["TasksetScheduler", "TasksetSchedulerBase", "task_pass_rates"]
