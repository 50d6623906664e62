"""The email agent's tools: OpenAI function schemas and a runner that never raises.

The inbox being searched is fixed by the task, so it is not a tool parameter. Every
call returns an observation string (JSON) for the agent: a result, or ``{"error": ...}``
saying what was wrong with the call. The runner also keeps what a reward function
needs: which message ids the agent found and read, how many calls were malformed, and
the final answer.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from reinforge.envs.email_search.mailbox import MAX_RESULTS, Mailbox

logger = logging.getLogger(__name__)

SEARCH_EMAILS = {
    "type": "function",
    "function": {
        "name": "search_emails",
        "description": (
            "Search the user's mailbox for emails containing ALL of the given keywords in "
            "the subject or body. Returns up to max_results matches, newest first, each "
            "with its message_id and a snippet where matched words are wrapped in <b></b>."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "keywords": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Words or short phrases that must all appear in the email.",
                },
                "from_addr": {
                    "type": "string",
                    "description": "Only emails sent by this address.",
                },
                "to_addr": {
                    "type": "string",
                    "description": "Only emails sent to this address (to, cc or bcc).",
                },
                "sent_after": {
                    "type": "string",
                    "description": "Only emails sent on or after this date, YYYY-MM-DD.",
                },
                "sent_before": {
                    "type": "string",
                    "description": "Only emails sent before this date, YYYY-MM-DD.",
                },
                "max_results": {
                    "type": "integer",
                    "description": f"How many results to return, 1 to {MAX_RESULTS} (default {MAX_RESULTS}).",
                },
            },
            "required": ["keywords"],
        },
    },
}

READ_EMAIL = {
    "type": "function",
    "function": {
        "name": "read_email",
        "description": "Read the full email (headers and body) with the given message_id.",
        "parameters": {
            "type": "object",
            "properties": {
                "message_id": {
                    "type": "string",
                    "description": "The message_id exactly as a search returned it.",
                },
            },
            "required": ["message_id"],
        },
    },
}

RETURN_FINAL_ANSWER = {
    "type": "function",
    "function": {
        "name": "return_final_answer",
        "description": (
            "Give the final answer to the user's question and end the search. If the "
            'mailbox does not hold the answer, answer "I don\'t know" with empty sources.'
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "answer": {"type": "string", "description": "The answer to the question."},
                "sources": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "The message_ids of the emails the answer comes from.",
                },
            },
            "required": ["answer", "sources"],
        },
    },
}

TOOL_SCHEMAS: list[dict[str, Any]] = [SEARCH_EMAILS, READ_EMAIL, RETURN_FINAL_ANSWER]
_BY_NAME = {schema["function"]["name"]: schema["function"]["parameters"] for schema in TOOL_SCHEMAS}
TRUNCATION_MARKER = "\n...[observation truncated: {n} more characters]"


def _type_ok(value: Any, spec: dict[str, Any]) -> bool:
    kind = spec["type"]
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list) and all(_type_ok(v, spec["items"]) for v in value)
    raise AssertionError(f"schema type {kind!r} is not handled")


def check_arguments(name: str, arguments: str | dict[str, Any] | None) -> dict[str, Any]:
    """The call's arguments as a dict, checked against the tool's schema; else ValueError.

    ``arguments`` may be the JSON text a model produced or an already parsed dict; an
    empty string means no arguments. Optional arguments given as null count as absent.
    """
    schema = _BY_NAME.get(name) if isinstance(name, str) else None
    if schema is None:
        raise ValueError(f"unknown tool {name!r}; the tools are {', '.join(_BY_NAME)}")
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as e:
            raise ValueError(f"the arguments of {name} are not valid JSON: {e}") from None
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {name} must be a JSON object")
    props, required = schema["properties"], schema["required"]
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        raise ValueError(f"{name} got unknown arguments {unknown}; it takes {sorted(props)}")
    args = {k: v for k, v in arguments.items() if v is not None or k in required}
    missing = [k for k in required if k not in args]
    if missing:
        raise ValueError(f"{name} is missing required arguments {missing}")
    for key, value in args.items():
        spec = props[key]
        if not _type_ok(value, spec):
            want = spec["type"] + (" of strings" if spec["type"] == "array" else "")
            raise ValueError(f"argument {key} of {name} must be a {want}, got {value!r}")
    return args


class EmailTools:
    """Runs the agent's tool calls against one inbox of ``mailbox`` and records them.

    ``read_email`` only opens mail the inbox sent or received; any other id reads as
    unknown. Records: ``found_ids`` (message ids any search returned) and ``read_ids`` (ids read),
    each once in first-seen order; ``invalid_reads`` (reads of ids that do not exist);
    ``bad_calls`` (malformed calls: unknown tool, bad JSON or arguments, or arguments
    the mailbox rejected); ``final_answer`` (``{"answer", "sources"}`` of the latest
    ``return_final_answer`` call, else None). Observations longer than
    ``observation_char_limit`` are cut, ending with a marker that says so. A mailbox
    that raises is the environment failing, not the agent: the agent reads an error
    and a WARNING names the tool, the task (``task_id``) and the exception.
    """

    def __init__(
        self,
        mailbox: Mailbox,
        inbox: str,
        observation_char_limit: int = 2000,
        task_id: Any = None,
    ):
        self.mailbox = mailbox
        self.inbox = inbox
        self.observation_char_limit = observation_char_limit
        self.task_id = task_id
        self.found_ids: list[str] = []
        self.read_ids: list[str] = []
        self.invalid_reads = 0
        self.bad_calls = 0
        self.final_answer: dict[str, Any] | None = None

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The tools to offer the model (``tools=`` of a chat completion)."""
        return TOOL_SCHEMAS

    def call(self, name: str, arguments: str | dict[str, Any] | None) -> str:
        """Run one tool call; the observation text for the agent (never raises)."""
        try:
            args = check_arguments(name, arguments)
            result = getattr(self, f"_{name}")(**args)
        except ValueError as e:
            self.bad_calls += 1
            return self._limit(json.dumps({"error": str(e)}))
        except Exception as e:  # the mailbox failed, not the agent: report, don't count
            logger.warning(
                "email tool %s failed for task %r (inbox %s): %s: %s",
                name,
                self.task_id,
                self.inbox,
                type(e).__name__,
                e,
                exc_info=True,
            )
            return self._limit(json.dumps({"error": f"the tool failed: {type(e).__name__}: {e}"}))
        return self._limit(json.dumps(result, ensure_ascii=False))

    def _search_emails(self, **args: Any) -> list[dict[str, str]]:
        results = self.mailbox.search_emails(self.inbox, **args)
        for hit in results:
            if hit["message_id"] not in self.found_ids:
                self.found_ids.append(hit["message_id"])
        return results

    def _read_email(self, message_id: str) -> dict[str, Any]:
        email = self.mailbox.read_email(message_id)
        if email is not None and not self._in_inbox(email):
            email = None  # another inbox's mail: as unknown to this agent as a made-up id
        if email is None:
            self.invalid_reads += 1
            return {"error": f"no email has message_id {message_id!r}"}
        if email["message_id"] not in self.read_ids:
            self.read_ids.append(email["message_id"])
        return email

    def _in_inbox(self, email: dict[str, Any]) -> bool:
        inbox = self.inbox.strip().lower()
        people = [email["from_address"], *email["to_addresses"], *email["cc_addresses"]]
        return inbox in [*people, *email["bcc_addresses"]]

    def _return_final_answer(self, answer: str, sources: list[str]) -> dict[str, str]:
        self.final_answer = {"answer": answer, "sources": list(sources)}
        return {"status": "final answer recorded"}

    def _limit(self, text: str) -> str:
        limit = self.observation_char_limit
        if len(text) <= limit:
            return text
        # size the marker for the largest count it could show, so the result fits the limit
        keep = max(limit - len(TRUNCATION_MARKER.format(n=len(text))), 0)
        return text[:keep] + TRUNCATION_MARKER.format(n=len(text) - keep)
