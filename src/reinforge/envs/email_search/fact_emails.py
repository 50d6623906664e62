"""The emails a question is asked about: each holds a fact under a key unique to its kind."""

from __future__ import annotations

from datetime import timedelta

from reinforge.envs.email_search.company import (
    AIRLINES,
    CARRIERS,
    DANA,
    FIRST,
    FULL,
    INBOXES,
    LENA,
    MARCUS,
    PRIYA,
    SAM,
    SHARED,
    TOM,
    vendor_address,
)
from reinforge.envs.email_search.draft import MailboxDraft


class FactEmails(MailboxDraft):
    """Meeting invitations, invoices, flight bookings, deadlines, contract renewals and
    shipment notices; each adds its email with the (question, answer, inbox) it answers."""

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
            vendor_address(vendor, "billing"),
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
            vendor_address(vendor, "shipping"),
            [to],
            f"Your {vendor} order has shipped",
            body,
            (question, answer, to),
            bcc=bcc,
        )
