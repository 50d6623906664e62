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

    python -m reinforge.workflows.envs.email.generate \\
        --out examples/email_search/data --package-copy
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

DOMAIN = "northwind-energy.example"
# (first name, last name, department) of the six inboxes
PEOPLE = [
    ("Dana", "Price", "Finance"),
    ("Marcus", "Obi", "Operations"),
    ("Priya", "Raman", "Projects"),
    ("Tom", "Keller", "Sales"),
    ("Lena", "Hart", "Legal"),
    ("Sam", "Ortiz", "Office"),
]
INBOXES = [f"{first}.{last}@{DOMAIN}".lower() for first, last, _ in PEOPLE]
FIRST = dict(zip(INBOXES, [p[0] for p in PEOPLE], strict=True))
FULL = dict(zip(INBOXES, [f"{p[0]} {p[1]}" for p in PEOPLE], strict=True))
DANA, MARCUS, PRIYA, TOM, LENA, SAM = INBOXES
SHARED = [f"accounts-payable@{DOMAIN}", f"facilities@{DOMAIN}", f"it-help@{DOMAIN}"]
ANNOUNCE = f"announcements@{DOMAIN}"

PROJECTS = [
    "Falcon",
    "Harbor Grid",
    "Sundial",
    "Bluewater",
    "Ridgeline",
    "Copperleaf",
    "Northstar",
    "Mesa Solar",
]
MEETING_KINDS = [
    "kickoff",
    "design review",
    "budget review",
    "status sync",
    "risk review",
    "vendor walkthrough",
]
MILESTONES = [
    "design freeze",
    "permit filing",
    "vendor selection",
    "pilot launch",
    "final report",
    "budget submission",
]
# goods suppliers and what each sells: invoices and shipments are keyed by (supplier, item)
SUPPLIERS = {
    "Gridline Supplies": ["transformer bushings", "fiber patch cables", "backup batteries",
                          "safety harnesses", "insulator strings"],
    "Ostrander Metering": ["smart meter modules", "meter test benches", "current transformers",
                           "meter seals", "data collector units"],
    "Harbor Cable Co": ["medium voltage cable", "cable splice kits", "conduit fittings",
                        "fiber patch cables", "cable reels"],
    "Redwood Turbine Services": ["turbine blade sensors", "gearbox oil filters", "pitch bearings",
                                 "anemometers", "inverter control boards"],
    "Vantage Print Works": ["printed safety manuals", "business cards", "trade show banners",
                            "letterhead", "annual report copies"],
    "Summit Office Supply": ["office chairs", "laptop docking stations", "conference room displays",
                             "standing desks", "paper shredders"],
    "Brightline Safety": ["safety harnesses", "hard hats", "arc flash suits", "first aid kits",
                          "gas detectors"],
    "Keystone Solar Parts": ["inverter control boards", "solar panel clamps", "combiner boxes",
                             "backup batteries", "DC disconnects"],
}  # fmt: skip
# service vendors and their services: contract renewals are keyed by (vendor, service)
SERVICE_VENDORS = {
    "Keystone Facilities": ["office cleaning", "HVAC maintenance", "landscaping",
                            "security monitoring"],
    "Pinecrest Catering": ["catering", "cafeteria management", "break room supplies"],
    "Bluepeak Software": ["software license", "help desk support", "data backup",
                          "GIS mapping license"],
    "Redwood Turbine Services": ["turbine maintenance", "blade inspection", "gearbox overhaul"],
    "Fleetway Leasing": ["vehicle lease", "truck maintenance", "fuel card"],
    "Sentinel Alarm": ["security monitoring", "fire alarm testing", "badge system support"],
    "Clearwave Telecom": ["phone service", "internet service", "mobile plan"],
    "Vantage Print Works": ["print services", "mailroom services"],
}  # fmt: skip
CITIES = [
    ("Boston", "BOS"),
    ("Chicago", "ORD"),
    ("Houston", "IAH"),
    ("Seattle", "SEA"),
    ("Atlanta", "ATL"),
    ("Phoenix", "PHX"),
    ("Portland", "PDX"),
    ("Minneapolis", "MSP"),
    ("San Diego", "SAN"),
    ("Pittsburgh", "PIT"),
    ("Omaha", "OMA"),
    ("Sacramento", "SMF"),
]
AIRLINES = ["UA", "AA", "DL", "WN", "AS", "CO"]
CARRIERS = ["UPS", "FedEx", "DHL"]
YEAR_START = datetime(2001, 1, 2)
YEAR_END = datetime(2001, 12, 31)

