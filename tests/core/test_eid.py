"""EID: hierarchical ids, grouping keys and the text round trip."""

from __future__ import annotations

import pytest

from reinforge.core import EID, Experience


def test_ids_nest() -> None:
    eid = EID(batch=3, task="t7", run=2, step=1, suffix="abc")
    assert eid.tid == "3/t7"
    assert eid.rid == "3/t7/2"
    assert eid.sid == "3/t7/2/1"
    assert eid.uid == "3/t7/2/1/abc"
    assert str(eid) == eid.to_str() == eid.uid
    assert [eid.key(k) for k in ("task", "run", "step", "uid")] == [
        eid.tid,
        eid.rid,
        eid.sid,
        eid.uid,
    ]


def test_unknown_id_type() -> None:
    with pytest.raises(ValueError, match="unknown id_type 'batch'"):
        EID().key("batch")


def test_suffix_is_unique_per_experience() -> None:
    a, b = EID(batch=1, task=1), EID(batch=1, task=1)
    assert a.tid == b.tid
    assert a.uid != b.uid


@pytest.mark.parametrize(
    "eid",
    [
        EID(batch=0, task=5, run=1, step=2, suffix="x1"),
        EID(batch="train", task="gsm8k-12", run=0, step=0, suffix="s"),
        EID(batch=-1, task="", run=3, step=4, suffix="y"),
    ],
)
def test_from_str_round_trip(eid: EID) -> None:
    assert EID.from_str(eid.to_str()) == eid


def test_from_str_rejects_malformed() -> None:
    with pytest.raises(ValueError, match="malformed EID 'a/b/c'"):
        EID.from_str("a/b/c")


def test_group_by() -> None:
    exps = [
        Experience(tokens=[1, 2], prompt_length=1, eid=EID(batch=0, task=t, run=r, step=s))
        for t in (0, 1)
        for r in (0, 1)
        for s in (0, 1)
    ]
    by_task = Experience.group_by(exps, "task")
    assert sorted(by_task) == ["0/0", "0/1"]
    assert all(len(v) == 4 for v in by_task.values())
    assert len(Experience.group_by(exps, "run")) == 4
    assert len(Experience.group_by(exps, "step")) == 8
    assert len(Experience.group_by(exps, "uid")) == 8
    assert by_task["0/1"] == [e for e in exps if e.eid.task == 1]


def test_from_str_keeps_slashes_in_task_ids_and_leading_zeros():
    from reinforge.core import EID

    eid = EID(batch=3, task="gsm8k/12", run=2, step=1)
    back = EID.from_str(eid.to_str())
    assert (back.batch, back.task, back.run, back.step, back.suffix) == (
        3,
        "gsm8k/12",
        2,
        1,
        eid.suffix,
    )
    odd = EID.from_str(EID(batch="007", task="-1", run=0, step=0).to_str())
    assert odd.batch == "007" and odd.task == -1


def test_suffixes_are_12_hex_digits_and_ignore_the_users_random_seed():
    import random

    from reinforge.core import EID

    random.seed(0)
    first = EID().suffix
    random.seed(0)
    second = EID().suffix
    assert first != second  # a private generator: reseeding `random` repeats nothing
    assert len(first) == 12 and int(first, 16) >= 0 and first == first.lower()
