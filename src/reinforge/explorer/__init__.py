"""The explorer: runs workflows concurrently against the current policy."""

from reinforge.explorer.cursor import TasksetCursor
from reinforge.explorer.eval_metrics import eval_metrics
from reinforge.explorer.explorer import Explorer, ExploreSummary, StepOutput
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
    "StepOutput",
    "TaskRequest",
    "TaskResult",
    "TasksetCursor",
    "WorkflowRunner",
    "eval_metrics",
    "make_requests",
]
