"""The explorer: runs workflows concurrently against the current policy."""

from reinforge.explorer.eval_metrics import eval_metrics
from reinforge.explorer.explorer import Explorer, ExploreSummary
from reinforge.explorer.explorer_config import ExplorerConfig
from reinforge.explorer.messages import TaskRequest, TaskResult
from reinforge.explorer.reporter import Reporter
from reinforge.explorer.runner import WorkflowRunner
from reinforge.explorer.scheduler import Scheduler, make_requests

__all__ = [
    "ExploreSummary",
    "Explorer",
    "ExplorerConfig",
    "Reporter",
    "Scheduler",
    "TaskRequest",
    "TaskResult",
    "WorkflowRunner",
    "eval_metrics",
    "make_requests",
]
