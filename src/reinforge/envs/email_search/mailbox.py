"""A read-only mailbox in SQLite with full-text search (FTS5), shared by many workflow threads.

The emails are written once into a database file (a temporary one unless a path is
given); after that every thread reads it through its own read-only connection, so
searches run in parallel and none can change the data. Searches see only the mail an
inbox sent or received (to, cc or bcc), require every keyword, and return the newest
matches first with an FTS5 snippet. Mistakes an agent can make (no keywords, a bad date,
too many results asked for) raise ``ValueError`` with a message meant to be shown to it.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import tempfile
import threading
import weakref
from collections.abc import Iterable
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

MAX_RESULTS = 10

_SCHEMA = """
CREATE TABLE emails (
    id INTEGER PRIMARY KEY,
    message_id TEXT NOT NULL UNIQUE,
    date TEXT NOT NULL,
    subject TEXT NOT NULL,
    from_address TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE recipients (
    email_id INTEGER NOT NULL REFERENCES emails(id),
    recipient_address TEXT NOT NULL,
    recipient_type TEXT NOT NULL CHECK (recipient_type IN ('to', 'cc', 'bcc'))
);
CREATE INDEX recipients_by_address ON recipients(recipient_address, email_id);
CREATE INDEX recipients_by_email ON recipients(email_id);
CREATE INDEX emails_by_sender ON emails(from_address);
CREATE INDEX emails_by_date ON emails(date);
CREATE VIRTUAL TABLE emails_fts USING fts5(
    subject, body, content='emails', content_rowid='id', tokenize='unicode61'
);
"""

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_KINDS = (("to", "to_addresses"), ("cc", "cc_addresses"), ("bcc", "bcc_addresses"))


def _address(value: str, name: str = "address") -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be an email address (a string), got {value!r}")
    return value.strip().lower()


def _check_date(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str) and _DATE.fullmatch(value.strip()):
        try:
            datetime.strptime(value.strip(), "%Y-%m-%d")
            return value.strip()
        except ValueError:
            pass
    raise ValueError(f"{name} must be a date written YYYY-MM-DD, got {value!r}")


def fts_query(keywords: list[str]) -> str:
    """An FTS5 query matching rows that contain every keyword.

    Each keyword becomes a double-quoted phrase (inner quotes doubled), so FTS5
    operators, parentheses, ``*`` or stray quotes in it are plain text, never syntax.
    """
    if isinstance(keywords, str) or not isinstance(keywords, list | tuple):
        raise ValueError("keywords must be a list of strings")
    if not keywords:
        raise ValueError("keywords must hold at least one keyword")
    phrases = []
    for keyword in keywords:
        if not isinstance(keyword, str):
            raise ValueError(f"every keyword must be a string, got {keyword!r}")
        if not any(ch.isalnum() for ch in keyword):
            raise ValueError(f"keyword {keyword!r} has no letters or digits to search for")
        phrases.append('"' + keyword.strip().replace('"', '""') + '"')
    return " AND ".join(phrases)


def _load_jsonl(lines: Iterable[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines if line.strip()]


class Mailbox:
    """Emails searchable per inbox. ``emails``: dicts as the generator writes them, or a
    path to an ``emails.jsonl``; ``db_path``: where to build the database (a new file;
    default a temporary file removed on :meth:`close` or garbage collection)."""

    _default: Mailbox | None = None
    _default_lock = threading.Lock()

    def __init__(
        self, emails: list[dict[str, Any]] | str | Path, db_path: str | Path | None = None
    ):
        if isinstance(emails, str | Path):
            with open(emails, encoding="utf-8") as f:
                emails = _load_jsonl(f)
        self._tmpdir: str | None = None
        if db_path is None:
            self._tmpdir = tempfile.mkdtemp(prefix="reinforge-mailbox-")
            db_path = Path(self._tmpdir) / "mailbox.db"
        self.db_path = Path(db_path)
        if self.db_path.exists():
            raise FileExistsError(f"{self.db_path} exists; give a new path for the mailbox")
        try:
            self._build(emails)
        except BaseException:
            if self._tmpdir is not None:
                shutil.rmtree(self._tmpdir, ignore_errors=True)
            raise
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(
            self, Mailbox._release, self._connections, self._lock, self._tmpdir
        )

    # -- building and connections ------------------------------------------------

    def _build(self, emails: list[dict[str, Any]]) -> None:
        conn = sqlite3.connect(self.db_path)
        try:
            with conn:
                conn.executescript(_SCHEMA)
                for email in emails:
                    cur = conn.execute(
                        "INSERT INTO emails (message_id, date, subject, from_address, body) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (
                            email["message_id"],
                            email["date"],
                            email.get("subject") or "",
                            _address(email["from_address"]),
                            email.get("body") or "",
                        ),
                    )
                    conn.executemany(
                        "INSERT INTO recipients VALUES (?, ?, ?)",
                        [
                            (cur.lastrowid, _address(addr), kind)
                            for kind, key in _KINDS
                            for addr in email.get(key) or []
                        ],
                    )
                conn.execute("INSERT INTO emails_fts(emails_fts) VALUES ('rebuild')")
            self._count = conn.execute("SELECT count(*) FROM emails").fetchone()[0]
        finally:
            conn.close()

    def _conn(self) -> sqlite3.Connection:
        """This thread's read-only connection, opened on first use."""
        if not self._finalizer.alive:
            raise RuntimeError("the mailbox is closed")
        conn = getattr(self._local, "conn", None)
        if conn is None:
            uri = f"{self.db_path.resolve().as_uri()}?mode=ro"
            # one connection per thread; check_same_thread off only so close() can close it
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.row_factory = sqlite3.Row
            with self._lock:
                self._connections.append(conn)
            self._local.conn = conn
        return conn

    @staticmethod
    def _release(
        connections: list[sqlite3.Connection], lock: threading.Lock, tmpdir: str | None
    ) -> None:
        with lock:
            for conn in connections:
                conn.close()
            connections.clear()
        if tmpdir is not None:
            shutil.rmtree(tmpdir, ignore_errors=True)

    def close(self) -> None:
        """Close every thread's connection and remove the temporary database, if any."""
        self._finalizer()

    def __enter__(self) -> Mailbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._count

    @classmethod
    def default(cls) -> Mailbox:
        """The mailbox shipped with the package (``data/emails.jsonl``), built once per process."""
        with cls._default_lock:
            if cls._default is None:
                text = (
                    resources.files(__package__)
                    .joinpath("data")
                    .joinpath("emails.jsonl")
                    .read_text(encoding="utf-8")
                )
                cls._default = cls(_load_jsonl(text.splitlines()))
            return cls._default

    # -- the agent's tools -------------------------------------------------------

    def search_emails(
        self,
        inbox: str,
        keywords: list[str],
        from_addr: str | None = None,
        to_addr: str | None = None,
        sent_after: str | None = None,
        sent_before: str | None = None,
        max_results: int = MAX_RESULTS,
    ) -> list[dict[str, str]]:
        """Emails of ``inbox`` containing every keyword (subject or body), newest first.

        ``from_addr``/``to_addr`` keep mail from/to that address (to, cc or bcc);
        ``sent_after`` (inclusive) and ``sent_before`` (exclusive) are YYYY-MM-DD dates.
        Returns ``[{"message_id", "snippet"}]``, at most ``max_results`` (1 to 10).
        """
        match = fts_query(keywords)
        if isinstance(max_results, bool) or not isinstance(max_results, int):
            raise ValueError(f"max_results must be an integer, got {max_results!r}")
        if not 1 <= max_results <= MAX_RESULTS:
            raise ValueError(f"max_results must be between 1 and {MAX_RESULTS}, got {max_results}")
        after = _check_date("sent_after", sent_after)
        before = _check_date("sent_before", sent_before)
        if after and before and after >= before:
            raise ValueError(
                f"sent_after ({after}) must be earlier than sent_before ({before}), "
                "which is exclusive"
            )
        sql = [
            "SELECT e.message_id, snippet(emails_fts, -1, '<b>', '</b>', ' ... ', 16) AS snippet",
            "FROM emails_fts JOIN emails e ON e.id = emails_fts.rowid",
            "WHERE emails_fts MATCH :match",
            "AND (e.from_address = :inbox OR EXISTS (SELECT 1 FROM recipients r",
            "     WHERE r.email_id = e.id AND r.recipient_address = :inbox))",
        ]
        params: dict[str, Any] = {
            "match": match,
            "inbox": _address(inbox, "inbox"),
            "n": max_results,
        }
        if from_addr:
            sql.append("AND e.from_address = :from_addr")
            params["from_addr"] = _address(from_addr, "from_addr")
        if to_addr:
            sql.append(
                "AND EXISTS (SELECT 1 FROM recipients t"
                " WHERE t.email_id = e.id AND t.recipient_address = :to_addr)"
            )
            params["to_addr"] = _address(to_addr, "to_addr")
        if after:
            sql.append("AND e.date >= :after")
            params["after"] = after
        if before:
            sql.append("AND e.date < :before")
            params["before"] = before
        sql.append("ORDER BY e.date DESC, e.id DESC LIMIT :n")
        rows = self._conn().execute("\n".join(sql), params).fetchall()
        return [{"message_id": row["message_id"], "snippet": row["snippet"]} for row in rows]

    def read_email(self, message_id: str) -> dict[str, Any] | None:
        """The whole email with this message id, or None if there is none."""
        if not isinstance(message_id, str):
            raise ValueError(f"message_id must be a string, got {message_id!r}")
        conn = self._conn()
        row = conn.execute(
            "SELECT id, message_id, date, subject, from_address, body FROM emails "
            "WHERE message_id = ?",
            (message_id.strip(),),
        ).fetchone()
        if row is None:
            return None
        email: dict[str, Any] = {
            "message_id": row["message_id"],
            "date": row["date"],
            "subject": row["subject"],
            "from_address": row["from_address"],
        }
        for kind, key in _KINDS:
            email[key] = [
                r[0]
                for r in conn.execute(
                    "SELECT recipient_address FROM recipients "
                    "WHERE email_id = ? AND recipient_type = ? ORDER BY rowid",
                    (row["id"], kind),
                )
            ]
        email["body"] = row["body"]
        return email
