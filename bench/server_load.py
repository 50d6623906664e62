"""Load test of ``reinforge serve`` against the in-process OpenAI client, side by side.

Why: agents outside the trainer process reach the policy through the HTTP server;
agents inside it use ``ModelWrapper.get_openai_async_client()``, whose requests
never leave the process. Both hand the same request bodies to one
``OpenAIService``. This script measures what the HTTP hop (uvicorn, FastAPI, JSON
over loopback TCP, the SDK's connection pool) costs under concurrent load, and
checks that the server answers every request (0 errors) at that load.

Workload: ``--requests`` chat completions from ``--concurrency`` concurrent
``openai.AsyncOpenAI`` clients (one client per worker, so one connection pool
each), short prompts cycling a question list, ``max_tokens`` 16, temperature 1,
request ``i`` seeded with ``i`` (both sides sample the same tokens for the same
request). The server side runs uvicorn in a thread of this process by default
(``--server subprocess`` runs the real ``reinforge serve`` command instead, so the
server has its own interpreter and GIL). Latency is per request, from the SDK
call to the parsed response; requests/s is requests over the wall time of the
whole run.

Run::

    .venv/bin/python bench/server_load.py                   # tiny-random-smollm2, hf engine
    .venv/bin/python bench/server_load.py --engine mock     # framework overhead only, seconds
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import yaml

from reinforge.models import ModelWrapper, create_engine
from reinforge.models.openai_api.server import ServerThread, create_app

ENGINE_COUNTERS = ("prefills", "decode_steps", "generated_tokens", "prefill_s", "decode_s")
QUESTIONS = [
    "Hi!",
    "What is 2 + 2?",
    "Name a color.",
    "Why is the sky blue?",
    "List three fruits.",
    "What does CPU stand for?",
    "Translate 'good morning' into French.",
    "Say yes or no: is water wet?",
]


@dataclass
class SideResult:
    """One timed run of the workload against one transport."""

    name: str
    seconds: float
    latencies: list[float]  # successful requests only, seconds
    errors: list[str]
    completion_tokens: int
    outputs: dict[int, list[int]]  # request index -> sampled token ids
    #: this process's engine counters over the run (hf engine only; with
    #: ``--server subprocess`` the HTTP side's engine lives in the child)
    engine: dict[str, float]

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def request_body(i: int, max_tokens: int) -> dict[str, Any]:
    question = QUESTIONS[i % len(QUESTIONS)]
    return {
        "messages": [{"role": "user", "content": question}],
        "max_tokens": max_tokens,
        "temperature": 1.0,
        "seed": i,
    }


async def run_side(
    name: str,
    make_client: Callable[[], openai.AsyncOpenAI],
    args: argparse.Namespace,
    stats: dict[str, float],
    first: int = 0,
    count: int | None = None,
) -> SideResult:
    """``count`` requests (default ``--requests``) spread over ``--concurrency`` workers."""
    count = args.requests if count is None else count
    clients = [make_client() for _ in range(args.concurrency)]
    queue = iter(range(first, first + count))
    latencies: list[float] = []
    errors: list[str] = []
    outputs: dict[int, list[int]] = {}
    tokens = 0

    async def worker(client: openai.AsyncOpenAI) -> None:
        nonlocal tokens
        for i in queue:  # a shared iterator: each request is taken by one worker
            start = time.perf_counter()
            try:
                resp = await client.chat.completions.create(
                    model="policy", **request_body(i, args.max_tokens)
                )
            except Exception as exc:  # counted and reported, never fatal
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                continue
            latencies.append(time.perf_counter() - start)
            outputs[i] = resp.choices[0].model_extra["token_ids"]
            tokens += resp.usage.completion_tokens

    before = dict(stats)
    start = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in clients))
    seconds = time.perf_counter() - start
    for client in clients:
        await client.close()
    engine = {k: stats[k] - before[k] for k in ENGINE_COUNTERS if k in stats}
    return SideResult(name, seconds, latencies, errors, tokens, outputs, engine)


def build_model(args: argparse.Namespace) -> ModelWrapper:
    options: dict[str, Any] = {}
    if args.engine == "mock":
        options = {"policy": "arithmetic"}
    engine = create_engine(args.engine, args.model, options=options)
    return ModelWrapper(engine, model_name="policy", default_max_tokens=args.max_tokens)


@contextmanager
def serve_subprocess(args: argparse.Namespace) -> Iterator[str]:
    """``reinforge serve`` on a free port in a child process; yields its base URL."""
    model: dict[str, Any] = {"engine": args.engine, "model_path": args.model}
    if args.engine == "mock":
        model["mock"] = {"policy": "arithmetic"}
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "serve.yaml"
        cfg.write_text(yaml.safe_dump({"model": model}))
        proc = subprocess.Popen(
            [sys.executable, "-m", "reinforge.cli.main", "serve", "-c", str(cfg), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # uvicorn's access log: one line per request
            text=True,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if " at http" not in line:
                raise RuntimeError(f"reinforge serve did not start: {line!r}")
            url = line.split(" at ", 1)[1].split()[0].removesuffix("/v1")
            yield url
        finally:
            proc.terminate()
            proc.wait(30)


@contextmanager
def http_server(args: argparse.Namespace, model: ModelWrapper) -> Iterator[str]:
    if args.server == "subprocess":
        with serve_subprocess(args) as url:
            yield url
    else:
        with ServerThread(create_app(model.openai_service)) as srv:
            yield srv.url


async def run_all(args: argparse.Namespace, model: ModelWrapper, url: str) -> list[SideResult]:
    def http_client() -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(base_url=url + "/v1", api_key="bench", max_retries=0, timeout=300)

    def local_client() -> openai.AsyncOpenAI:
        # the wrapper caches its client; a fresh one per worker mirrors the HTTP side
        from reinforge.models.openai_api.clients import async_openai_client

        return async_openai_client(model.openai_service, timeout=300)

    sides = {"http server": http_client, "in-process": local_client}
    stats = getattr(model.engine, "stats", {})
    for name, make in sides.items():  # warm-up: connections, first batches, caches
        await run_side(name, make, args, stats, first=10**6, count=args.concurrency)
    results = []
    for rep in range(args.repeats):
        order = list(sides) if rep % 2 == 0 else list(sides)[::-1]  # drift hits both sides
        for name in order:
            results.append(await run_side(name, sides[name], args, stats))
    return results


def print_table(results: list[SideResult]) -> None:
    header = (
        f"{'transport':12s} {'ok':>6s} {'errors':>6s} {'req/s':>8s} {'p50 ms':>8s} "
        f"{'p99 ms':>8s} {'mean ms':>8s} {'tok/s':>8s} {'wall s':>7s}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        mean = statistics.mean(r.latencies) if r.latencies else float("nan")
        print(
            f"{r.name:12s} {len(r.latencies):6d} {len(r.errors):6d} {r.rps:8.1f} "
            f"{1000 * r.percentile(0.5):8.1f} {1000 * r.percentile(0.99):8.1f} "
            f"{1000 * mean:8.1f} {r.completion_tokens / r.seconds:8.1f} {r.seconds:7.2f}"
        )
    for r in results:
        e = r.engine
        if e.get("decode_steps"):
            busy = e["prefill_s"] + e["decode_s"]
            print(
                f"  {r.name} engine: {busy:.1f} s busy ({100 * busy / r.seconds:.0f}% of wall), "
                f"{e['prefills']:.0f} prefills, {e['decode_steps']:.0f} decode steps, "
                # each request's first token comes from its prefill, the rest from decode steps
                f"{(e['generated_tokens'] - len(r.latencies)) / e['decode_steps']:.1f} rows/step, "
                f"{1000 * e['decode_s'] / e['decode_steps']:.0f} ms/step"
            )
    for r in results:
        for e in r.errors[:5]:
            print(f"  {r.name} error: {e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--engine", choices=("hf", "mock"), default="hf")
    parser.add_argument("--model", default="tiny-random-smollm2")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument(
        "--repeats", type=int, default=1, help="timed runs per side, in alternating order"
    )
    parser.add_argument(
        "--server",
        choices=("thread", "subprocess"),
        default="thread",
        help="uvicorn in a thread of this process, or `reinforge serve` as a child process",
    )
    args = parser.parse_args()

    model = build_model(args)
    print(
        f"engine={args.engine} model={args.model} requests={args.requests} "
        f"concurrency={args.concurrency} max_tokens={args.max_tokens} server={args.server} "
        f"cpus={os.cpu_count()}",
        flush=True,
    )
    try:
        with http_server(args, model) as url:
            results = asyncio.run(run_all(args, model, url))
    finally:
        model.engine.close()
    print_table(results)
    http = next(r for r in results if r.name == "http server")
    local = next(r for r in results if r.name == "in-process")
    same = sum(http.outputs.get(i) == ids for i, ids in local.outputs.items())
    print(f"identical sampled token ids (same seed, both transports): {same}/{len(local.outputs)}")
    if any(r.errors for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
