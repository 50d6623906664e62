"""Northwind Energy, the fictional utility whose mailbox the email search task searches:
its people and inboxes, projects, suppliers and service vendors, travel destinations
and the year its emails are dated in."""

from __future__ import annotations

from datetime import datetime

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


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name.lower()).replace("--", "-")


def vendor_address(vendor: str, role: str) -> str:
    """A vendor's email address for one role (``billing``, ``shipping``)."""
    return f"{role}@{_slug(vendor)}.example"
