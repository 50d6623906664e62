"""Where the demo's resident memory peaks: one ``reinforge run`` in this process with a
thread that samples RSS, labelled by the run's own phases.

Why: the demo's peak RSS (``/usr/bin/time -v``'s "Maximum resident set size") says how
much, not when or of what. This script runs the demo's config (shortened with
``--steps`` / ``--eval-interval``) as ``reinforge run`` does, in this process, and
prints per phase (exploring, evaluating, each training step, sync, checkpoint) the
highest RSS sampled, and at each phase's end the live torch tensor bytes and glibc's
heap figures (``mallinfo2``: bytes in use, bytes free but kept), and the highest
bytes in use sampled in the phase ("heap pk"). RSS well above the
tensors with much "kept" means pages the allocator holds; RSS close to the tensors
means buffers that are alive.

    .venv/bin/python bench/demo_memory.py --steps 4 --eval-interval 2
    .venv/bin/python bench/demo_memory.py --steps 16 --json runs/demo_memory.json

The process's ``VmHWM`` (the kernel's peak RSS, what ``time -v`` reports) is printed
at the end; the sampled peak can miss a spike shorter than ``--interval``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from run_cli import run_args

from reinforge.cli.common import state
from reinforge.cli.main import app

GIB = 1024**3


class MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33+), all ``size_t``."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def heap_figures() -> dict[str, float]:
    """glibc's heap in GiB: ``in_use`` (malloc'd, incl. mmapped blocks) and ``kept``
    (free bytes still mapped in the arenas); empty where there is no ``mallinfo2``."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return {}
    fn.restype = MallInfo2
    info = fn()
    return {
        "in_use": (info.uordblks + info.hblkhd) / GIB,
        "kept": info.fordblks / GIB,
        "mmapped": info.hblkhd / GIB,
    }


def rss_gib() -> float:
    """This process's resident set size now (``/proc/self/statm``)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * 4096 / GIB


def hwm_gib() -> float:
    """The kernel's peak RSS of this process (``VmHWM``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / GIB
    return float("nan")


def tensor_gib() -> float:
    """Bytes of the distinct storages of the torch tensors the garbage collector sees
    (parameters, gradients, optimizer state, buffers held by Python objects)."""
    import torch

    seen: dict[int, int] = {}
    for obj in gc.get_objects():
        try:
            if isinstance(obj, torch.Tensor) and not obj.is_meta:
                storage = obj.untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
        except Exception:  # tensors without storage (sparse, functional)
            continue
    return sum(seen.values()) / GIB


class PhaseSampler:
    """Samples RSS every ``interval`` s in a thread, keyed by the current phase label."""

    def __init__(self, interval: float, tensors: bool) -> None:
        self.interval = interval
        self.tensors = tensors
        self.label = "start-up"
        self.started = time.monotonic()
        self.phases: list[dict[str, Any]] = []
        self._new_phase(self.label)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _new_phase(self, label: str) -> None:
        now = time.monotonic() - self.started
        self.phases.append(
            {"phase": label, "start": now, "peak": 0.0, "peak_at": now, "peak_in_use": 0.0}
        )

    def enter(self, label: str) -> None:
        """A new phase begins: close the current one (its end figures) and label anew."""
        if label == self.label:
            return
        self.sample()
        ended = self.phases[-1]
        ended["end_rss"] = rss_gib()
        ended.update({f"end_{k}": v for k, v in heap_figures().items()})
        if self.tensors:
            ended["end_tensors"] = tensor_gib()
        self.label = label
        self._new_phase(label)

    def sample(self) -> None:
        rss = rss_gib()
        current = self.phases[-1]
        if rss > current["peak"]:
            current["peak"] = rss
            current["peak_at"] = time.monotonic() - self.started
        in_use = heap_figures().get("in_use", 0.0)
        current["peak_in_use"] = max(current["peak_in_use"], in_use)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> PhaseSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.enter("end")


def _label(label: str, done: int | None) -> str:
    """``training step 3: micro-batch``, 2 -> ``training step 3 after mb 2``: the
    reporter names a micro-batch when it is done, so the next one runs under it."""
    base = label.split(":")[0]
    return f"{base} after mb {done}" if done is not None else base


def instrument(sampler: PhaseSampler) -> None:
    """Label the sampler's phases from the run's reporter and the final checkpoint."""
    from reinforge.launcher.training_loop import TrainingLoop
    from reinforge.monitor.console import ConsoleReporter
    from reinforge.trainer.learner import Learner

    start, phase, save = ConsoleReporter.start, ConsoleReporter.phase, TrainingLoop.save
    optimizer_step = Learner.optimizer_step

    def on_start(self: Any, description: str, total_tasks: int) -> None:
        kind = "eval" if description.startswith("eval") else "explore"
        sampler.enter(f"{kind} {description}")
        start(self, description, total_tasks)

    def on_phase(self: Any, label: str, done: Any = None, total: Any = None) -> None:
        sampler.enter(_label(label, done))
        phase(self, label, done, total)

    def on_save(self: Any) -> None:
        sampler.enter("final checkpoint")
        save(self)

    def on_optimizer_step(self: Any) -> float:
        sampler.enter(f"{sampler.label.split(' after')[0]} optimizer")
        return optimizer_step(self)

    ConsoleReporter.start = on_start  # type: ignore[method-assign]
    ConsoleReporter.phase = on_phase  # type: ignore[method-assign]
    TrainingLoop.save = on_save  # type: ignore[method-assign]
    Learner.optimizer_step = on_optimizer_step  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="examples/arithmetic/grpo.yaml")
    parser.add_argument("--steps", type=int, default=16, help="buffer.total_steps")
    parser.add_argument("--eval-interval", type=int, default=4, help="explorer.eval_interval")
    parser.add_argument("--set", action="append", default=[], help="more --set overrides")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between samples")
    parser.add_argument("--no-tensors", action="store_true", help="skip the gc walk per phase")
    parser.add_argument("--json", type=Path, help="write the phases here")
    args = parser.parse_args()
    overrides = [
        f"buffer.total_steps={args.steps}",
        f"explorer.eval_interval={args.eval_interval}",
        *args.set,
    ]
    sampler = PhaseSampler(args.interval, tensors=not args.no_tensors)
    instrument(sampler)
    with tempfile.TemporaryDirectory() as tmp, sampler:
        cli = run_args(args.config, Path(tmp) / "run", overrides)
        state.standalone = True  # as the ``reinforge`` script: gc.freeze at start
        app(cli, standalone_mode=False)
    print(
        f"{'phase':<28} {'from s':>7} {'peak GiB':>9} {'at s':>7} {'end':>6} "
        f"{'tensors':>7} {'heap':>6} {'kept':>6} {'heap pk':>7}"
    )
    for p in sampler.phases:
        print(
            f"{p['phase'][:28]:<28} {p['start']:7.1f} {p['peak']:9.3f} {p['peak_at']:7.1f} "
            f"{p.get('end_rss', 0):6.3f} {p.get('end_tensors', float('nan')):7.3f} "
            f"{p.get('end_in_use', float('nan')):6.3f} {p.get('end_kept', float('nan')):6.3f} "
            f"{p['peak_in_use']:7.3f}"
        )
    top = max(sampler.phases, key=lambda p: p["peak"])
    print(f"peak sampled: {top['peak']:.3f} GiB in '{top['phase']}' at {top['peak_at']:.1f} s")
    print(f"VmHWM: {hwm_gib():.3f} GiB")
    if args.json:
        args.json.write_text(json.dumps({"phases": sampler.phases, "hwm": hwm_gib()}, indent=1))


if __name__ == "__main__":
    main()
