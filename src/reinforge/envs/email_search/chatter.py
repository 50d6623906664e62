"""Emails that carry no fact worth asking about: announcements, lunch plans, IT notices, notes."""

from __future__ import annotations

from reinforge.envs.email_search.company import ANNOUNCE, FIRST, INBOXES, PROJECTS, SHARED
from reinforge.envs.email_search.draft import MailboxDraft


class ChatterEmails(MailboxDraft):
    """The mailbox's filler: searches must look past it."""

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