Email = dict[str, Any]
A = TypeVar("A")
B = TypeVar("B")
Fact = tuple[str, str, str]  # (question, answer, inbox the question is asked from)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).replace("--", "-")


def _vendor_address(vendor: str, role: str) -> str:
    return f"{role}@{_slug(vendor)}.example"


class _Builder:
    """Draws the emails of one mailbox; values that must be unique are tracked here."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.used: list[str] = []  # drawn identifiers (list, not set: stable across runs)
        self.items: list[tuple[Email, Fact | None]] = []
        self.bookings: list[tuple[str, str]] = []  # (inbox, city) of flight bookings it holds

    # -- small draws -------------------------------------------------------------

    def unique(self, draw: Callable[[], str]) -> str:
        """A value from ``draw`` that no earlier call returned."""
        for _ in range(1000):
            value = draw()
            if value not in self.used:
                self.used.append(value)
                return value
        raise RuntimeError("could not draw a fresh value; the template's space is too small")

    def sent_at(self) -> datetime:
        """A weekday time in business hours, early enough that follow-up dates stay in 2001."""
        rng = self.rng
        while True:
            day = YEAR_START + timedelta(days=rng.randrange(0, 332))
            if day.weekday() < 5:
                return day.replace(
                    hour=rng.randint(7, 18), minute=rng.randrange(60), second=rng.randrange(60)
                )

    def later_day(self, sent: datetime, lo: int, hi: int) -> str:
        day = sent + timedelta(days=self.rng.randint(lo, hi))
        while day.weekday() >= 5:
            day += timedelta(days=1)
        return min(day, YEAR_END).strftime("%Y-%m-%d")

    def amount(self, lo: int, hi: int) -> str:
        return self.unique(lambda: f"${self.rng.randint(lo, hi):,}.{self.rng.randrange(100):02d}")

    def clock(self) -> str:
        return f"{self.rng.randint(8, 16):02d}:{self.rng.choice(['00', '15', '30', '45'])}"

    def others(self, exclude: str, k: int) -> list[str]:
        return self.rng.sample([a for a in INBOXES if a != exclude], k)

    def add(
        self,
        sent: datetime,
        sender: str,
        to: list[str],
        subject: str,
        body: str,
        fact: Fact | None = None,
        cc: list[str] | None = None,
        bcc: list[str] | None = None,
    ) -> Email:
        email = {
            "message_id": "",  # assigned once all emails are sorted by date
            "date": sent.strftime("%Y-%m-%d %H:%M:%S"),
            "subject": subject,
            "from_address": sender,
            "to_addresses": to,
            "cc_addresses": cc or [],
            "bcc_addresses": bcc or [],
            "body": body,
        }
        self.items.append((email, fact))
        return email

    def reply(self, original: Email, sender: str, text: str) -> None:
        """A short reply that repeats the subject's words but not the original's facts."""
        sent = datetime.strptime(original["date"], "%Y-%m-%d %H:%M:%S")
        sent += timedelta(minutes=self.rng.randint(5, 600))
        name = FIRST.get(original["from_address"], "all")
        body = f"Hi {name},\n\n{text}\n\n{FIRST[sender]}"
        self.add(sent, sender, [original["from_address"]], f"Re: {original['subject']}", body)

    # -- fact-bearing emails -----------------------------------------------------

    def meeting(self, project: str, kind: str) -> None:
        rng = self.rng
        sent = self.sent_at()
        host = rng.choice(INBOXES)
        guests = self.others(host, rng.randint(1, 3))
        where = self.unique(
            lambda: (
                f"Room {rng.randint(1, 6)}{rng.choice('ABCDE')} on "
                f"{self.later_day(sent, 2, 20)} at {self.clock()}"
            )
        )
        subject = rng.choice(
            [
                f"Meeting: {project} {kind}",
                f"{project} {kind} - invite",
                f"Scheduling the {project} {kind}",
            ]
        )
        bring = rng.choice(
            [
                "the latest cost estimates",
                "your open action items",
                "the vendor quotes",
                "any schedule risks you see",
                "a one-page status summary",
            ]
        )
        names = ", ".join(FIRST[g] for g in guests)
        body = (
            f"Hi {names},\n\nI have booked {where} for the {project} {kind}. "
            f"We should need about an hour. Please bring {bring}.\n\nThanks,\n{FIRST[host]}"
        )
        question = rng.choice(
            [
                f"Where and when is the {project} {kind} meeting?",
                f"What room, date and time were set for the {project} {kind}?",
            ]
        )
        email = self.add(sent, host, guests, subject, body, (question, where, rng.choice(guests)))
        if rng.random() < 0.35:
            self.reply(
                email,
                guests[0],
                rng.choice(
                    [
                        "Works for me, see you there.",
                        "I may be ten minutes late but will join.",
                        "Thanks - can we also cover the staffing plan?",
                    ]
                ),
            )

    def invoice(self, vendor: str, item: str) -> None:
        rng = self.rng
        sent = self.sent_at()
        to = rng.choice([DANA, DANA, MARCUS, PRIYA])
        number = self.unique(lambda: f"INV-{rng.randint(10000, 99999)}")
        po = self.unique(lambda: f"PO-{rng.randint(3000, 8999)}")
        total = self.amount(400, 48000)
        due = self.later_day(sent, 15, 45)
        body = (
            f"Dear {FIRST[to]},\n\nPlease find below invoice {number} for "
            f"{rng.randint(2, 200)} {item} supplied under {po}.\n\nAmount due: {total}\n"
            f"Payment due by: {due}\n\nPlease quote the invoice number with your payment.\n\n"
            f"Regards,\nAccounts Receivable, {vendor}"
        )
        question, answer = rng.choice(
            [
                (f"How much did {vendor} invoice us for the {item}?", total),
                (f"What is the number of the invoice from {vendor} for the {item}?", number),
                (f"By what date must the {vendor} invoice for the {item} be paid?", due),
            ]
        )
        cc = [SHARED[0]] if rng.random() < 0.5 else []
        self.add(
            sent,
            _vendor_address(vendor, "billing"),
            [to],
            f"Invoice {number} - {vendor}",
            body,
            (question, answer, to),
            cc=cc,
        )

    def flight(self, traveller: str, city: str, code: str) -> None:
        rng = self.rng
        sent = self.sent_at()
        flight = self.unique(lambda: f"{rng.choice(AIRLINES)} {rng.randint(100, 2999)}")
        confirmation = self.unique(
            lambda: "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(6))
        )
        day = self.later_day(sent, 3, 30)
        depart = f"{day} at {self.clock()}"
        body = (
            f"Dear {FULL[traveller]},\n\nYour trip to {city} is booked.\n\n"
            f"Flight: {flight}\nDeparts: Denver (DEN) {depart}\nArrives: {city} ({code})\n"
            f"Seat: {rng.randint(3, 34)}{rng.choice('ABCDEF')}\n"
            f"Confirmation code: {confirmation}\n\nSafe travels,\nSkyway Travel"
        )
        question, answer = rng.choice(
            [
                (f"What is my flight number for the trip to {city}?", flight),
                (f"What is the confirmation code of my flight to {city}?", confirmation),
                (f"When does my flight to {city} depart?", depart),
            ]
        )
        # Sam (office manager) is copied on some bookings, but never on a second one to a
        # city his inbox already has a booking for: "my flight to X" must stay unambiguous
        cc = []
        if (SAM, city) not in self.bookings and rng.random() < 0.5:
            cc = [SAM]
            self.bookings.append((SAM, city))
        email = self.add(
            sent,
            "bookings@skyway-travel.example",
            [traveller],
            f"Booking confirmed: Denver to {city}",
            body,
            (question, answer, traveller),
            cc=cc,
        )
        if rng.random() < 0.3:
            self.add(
                sent + timedelta(hours=2),
                traveller,
                [SAM],
                f"Fwd: {email['subject']}",
                f"Sam, I'll be in {city} that week; please file this with the travel "
                f"expenses.\n\n{FIRST[traveller]}",
            )

    def deadline(self, project: str, milestone: str) -> None:
        rng = self.rng
        sent = self.sent_at()
        lead = rng.choice([PRIYA, PRIYA, MARCUS, TOM])
        team = self.others(lead, rng.randint(2, 4))
        due = self.later_day(sent, 7, 28)
        body = (
            f"Team,\n\nA reminder that the {milestone} for {project} is due on {due}. "
            f"{rng.choice(['Please flag blockers early.', 'Drafts go in the shared folder.', 'Late items need my sign-off.'])}"
            f"\n\n{FIRST[lead]}"
        )
        question = rng.choice(
            [
                f"When is the {milestone} for the {project} project due?",
                f"What is the due date of the {project} {milestone}?",
            ]
        )
        self.add(
            sent,
            lead,
            team,
            f"{project}: {milestone} deadline",
            body,
            (question, due, rng.choice([lead, *team])),
        )

    def contract(self, vendor: str, service: str) -> None:
        rng = self.rng
        sent = self.sent_at()
        number = self.unique(lambda: f"NWC-{rng.randint(1000, 9999)}")
        value = self.amount(6000, 250000)
        renews = self.later_day(sent, 10, 40)
        to = rng.sample([DANA, TOM, MARCUS], rng.randint(1, 2))
        body = (
            f"Hello {' and '.join(FIRST[a] for a in to)},\n\nOur {service} contract with "
            f"{vendor} (contract {number}) renews on {renews} for another "
            f"{rng.choice([12, 24, 36])} months at an annual value of {value}. "
            f"Let me know by Friday if anyone wants to renegotiate.\n\nLena"
        )
        question, answer = rng.choice(
            [
                (f"What is the annual value of the {service} contract with {vendor}?", value),
                (f"What is the contract number of our {service} contract with {vendor}?", number),
                (f"On what date does the {service} contract with {vendor} renew?", renews),
            ]
        )
        self.add(
            sent,
            LENA,
            to,
            f"Renewal: {vendor} {service} contract",
            body,
            (question, answer, rng.choice([LENA, *to])),
            cc=[DANA] if DANA not in to else [],
        )

    def shipment(self, vendor: str, item: str) -> None:
        rng = self.rng
        sent = self.sent_at()
        carrier = rng.choice(CARRIERS)
        alnum = "0123456789ABCDEFGHJKLMNPRSTUVWXYZ"
        draw = {
            "UPS": lambda: "1Z" + "".join(rng.choice(alnum) for _ in range(16)),
            "FedEx": lambda: "".join(rng.choice("0123456789") for _ in range(12)),
            "DHL": lambda: "".join(rng.choice("0123456789") for _ in range(10)),
        }[carrier]
        tracking = self.unique(draw)
        arrives = self.later_day(sent, 2, 12)
        to = rng.choice([MARCUS, MARCUS, SAM, PRIYA])
        body = (
            f"Hello {FIRST[to]},\n\nYour order of {rng.randint(2, 120)} {item} has shipped via "
            f"{carrier}.\nTracking number: {tracking}\nExpected delivery: {arrives}\n\n"
            f"Thank you for your business,\nShipping desk, {vendor}"
        )
        question, answer = rng.choice(
            [
                (f"What is the tracking number for the {item} shipped by {vendor}?", tracking),
                (f"When are the {item} from {vendor} expected to be delivered?", arrives),
            ]
        )
        bcc = [SHARED[1]] if rng.random() < 0.3 else []
        self.add(
            sent,
            _vendor_address(vendor, "shipping"),
            [to],
            f"Your {vendor} order has shipped",
            body,
            (question, answer, to),
            bcc=bcc,
        )

    # -- emails with no question -------------------------------------------------

    def chatter(self) -> None:
        rng = self.rng
        sent = self.sent_at()
        kind = rng.randrange(4)
        if kind == 0:
            topic = rng.choice(
                [
                    "safety week",
                    "the new badge readers",
                    "quarterly results",
                    "the parking garage repaint",
                    "the holiday schedule",
                ]
            )
            self.add(
                sent,
                ANNOUNCE,
                list(INBOXES),
                f"Northwind news: {topic}",
                f"All staff,\n\nA short note about {topic}. Details are on the intranet; "
                f"questions go to {rng.choice(SHARED)}.\n\nCommunications team",
            )
        elif kind == 1:
            sender = rng.choice(INBOXES)
            place = rng.choice(
                ["the taco place", "Rosie's deli", "the food trucks", "the cafe on 5th"]
            )
            self.add(
                sent,
                sender,
                self.others(sender, rng.randint(1, 3)),
                "Lunch?",
                f"Anyone up for {place} around noon?\n\n{FIRST[sender]}",
            )
        elif kind == 2:
            to = rng.choice(INBOXES)
            self.add(
                sent,
                SHARED[2],
                [to],
                "Scheduled maintenance tonight",
                f"Hi {FIRST[to]},\n\nMail and the file shares will be offline from 22:00 "
                f"to 23:30 tonight for upgrades. No action is needed.\n\nIT help desk",
            )
        else:
            sender = rng.choice(INBOXES)
            project = rng.choice(PROJECTS)
            self.add(
                sent,
                sender,
                self.others(sender, 1),
                f"{project} notes",
                f"Quick notes from today: the {project} team is waiting on quotes and "
                f"the schedule looks tight. More next week.\n\n{FIRST[sender]}",
            )


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
