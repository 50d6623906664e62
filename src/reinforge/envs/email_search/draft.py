"""The mailbox being drawn: its emails so far and the small random draws every email uses."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from reinforge.envs.email_search.company import FIRST, INBOXES, YEAR_END, YEAR_START

Email = dict[str, Any]
Fact = tuple[str, str, str]  # (question, answer, inbox the question is asked from)


class MailboxDraft:
    """The emails of one mailbox as they are drawn; values that must be unique are tracked here.

    The kinds of email are drawn by the subclasses (``FactEmails``, ``ChatterEmails``)
    from one seeded ``rng``, so the same seed draws the same mailbox.
    """

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

    # -- adding emails ----------------------------------------------------------

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
