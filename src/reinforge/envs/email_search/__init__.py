"""Email search (the ART-E task): a synthetic company mailbox, SQLite FTS5 search and tools,
and ``email_search_workflow`` (``workflow.py``), an agent that answers questions from one inbox.

``generate_mailbox`` draws the emails and the questions about them; ``Mailbox`` makes
them searchable per inbox; ``EmailTools`` runs an agent's tool calls
(``TOOL_SCHEMAS``) against one inbox and records what the agent found, read and answered.

Names load on first use, so ``python -m reinforge.envs.email_search.generate`` runs
the generator without the package having imported it already.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reinforge.core.lazy_exports import lazy_exports

_GENERATE = "reinforge.envs.email_search.generate"
_MAILBOX = "reinforge.envs.email_search.mailbox"
_TOOLS = "reinforge.envs.email_search.tools"
_EXPORTS = {
    "EmailSearchWorkflow": "reinforge.envs.email_search.workflow",
    "generate_mailbox": _GENERATE,
    "split_queries": _GENERATE,
    "MAX_RESULTS": _MAILBOX,
    "Mailbox": _MAILBOX,
    "fts_query": _MAILBOX,
    "READ_EMAIL": _TOOLS,
    "RETURN_FINAL_ANSWER": _TOOLS,
    "SEARCH_EMAILS": _TOOLS,
    "TOOL_SCHEMAS": _TOOLS,
    "EmailTools": _TOOLS,
    "check_arguments": _TOOLS,
}

__all__ = [
    "MAX_RESULTS",
    "READ_EMAIL",
    "RETURN_FINAL_ANSWER",
    "SEARCH_EMAILS",
    "TOOL_SCHEMAS",
    "EmailSearchWorkflow",
    "EmailTools",
    "Mailbox",
    "check_arguments",
    "fts_query",
    "generate_mailbox",
    "split_queries",
]

if TYPE_CHECKING:
    from reinforge.envs.email_search.generate import generate_mailbox, split_queries
    from reinforge.envs.email_search.mailbox import MAX_RESULTS, Mailbox, fts_query
    from reinforge.envs.email_search.tools import (
        READ_EMAIL,
        RETURN_FINAL_ANSWER,
        SEARCH_EMAILS,
        TOOL_SCHEMAS,
        EmailTools,
        check_arguments,
    )
    from reinforge.envs.email_search.workflow import EmailSearchWorkflow

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
