"""A trainer rank that dies in the middle of ``reinforge run``: the command ends with one
``error:`` line that names the rank and says how to resume, exit code 3, and no
traceback (``--verbose`` or ``--debug`` add it); the same command then resumes from
the last checkpoint and finishes the run."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.cli.common import RANK_FAULT_EXIT, fail_rank, state
from reinforge.cli.main import app
from reinforge.trainer.parallel.ranked_trainer import TrainerRankError

CONFIG = Path(__file__).resolve().parents[2] / "examples" / "distributed" / "grpo.yaml"
SMALL = [
    "model.model_path=tiny-random-smollm2", "model.max_response_tokens=6",
    "buffer.batch_size=2", "buffer.explorer_input.taskset.repeat_times=4",
    "buffer.explorer_input.eval_tasksets=[]", "buffer.experience_pipeline.operators=[]",
    "trainer.micro_batch_size=2", "trainer.gradient_checkpointing=false",
    "trainer.parallel.strategy=ddp", "trainer.parallel.threads_per_rank=1",
    "buffer.total_steps=2", "checkpoint.save_interval=1",
    "monitor.progress=false", "monitor.tensorboard=false", "monitor.plot=false",
]  # fmt: skip


def rank_pids() -> dict[int, int]:
    """This process's trainer rank children, by RANK."""
    found: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and b"rank_worker" in cmdline:
            rank = next((v[5:] for v in environ if v.startswith(b"RANK=")), None)
            if rank is not None:
                found[int(rank)] = int(entry.name)
    return found


def kill_rank_after_first_checkpoint(run_dir: Path, killed: list[int]) -> None:
    deadline = time.monotonic() + 600
    while not (run_dir / "checkpoints" / "step_1").is_dir():
        if time.monotonic() > deadline:
            return
        time.sleep(0.05)
    pid = rank_pids()[1]
    os.kill(pid, signal.SIGKILL)
    killed.append(pid)


# two whole runs of 2 rank processes each (128 s on a shared, loaded 2-core machine;
# past the default 300 s timeout at a load of ~100): the only test of a rank fault
# through the command, and of the resume that follows it
@pytest.mark.timeout(900)
@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc (Linux)")
def test_a_killed_rank_ends_the_run_in_one_line_and_the_same_command_resumes(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    run_dir = tmp_path / "run"
    args = ["run", "-c", str(CONFIG), "--run-dir", str(run_dir)]
    for item in SMALL:
        args += ["--set", item]
    killed: list[int] = []
    killer = threading.Thread(
        target=kill_rank_after_first_checkpoint, args=(run_dir, killed), daemon=True
    )
    killer.start()
    result = CliRunner().invoke(app, args)
    killer.join(10)
    assert killed, result.output[-3000:]
    assert result.exit_code == RANK_FAULT_EXIT, (result.exception, result.output[-3000:])
    errors = [line for line in result.output.splitlines() if "error:" in line]
    assert len(errors) == 1, result.output[-3000:]
    assert "rank 1 died (exit code -9)" in errors[0]
    assert "run the same command again to resume" in errors[0]
    assert "Traceback" not in result.output

    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, (again.exception, again.output[-3000:])
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert max(r["step"] for r in rows if "train/loss" in r) == 2
    assert (run_dir / "checkpoints" / "step_2" / "state.json").is_file()


def test_the_tracebacks_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    exc = TrainerRankError(
        "trainer 'train_step' failed: rank 1 raised ValueError: boom; all 2 trainer ranks "
        "were stopped: run the same command again to resume from the last checkpoint",
        'Traceback (most recent call last):\n  File "x.py"\nValueError: boom',
    )
    for verbose, shown in ((0, False), (1, True)):
        state.verbose = verbose
        try:
            raise exc
        except TrainerRankError as caught:
            assert fail_rank(caught).exit_code == RANK_FAULT_EXIT
        finally:
            state.verbose = 0
        printed = capsys.readouterr().err
        assert printed.count("error:") == 1 and "rank 1 raised ValueError: boom" in printed
        assert ("Traceback" in printed) is shown
        assert ('File "x.py"' in printed) is shown  # the rank's own traceback
