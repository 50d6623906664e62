"""Ranks that a launcher starts must see the driver's checkpoint folder, or the run
refuses to start (``trainer/parallel/shared_folder.py``).

On one machine every process sees one disk, so a rank that does not see the driver's
folder is made the way a relative run directory makes it on a cluster: the ranks run
in another working directory, where the same relative path is another folder. The
second end-to-end case gives that other folder a copy of the driver's (a node that
synced the run directory once instead of sharing it): the rank finds the token, but
the marker it leaves lands in its copy, and the driver refuses the start.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Listener
from pathlib import Path

import pytest

from reinforge.trainer.parallel.ranked_trainer import RankedTrainer, TrainerRankError
from reinforge.trainer.parallel.shared_folder import PREFIX, FolderProbe, rank_sees
from reinforge.trainer.trainer_config import TrainerConfig

FOLDER = "runs/demo/checkpoints"  # relative, as a run directory given as runs/... is


def test_a_rank_that_sees_the_folder_leaves_its_marker(tmp_path: Path) -> None:
    probe = FolderProbe.create(tmp_path / "checkpoints")
    assert probe.unseen(2) == [0, 1]
    assert rank_sees(probe.message(), 1) is None
    assert probe.unseen(2) == [0]
    assert rank_sees(probe.message(), 0) is None
    assert probe.check(["a", "b"]) is None
    assert list((tmp_path / "checkpoints").iterdir()) == []  # nothing left behind


def test_a_rank_that_sees_another_folder_is_refused(tmp_path: Path) -> None:
    probe = FolderProbe.create(tmp_path / "driver")
    other = {"folder": str(tmp_path / "node-disk"), "token": probe.token}
    line = rank_sees(other, 3)
    assert line is not None and "\n" not in line
    assert f"trainer rank 3 on {socket.gethostname()}" in line
    assert str(tmp_path / "node-disk") in line
    assert "shared storage" in line and "cluster.backend: ray" in line
    wrong_token = {"folder": probe.folder, "token": secrets.token_hex(16)}  # an old run's
    assert rank_sees(wrong_token, 0) is not None


def test_the_driver_refuses_a_rank_whose_marker_it_misses(tmp_path: Path) -> None:
    probe = FolderProbe.create(tmp_path / "checkpoints")
    assert rank_sees(probe.message(), 0) is None
    line = probe.check(["node-a", "node-b"])  # rank 1 never wrote its marker here
    assert line is not None
    assert line.startswith("trainer rank 1 on node-b ") and probe.folder in line
    assert not list((tmp_path / "checkpoints").glob(f"{PREFIX}*"))  # cleaned up


def launch(cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """Two ranks from torchrun, in working directory ``cwd``, reaching the driver by ``env``."""
    command = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
        "-m", "reinforge.trainer.parallel.rank_worker",
    ]  # fmt: skip
    return subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.DEVNULL)


def config() -> TrainerConfig:
    parallel = {"world_size": 2, "strategy": "ddp", "timeout_s": 300, "threads_per_rank": 1}
    return TrainerConfig.model_validate({"lr": 1e-3, "parallel": parallel})


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


@pytest.mark.timeout(600)
def test_torchrun_ranks_in_another_folder_are_refused(
    tiny_model_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rank_driver: tuple[Listener, dict[str, str]],
) -> None:
    driver, ranks = tmp_path / "driver", tmp_path / "ranks"
    driver.mkdir()
    ranks.mkdir()
    monkeypatch.chdir(driver)
    listener, env = rank_driver
    torchrun = launch(ranks, env)
    try:
        with pytest.raises(TrainerRankError) as refused:
            RankedTrainer(
                tiny_model_path,
                config(),
                pad_token_id=0,
                listener=listener,
                checkpoint_folder=Path(FOLDER),
            )
    finally:
        stop(torchrun)
    line = refused.value.summary
    assert "\n" not in line and not refused.value.detail
    assert f" on {socket.gethostname()} does not see the file the driver wrote" in line
    assert f"checkpoint folder {FOLDER} (there: {ranks / FOLDER})" in line
    assert "shared storage" in line and "cluster.backend: ray" in line


@pytest.mark.timeout(600)
def test_torchrun_ranks_with_a_copy_of_the_folder_are_refused(
    tiny_model_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    rank_driver: tuple[Listener, dict[str, str]],
) -> None:
    driver, ranks = tmp_path / "driver", tmp_path / "ranks"
    driver.mkdir()
    ranks.mkdir()
    monkeypatch.chdir(driver)
    listener, env = rank_driver
    failure: list[BaseException] = []

    def start() -> None:
        try:
            ranked = RankedTrainer(
                tiny_model_path,
                config(),
                pad_token_id=0,
                listener=listener,
                checkpoint_folder=Path(FOLDER),
            )
            ranked.close()
        except BaseException as exc:
            failure.append(exc)

    thread = threading.Thread(target=start, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not list((driver / FOLDER).glob(f"{PREFIX}*")):  # the driver wrote its token
        assert time.monotonic() < deadline, "the driver wrote no token"
        time.sleep(0.1)
    shutil.copytree(driver / "runs", ranks / "runs")  # the ranks' node: a copy, not a share
    torchrun = launch(ranks, env)
    try:
        thread.join(300)
    finally:
        stop(torchrun)
    assert not thread.is_alive()
    assert len(failure) == 1 and isinstance(failure[0], TrainerRankError), failure
    line = failure[0].summary
    assert line.startswith("trainer rank 0 on ")
    assert "wrote its marker where the driver does not find it" in line
    assert f"checkpoint folder {FOLDER}" in line and "shared storage" in line
    assert not list((driver / FOLDER).glob(f"{PREFIX}*"))  # the driver's token is gone
