"""Email search task: the generated mailbox, its FTS5 search and the agent's tools."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from pathlib import Path

import pytest

from reinforge.envs.email_search import (
    TOOL_SCHEMAS,
    EmailTools,
    Mailbox,
    generate_mailbox,
    split_queries,
)
from reinforge.envs.email_search.company import INBOXES
from reinforge.envs.email_search.generate import PACKAGE_DATA

EXAMPLE_DATA = Path(__file__).resolve().parents[3] / "examples" / "email_search" / "data"
EMAILS, QUERIES = generate_mailbox(0)
BY_ID = {e["message_id"]: e for e in EMAILS}
DANA = "dana.price@northwind-energy.example"


def _people(email: dict) -> list[str]:
    return [
        email["from_address"],
        *email["to_addresses"],
        *email["cc_addresses"],
        *email["bcc_addresses"],
    ]


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def mailbox():
    with Mailbox(EMAILS) as box:
        yield box


# -- the generator ---------------------------------------------------------------


def test_generator_is_deterministic():
    assert generate_mailbox(0) == (EMAILS, QUERIES)
    assert generate_mailbox(1)[0] != EMAILS


def test_generated_emails_have_the_expected_shape():
    assert 250 <= len(EMAILS) <= 350
    assert len(BY_ID) == len(EMAILS)
    assert len(INBOXES) == 6
    for email in EMAILS:
        assert re.fullmatch(r"<nw-\d{4}@northwind-energy\.example>", email["message_id"])
        assert re.fullmatch(r"2001-\d\d-\d\d \d\d:\d\d:\d\d", email["date"])
        assert email["subject"] and email["body"] and email["to_addresses"]
        assert any(a in INBOXES for a in _people(email)), email["message_id"]
    assert [e["date"] for e in EMAILS] == sorted(e["date"] for e in EMAILS)


def test_every_query_is_answered_by_its_source_email():
    assert len(QUERIES) == 120
    assert [q["id"] for q in QUERIES] == list(range(120))
    for q in QUERIES:
        assert set(q) == {
            "id",
            "question",
            "answer",
            "message_ids",
            "inbox_address",
            "query_date",
            "how_realistic",
        }
        (source_id,) = q["message_ids"]
        source = BY_ID[source_id]
        assert q["inbox_address"] in INBOXES
        assert q["inbox_address"] in _people(source)
        assert q["answer"] in source["body"] or q["answer"] in source["subject"]
        assert source["date"][:10] <= q["query_date"] <= "2001-12-31"
        assert isinstance(q["how_realistic"], float) and 0 <= q["how_realistic"] <= 1
    # no inbox is asked the same question twice (it would have two answers)
    pairs = [(q["inbox_address"], q["question"]) for q in QUERIES]
    assert len(pairs) == len(set(pairs))


def test_shipped_files_match_the_generator():
    assert _read_jsonl(PACKAGE_DATA / "emails.jsonl") == EMAILS
    assert _read_jsonl(EXAMPLE_DATA / "emails.jsonl") == EMAILS
    assert _read_jsonl(EXAMPLE_DATA / "queries.jsonl") == QUERIES
    train, test = (
        _read_jsonl(EXAMPLE_DATA / "train.jsonl"),
        _read_jsonl(EXAMPLE_DATA / "test.jsonl"),
    )
    assert (train, test) == split_queries(QUERIES, 20, 0)
    assert len(train) == 100 and len(test) == 20
    assert not {q["id"] for q in train} & {q["id"] for q in test}
    assert all(q["question"] and q["answer"] for q in train + test)


# -- search and read ------------------------------------------------------------


def test_search_finds_the_source_by_answer_and_by_subject(mailbox):
    for q in QUERIES:
        source = BY_ID[q["message_ids"][0]]
        hits = mailbox.search_emails(q["inbox_address"], [q["answer"]])
        assert source["message_id"] in [h["message_id"] for h in hits], q
        words = [w for w in re.findall(r"[\w-]+", source["subject"]) if len(w) > 2]
        hits = mailbox.search_emails(q["inbox_address"], words)
        assert source["message_id"] in [h["message_id"] for h in hits], q
        assert all("<b>" in h["snippet"] for h in hits)


def test_search_needs_every_keyword_and_orders_newest_first(mailbox):
    hits = mailbox.search_emails(DANA, ["invoice"])
    assert len(hits) == 10
    dates = [BY_ID[h["message_id"]]["date"] for h in hits]
    assert dates == sorted(dates, reverse=True)
    assert mailbox.search_emails(DANA, ["invoice", "zebra"]) == []
    assert len(mailbox.search_emails(DANA, ["invoice"], max_results=3)) == 3


def test_search_sees_only_the_inbox_mail(mailbox):
    for inbox in INBOXES:
        for hit in mailbox.search_emails(inbox, ["the"]):
            assert inbox in _people(BY_ID[hit["message_id"]])
    # a source email is invisible from an inbox that neither sent nor received it
    checked = 0
    for q in QUERIES:
        source = BY_ID[q["message_ids"][0]]
        for other in INBOXES:
            if other not in _people(source):
                ids = [h["message_id"] for h in mailbox.search_emails(other, [q["answer"]])]
                assert source["message_id"] not in ids
                checked += 1
    assert checked > 100


def test_sender_and_recipient_filters(mailbox):
    sender = "billing@gridline-supplies.example"
    hits = mailbox.search_emails(DANA, ["invoice"], from_addr=sender.upper())
    assert hits and all(BY_ID[h["message_id"]]["from_address"] == sender for h in hits)
    marcus = "marcus.obi@northwind-energy.example"
    hits = mailbox.search_emails(DANA, ["the"], to_addr=marcus)
    assert hits and all(marcus in _people(BY_ID[h["message_id"]])[1:] for h in hits)


def test_date_filters_include_after_and_exclude_before(mailbox):
    q = next(q for q in QUERIES if q["answer"].startswith("$"))
    source = BY_ID[q["message_ids"][0]]
    day = source["date"][:10]
    next_day = (date.fromisoformat(day) + timedelta(days=1)).isoformat()

    def ids(**dates: str) -> list[str]:
        hits = mailbox.search_emails(q["inbox_address"], [q["answer"]], **dates)
        return [h["message_id"] for h in hits]

    assert source["message_id"] in ids(sent_after=day)
    assert source["message_id"] in ids(sent_after=day, sent_before=next_day)
    assert source["message_id"] not in ids(sent_before=day)
    assert source["message_id"] not in ids(sent_after=next_day)
    for hit in mailbox.search_emails(
        DANA, ["the"], sent_after="2001-03-01", sent_before="2001-04-01"
    ):
        assert "2001-03-01" <= BY_ID[hit["message_id"]]["date"] < "2001-04-01"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"keywords": []}, "at least one keyword"),
        ({"keywords": "invoice"}, "list of strings"),
        ({"keywords": ["invoice", 3]}, "must be a string"),
        ({"keywords": ["*"]}, "no letters or digits"),
        ({"keywords": ["x"], "max_results": 11}, "between 1 and 10"),
        ({"keywords": ["x"], "max_results": 0}, "between 1 and 10"),
        ({"keywords": ["x"], "max_results": True}, "integer"),
        ({"keywords": ["x"], "sent_after": "2001-13-01"}, "sent_after must be a date"),
        ({"keywords": ["x"], "sent_before": "03/01/2001"}, "sent_before must be a date"),
        ({"keywords": ["x"], "sent_before": "2001-3-1"}, "YYYY-MM-DD"),
        ({"keywords": ["x"], "sent_after": "2001-05-01", "sent_before": "2001-05-01"}, "earlier"),
        ({"keywords": ["x"], "from_addr": 7}, "from_addr"),
    ],
)
def test_bad_search_arguments_raise_value_error(mailbox, kwargs, message):
    with pytest.raises(ValueError, match=message):
        mailbox.search_emails(DANA, **kwargs)


@pytest.mark.parametrize(
    ("keyword", "refused"),
    [
        ('foo" OR "bar', False),
        ("*", True),  # nothing to search for: refused by name, never sent to FTS5
        ("NEAR(", False),
        ('"', True),
        ("invoice) OR (lunch", False),
        ("subject:invoice", False),
        ("^invoice", False),
        ("invoice*", False),
        ("-invoice", False),
        ("invoice AND", False),
        ("'; DROP TABLE emails; --", False),
        ("{subject body}: invoice", False),
    ],
)
def test_fts_syntax_in_keywords_is_plain_text(mailbox, keyword, refused):
    """FTS5 syntax in a keyword is searched as text: no sqlite error, a list of hits;
    a keyword with no letters or digits is refused with a ValueError saying so."""
    if refused:
        with pytest.raises(ValueError, match="has no letters or digits"):
            mailbox.search_emails(DANA, [keyword])
    else:
        try:
            hits = mailbox.search_emails(DANA, [keyword])
        except sqlite3.Error as e:  # pragma: no cover - the failure this test guards against
            pytest.fail(f"sqlite error for {keyword!r}: {e}")
        assert isinstance(hits, list)
    # an OR written inside a keyword must not widen the search
    assert mailbox.search_emails(DANA, ['invoice" OR "lunch']) == []
    assert len(mailbox) == len(EMAILS)


def test_read_email_round_trip(mailbox):
    for email in EMAILS[::25]:
        assert mailbox.read_email(email["message_id"]) == email
    assert mailbox.read_email(f" {EMAILS[0]['message_id']} ") == EMAILS[0]
    assert mailbox.read_email("<nw-9999@northwind-energy.example>") is None
    assert mailbox.read_email("") is None


def test_mailbox_from_a_file_path_and_lifecycle(tmp_path):
    path = tmp_path / "emails.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in EMAILS[:20]), encoding="utf-8")
    db = tmp_path / "mail.db"
    with Mailbox(path, db_path=db) as box:
        assert len(box) == 20
        assert box.read_email(EMAILS[3]["message_id"]) == EMAILS[3]
    assert db.exists()  # a database at a given path is kept
    with pytest.raises(FileExistsError):
        Mailbox(EMAILS[:1], db_path=db)
    box = Mailbox(EMAILS[:5])
    temp_db = box.db_path
    assert temp_db.exists() and box.search_emails(DANA, ["the"]) is not None
    box.close()
    assert not temp_db.exists()
    with pytest.raises(RuntimeError, match="closed"):
        box.search_emails(DANA, ["x"])


def test_default_mailbox_is_shipped_and_cached():
    box = Mailbox.default()
    assert box is Mailbox.default()
    assert len(box) == len(EMAILS)
    assert box.read_email(EMAILS[-1]["message_id"]) == EMAILS[-1]


def test_concurrent_searches_agree(mailbox):
    calls = [(q["inbox_address"], [q["answer"]]) for q in QUERIES] + [
        (inbox, ["the"]) for inbox in INBOXES
    ]
    expected = [mailbox.search_emails(inbox, kw) for inbox, kw in calls]
    start = threading.Barrier(8)

    def run(_: int) -> list:
        start.wait()
        return [mailbox.search_emails(inbox, kw) for inbox, kw in calls]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(run, range(8)))
    assert all(r == expected for r in results)


# -- the tools -----------------------------------------------------------------


def test_tool_schemas():
    names = [t["function"]["name"] for t in TOOL_SCHEMAS]
    assert names == ["search_emails", "read_email", "return_final_answer"]
    for tool in TOOL_SCHEMAS:
        assert tool["type"] == "function"
        params = tool["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
        assert "inbox" not in params["properties"]
    search = TOOL_SCHEMAS[0]["function"]["parameters"]["properties"]
    assert set(search) == {
        "keywords",
        "from_addr",
        "to_addr",
        "sent_after",
        "sent_before",
        "max_results",
    }
    assert "I don't know" in TOOL_SCHEMAS[2]["function"]["description"]


@pytest.mark.parametrize(
    ("name", "arguments", "message"),
    [
        ("delete_email", "{}", "unknown tool"),
        ("search_emails", '{"keywords": ["x"', "not valid JSON"),
        ("search_emails", "[1, 2]", "JSON object"),
        ("search_emails", "{}", "missing required arguments ['keywords']"),
        ("search_emails", {"keywords": ["x"], "inbox": DANA}, "unknown arguments ['inbox']"),
        ("search_emails", {"keywords": "invoice"}, "keywords of search_emails must be a array"),
        ("search_emails", {"keywords": ["x"], "max_results": "5"}, "must be a integer"),
        ("search_emails", {"keywords": ["x"], "sent_after": "May 1"}, "sent_after must be a date"),
        ("search_emails", {"keywords": ["x"], "max_results": 50}, "between 1 and 10"),
        ("read_email", "", "missing required arguments ['message_id']"),
        ("read_email", {"message_id": 12}, "must be a string"),
        ("return_final_answer", {"answer": "x"}, "missing required arguments ['sources']"),
        ("return_final_answer", {"answer": "x", "sources": [1]}, "array of strings"),
    ],
)
def test_email_tools_turn_bad_calls_into_error_observations(mailbox, name, arguments, message):
    tools = EmailTools(mailbox, DANA)
    observation = tools.call(name, arguments)
    assert message in json.loads(observation)["error"]
    assert tools.bad_calls == 1
    assert tools.final_answer is None and not tools.found_ids and not tools.read_ids


def test_a_failing_mailbox_is_an_error_observation_and_a_warning(mailbox, caplog, monkeypatch):
    """The mailbox raising is the environment's fault: the agent reads an error (not
    counted as its bad call), and a WARNING says which tool, task and exception."""

    def broken(*args, **kwargs):
        raise sqlite3.OperationalError("database disk image is malformed")

    tools = EmailTools(mailbox, DANA, task_id="task-7")
    monkeypatch.setattr(tools.mailbox, "search_emails", broken)
    caplog.set_level("WARNING", logger="reinforge.envs.email_search.tools")
    observation = tools.call("search_emails", {"keywords": ["budget"]})
    assert "OperationalError: database disk image is malformed" in json.loads(observation)["error"]
    assert tools.bad_calls == 0
    (record,) = [r for r in caplog.records if r.levelname == "WARNING"]
    message = record.getMessage()
    assert "search_emails" in message and "'task-7'" in message
    assert "OperationalError: database disk image is malformed" in message


def test_email_tools_record_an_episode(mailbox):
    q = next(q for q in QUERIES if q["inbox_address"] == DANA)
    source_id = q["message_ids"][0]
    tools = EmailTools(mailbox, DANA)

    hits = json.loads(
        tools.call("search_emails", json.dumps({"keywords": [q["answer"]], "to_addr": None}))
    )
    assert source_id in [h["message_id"] for h in hits]
    assert tools.found_ids == [h["message_id"] for h in hits]
    tools.call("search_emails", {"keywords": [q["answer"]]})
    assert tools.found_ids == [h["message_id"] for h in hits]  # each id once

    assert json.loads(tools.call("read_email", {"message_id": source_id}))["body"]
    assert "no email" in json.loads(tools.call("read_email", '{"message_id": "<nope>"}'))["error"]
    elsewhere = next(e for e in EMAILS if DANA not in _people(e))
    observation = tools.call("read_email", {"message_id": elsewhere["message_id"]})
    assert "no email" in json.loads(observation)["error"]  # another inbox's mail
    assert tools.read_ids == [source_id]
    assert tools.invalid_reads == 2 and tools.bad_calls == 0

    done = tools.call("return_final_answer", {"answer": q["answer"], "sources": [source_id]})
    assert "recorded" in done
    assert tools.final_answer == {"answer": q["answer"], "sources": [source_id]}


def test_email_tools_truncate_long_observations(mailbox):
    tools = EmailTools(mailbox, DANA, observation_char_limit=120)
    observation = tools.call("search_emails", {"keywords": ["invoice"]})
    assert len(observation) <= 120
    assert re.search(r"\[observation truncated: \d+ more characters\]$", observation)
    kept, marker = observation.split("\n...[", 1)
    dropped = int(re.search(r"(\d+) more", marker).group(1))
    full = EmailTools(mailbox, DANA, observation_char_limit=10**6).call(
        "search_emails", {"keywords": ["invoice"]}
    )
    assert full.startswith(kept) and len(full) == len(kept) + dropped
