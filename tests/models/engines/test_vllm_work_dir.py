"""A vLLM engine's temp work directory: owned by its process, swept once the owner is gone."""

from __future__ import annotations

import json
import subprocess
import sys

from reinforge.models.engines.vllm.work_dir import OWNER_FILE, PREFIX, make_work_dir, sweep_stale


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_new_work_dir_removes_those_of_dead_owners_only(tmp_path):
    dead = tmp_path / f"{PREFIX}crashed"
    (dead / "weights" / "v3").mkdir(parents=True)
    (dead / "weights" / "v3" / "model.safetensors").write_bytes(b"x" * 1024)
    (dead / OWNER_FILE).write_text(json.dumps({"pid": _dead_pid()}))
    alive = tmp_path / f"{PREFIX}running"
    alive.mkdir()
    (alive / OWNER_FILE).write_text(json.dumps({"pid": 1}))  # init: always running
    unknown = tmp_path / f"{PREFIX}older-version"  # no owner record: never touched
    unknown.mkdir()
    other = tmp_path / "someone-else"
    other.mkdir()

    mine = make_work_dir(tmp_path)

    assert not dead.exists()
    assert alive.exists() and unknown.exists() and other.exists()
    assert mine.name.startswith(PREFIX)
    assert json.loads((mine / OWNER_FILE).read_text())["pid"] > 0
    assert sweep_stale(tmp_path) == []  # this process's own dir stays
    assert mine.exists()
