"""The temporary work directory of a vLLM engine: synced weights, adapters, server logs.

It holds a full copy of the weights per sync (about 0.5 GiB for the 135M model), and
a process killed without warning (SIGKILL, OOM killer) never removes it. So every
directory made here records its owner's pid, and making a new one first removes the
directories whose owner is gone: repeated crashes cannot fill the temp disk.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)

PREFIX = "reinforge-vllm-"
OWNER_FILE = "owner.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def sweep_stale(root: str | Path | None = None) -> list[Path]:
    """Remove ``PREFIX*`` directories under ``root`` (the temp dir) whose recorded owner
    process no longer runs; directories without an owner record are left alone."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
            pid = int(owner["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
        logger.info("removed %s, left behind by process %d", folder, pid)
    return removed


def make_work_dir(root: str | Path | None = None) -> Path:
    """A new temporary work directory owned by this process, after sweeping stale ones."""
    sweep_stale(root)
    folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=root))
    (folder / OWNER_FILE).write_text(json.dumps({"pid": os.getpid()}), encoding="utf-8")
    return folder
