"""Multi-turn sampling with and without prefix reuse in the hf engine, side by side.

``--chats`` conversations run at once (one thread each, as workflow runners do),
each ``--turns`` turns long: the user asks, the model replies (up to
``--max-tokens`` tokens at temperature 1, seeded), the reply goes back into the
conversation with the next question. Every turn's prompt therefore extends the
previous turn's prompt and reply: with ``prefix_cache_tokens`` > 0 the engine
prefills only the new part.

Both settings run the same seeded conversations, alternating round by round.
Printed per setting: median wall seconds for all conversations, generated tokens,
the engine's prefill and decode seconds, and prefix hits / reused tokens.

Run::

    .venv/bin/python bench/multi_turn.py          # about 3-6 min on 2 cores
"""

from __future__ import annotations

import argparse
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from reinforge.models.catalog import resolve_model_path
from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper

OPENERS = [
    "Let's plan a small garden. What should I plant first?",
    "Tell me about the moon, one fact at a time.",
    "I want to learn to cook. Where do I start?",
    "Help me write a short story about a lost key.",
]
FOLLOW_UPS = ["Tell me more.", "Why?", "What comes next?", "Give an example.", "And then?"]


def chat(wrapper: ModelWrapper, index: int, turns: int, max_tokens: int) -> int:
    messages = [{"role": "user", "content": OPENERS[index % len(OPENERS)]}]
    generated = 0
    for turn in range(turns):
        reply = wrapper.chat(
            messages, temperature=1.0, max_tokens=max_tokens, seed=index * 100 + turn
        )[0]
        generated += reply.response_length
        messages += [
            {"role": "assistant", "content": reply.response_text},
            {"role": "user", "content": FOLLOW_UPS[turn % len(FOLLOW_UPS)]},
        ]
    return generated


def run(engine: HFEngine, chats: int, turns: int, max_tokens: int) -> dict[str, float]:
    for key in ("prefill_s", "decode_s", "prefix_hits", "prefix_reused_tokens"):
        engine.stats[key] = 0
    wrapper = ModelWrapper(engine)
    start = time.perf_counter()
    with ThreadPoolExecutor(chats) as pool:
        generated = sum(pool.map(lambda i: chat(wrapper, i, turns, max_tokens), range(chats)))
    return {
        "seconds": time.perf_counter() - start,
        "tokens": generated,
        "prefill_s": engine.stats["prefill_s"],
        "decode_s": engine.stats["decode_s"],
        "hits": engine.stats["prefix_hits"],
        "reused": engine.stats["prefix_reused_tokens"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=16)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    torch.set_num_threads(2)
    path = resolve_model_path("smollm2-135m-instruct")
    settings = {"no prefix reuse (before)": 0, "prefix reuse": 65536}
    engines = {
        name: HFEngine(path, dtype=args.dtype, prefix_cache_tokens=tokens)
        for name, tokens in settings.items()
    }
    results: dict[str, list[dict[str, float]]] = {name: [] for name in settings}
    try:
        for engine in engines.values():  # warm-up
            run(engine, 2, 2, 8)
            if engine._prefix is not None:
                engine._prefix.clear()
        for _ in range(args.rounds):
            for name, engine in engines.items():
                if engine._prefix is not None:
                    engine._prefix.clear()  # every round starts cold
                results[name].append(run(engine, args.chats, args.turns, args.max_tokens))
    finally:
        for engine in engines.values():
            engine.close()
    print(
        f"{args.chats} chats x {args.turns} turns, up to {args.max_tokens} tokens per reply, "
        f"{args.dtype}, median of {args.rounds}"
    )
    base = statistics.median(r["seconds"] for r in results[next(iter(settings))])
    print(
        f"{'setting':<26} {'wall s':>7} {'speed-up':>9} {'tokens':>7} {'prefill s':>10} "
        f"{'decode s':>9} {'hits':>5} {'reused':>7}"
    )
    for name, runs in results.items():

        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(r[key] for r in runs)

        print(
            f"{name:<26} {med('seconds'):7.1f} {base / med('seconds'):8.2f}x {med('tokens'):7.0f} "
            f"{med('prefill_s'):10.1f} {med('decode_s'):9.1f} {med('hits'):5.0f} {med('reused'):7.0f}"
        )


if __name__ == "__main__":
    main()
