"""The explorer: runs workflows concurrently against the current policy.

Names load on first use, so the config section (``ExplorerConfig``) can be read
without importing the explorer's machinery (workflows, rewards, engines).
"""

from __future__ import annotations

from reinforge.core.lazy_exports import lazy_exports

_EXPORTS = {
    "TasksetCursor": "reinforge.explorer.cursor",
    "eval_metrics": "reinforge.explorer.eval_metrics",
    "Explorer": "reinforge.explorer.explorer",
    "ExploreSummary": "reinforge.explorer.step_stats",
    "StepOutput": "reinforge.explorer.step_stats",
    "ExplorerConfig": "reinforge.explorer.explorer_config",
    "TaskRequest": "reinforge.explorer.messages",
    "TaskResult": "reinforge.explorer.messages",
    "Reporter": "reinforge.explorer.reporter",
    "WorkflowRunner": "reinforge.explorer.runner",
    "Scheduler": "reinforge.explorer.scheduler",
    "make_requests": "reinforge.explorer.scheduler",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
