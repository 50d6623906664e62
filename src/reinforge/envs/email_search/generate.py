"""A synthetic company mailbox and questions about it, for the email search task.

Everything comes from one seeded ``random.Random``: no network, no model. The mailbox
belongs to Northwind Energy, a fictional utility, and holds about 300 emails of the
year 2001 across six inboxes: meeting invitations, vendor invoices, flight bookings,
project deadlines, contract renewals, shipment notices, plus replies, announcements
and chatter that carry no facts worth asking about.

Each question is answered by exactly one email. Every fact-bearing email has a key
that is unique within its kind (a meeting's project and kind, an invoice's vendor and
item, a traveller's destination, ...), and the question names that key. Other emails
of the same kind with different values act as distractors, so a search has to be
precise, and the same projects and vendors recur across kinds.

Regenerate the shipped files (the output is identical for the same seed)::

    python -m reinforge.envs.email_search.generate \\
        --out examples/email_search/data --package-copy
"""

from __future__ import annotations

import argparse
import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from reinforge.envs.email_search.chatter import ChatterEmails
from reinforge.envs.email_search.company import (
    CITIES,
    DOMAIN,
    INBOXES,
    MEETING_KINDS,
    MILESTONES,
    PROJECTS,
    SERVICE_VENDORS,
    SUPPLIERS,
    YEAR_END,
)
from reinforge.envs.email_search.fact_emails import FactEmails

A = TypeVar("A")
B = TypeVar("B")


class _Builder(FactEmails, ChatterEmails):
    """Draws the emails of one mailbox: fact-bearing ones and chatter."""


def _pairs(rng: random.Random, left: list[A], right: list[B], k: int) -> list[tuple[A, B]]:
    """``k`` distinct (left, right) combinations: the keys that make each question unique."""
    return rng.sample([(a, b) for a in left for b in right], k)


def generate_mailbox(seed: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The mailbox's emails (oldest first) and one question per chosen fact-bearing email."""
    rng = random.Random(seed)
    b = _Builder(rng)
    for project, kind in _pairs(rng, PROJECTS, MEETING_KINDS, 40):
        b.meeting(project, kind)
    goods = [(v, item) for v, items in SUPPLIERS.items() for item in items]
    for vendor, item in rng.sample(goods, 38):
        b.invoice(vendor, item)
    trips = _pairs(rng, INBOXES, CITIES, 36)
    b.bookings = [(traveller, city) for traveller, (city, _) in trips]
    for traveller, (city, code) in trips:
        b.flight(traveller, city, code)
    for project, milestone in _pairs(rng, PROJECTS, MILESTONES, 32):
        b.deadline(project, milestone)
    services = [(v, service) for v, names in SERVICE_VENDORS.items() for service in names]
    for vendor, service in rng.sample(services, 24):
        b.contract(vendor, service)
    for vendor, item in rng.sample(goods, 34):
        b.shipment(vendor, item)
    while len(b.items) < 300:
        b.chatter()

    b.items.sort(key=lambda pair: (pair[0]["date"], pair[0]["subject"]))
    for n, (email, _) in enumerate(b.items, start=1):
        email["message_id"] = f"<nw-{n:04d}@{DOMAIN}>"

    facts = [(email, fact) for email, fact in b.items if fact is not None]
    queries = []
    for email, (question, answer, inbox) in rng.sample(facts, 120):
        sent = datetime.strptime(email["date"][:10], "%Y-%m-%d")
        asked = min(sent + timedelta(days=rng.randint(0, 21)), YEAR_END)
        queries.append(
            {
                "id": len(queries),
                "question": question,
                "answer": answer,
                "message_ids": [email["message_id"]],
                "inbox_address": inbox,
                "query_date": asked.strftime("%Y-%m-%d"),
                "how_realistic": round(rng.uniform(0.55, 1.0), 2),
            }
        )
    return [email for email, _ in b.items], queries


def split_queries(
    queries: list[dict[str, Any]], test_size: int = 20, seed: int = 0
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(train, test): a seeded shuffle, the last ``test_size`` queries held out, each in id order."""
    order = list(queries)
    random.Random(seed).shuffle(order)
    cut = len(order) - test_size
    return sorted(order[:cut], key=lambda q: q["id"]), sorted(order[cut:], key=lambda q: q["id"])


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """One JSON object per line, UTF-8, Unix newlines."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


PACKAGE_DATA = Path(__file__).resolve().parent / "data"


def main(argv: list[str] | None = None) -> None:
    """Write emails.jsonl, queries.jsonl, train.jsonl and test.jsonl to ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("examples/email_search/data"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-size", type=int, default=20)
    parser.add_argument(
        "--package-copy",
        action="store_true",
        help=f"also write emails.jsonl to {PACKAGE_DATA} (what Mailbox.default() loads)",
    )
    args = parser.parse_args(argv)
    emails, queries = generate_mailbox(args.seed)
    train, test = split_queries(queries, args.test_size, args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, rows in [
        ("emails", emails),
        ("queries", queries),
        ("train", train),
        ("test", test),
    ]:
        write_jsonl(args.out / f"{name}.jsonl", rows)
    if args.package_copy:
        PACKAGE_DATA.mkdir(exist_ok=True)
        write_jsonl(PACKAGE_DATA / "emails.jsonl", emails)
    print(
        f"{len(emails)} emails, {len(queries)} queries ({len(train)} train, {len(test)} test) "
        f"-> {args.out}"
    )


if __name__ == "__main__":
    main()
