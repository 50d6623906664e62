"""Email search (the ART-E task): a synthetic company mailbox, SQLite FTS5 search and tools.

``generate_mailbox`` draws the emails and the questions about them; ``Mailbox`` makes
them searchable per inbox; ``EmailTools`` runs an agent's tool calls
(``TOOL_SCHEMAS``) against one inbox and records what the agent found, read and answered.

Names load on first use, so ``python -m reinforge.workflows.envs.email.generate`` runs
the generator without the package having imported it already.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reinforge.core.lazy_exports import lazy_exports

_GENERATE = "reinforge.workflows.envs.email.generate"
_MAILBOX = "reinforge.workflows.envs.email.mailbox"
_TOOLS = "reinforge.workflows.envs.email.tools"
_EXPORTS = {
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
    "EmailTools",
    "Mailbox",
    "check_arguments",
    "fts_query",
    "generate_mailbox",
    "split_queries",
]

if TYPE_CHECKING:
    from reinforge.workflows.envs.email.generate import generate_mailbox, split_queries
    from reinforge.workflows.envs.email.mailbox import MAX_RESULTS, Mailbox, fts_query
    from reinforge.workflows.envs.email.tools import (
        READ_EMAIL,
        RETURN_FINAL_ANSWER,
        SEARCH_EMAILS,
        TOOL_SCHEMAS,
        EmailTools,
        check_arguments,
    )

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
