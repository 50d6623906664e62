"""Read a run's buffer without writing to it.

``SQLiteExperienceStorage`` opens its file for writing: it creates missing tables,
switches the journal to WAL and checks every page. A viewer must not change a run
it looks at (and may look at one that is still running, or at a copy on a
read-only disk), so ``ReadOnlyStorage`` keeps the class's read methods but opens
the file through an SQLite ``mode=ro`` URI instead. When even that fails (a WAL
file whose ``-shm`` cannot be created in a read-only folder) it falls back to
``immutable=1``, which reads the file as it is now without any locking.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine
from sqlalchemy.pool import QueuePool

from reinforge.buffer.sqlite_storage import (
    BufferStorageError,
    SQLiteExperienceStorage,
)


class ReadOnlyStorage(SQLiteExperienceStorage):
    """``SQLiteExperienceStorage`` over a read-only SQLite connection.

    ``write`` and friends fail with "attempt to write a readonly database"; the read
    methods (``read``, ``read_batch``, ``task_results``, ``count``) work as usual.
    """

    def __init__(self, path: str | Path) -> None:  # no super(): it would write
        self.path = Path(path)
        if not self.path.is_file():
            raise BufferStorageError(f"{self.path} does not exist")
        self._lock = threading.Lock()
        self.immutable = False
        self.engine = self._engine(immutable=False)
        try:
            self._probe()
        except sqlite3.Error:
            self.engine.dispose()
            self.immutable = True
            self.engine = self._engine(immutable=True)
            try:
                self._probe()
            except sqlite3.Error as exc:
                self.engine.dispose()
                raise BufferStorageError(f"{self.path} cannot be read: {exc}") from None
            except BufferStorageError:
                self.engine.dispose()
                raise
        except BufferStorageError:
            self.engine.dispose()
            raise

    def _engine(self, immutable: bool) -> Engine:
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        if immutable:
            uri += "&immutable=1"

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)

        # "sqlite://" with a creator: SQLAlchemy would otherwise treat the URL as an
        # in-memory database and keep one connection per thread.
        return create_engine("sqlite://", creator=connect, poolclass=QueuePool)

    def _probe(self) -> None:
        """Fail now, not at the first page view, if the file cannot be read."""
        from sqlalchemy.exc import DBAPIError

        try:
            with self.engine.connect() as conn:
                names = {
                    row[0]
                    for row in conn.exec_driver_sql(
                        "SELECT name FROM sqlite_master WHERE type='table'"
                    )
                }
        except DBAPIError as exc:
            raise (
                exc.orig if isinstance(exc.orig, sqlite3.Error) else sqlite3.Error(str(exc))
            ) from None
        missing = {"experiences", "task_results"} - names
        if missing:
            raise BufferStorageError(
                f"{self.path} is not a reinforge buffer (no table {', '.join(sorted(missing))})"
            )
