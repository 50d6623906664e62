"""check_token_ids: the one check every engine request's ids go through."""

from __future__ import annotations

import re
from enum import IntEnum

import numpy as np
import pytest

from reinforge.models.engine import check_token_ids


class Token(IntEnum):
    A = 7


@pytest.mark.parametrize(
    "ids",
    [[], [0, 5, 258], (3, 4), [Token.A, 9], list(range(259)) * 3],
    ids=["empty", "list", "tuple", "int-subclass", "long"],
)
def test_ids_in_the_vocabulary_pass(ids: list) -> None:
    check_token_ids(ids, 259)


@pytest.mark.parametrize(
    ("ids", "named"),
    [
        ([5, 600, -1], 600),  # the first bad id is the one named
        ([5, -1, 600], -1),
        ([5, True], True),
        ([5, 2.0], 2.0),
        ([5, "a"], "a"),
        ([5, np.int64(6)], np.int64(6)),
        ([5] * 1000 + [259], 259),
    ],
)
def test_the_first_bad_id_is_named(ids: list, named: object) -> None:
    with pytest.raises(ValueError, match=f"token id {re.escape(repr(named))} is outside"):
        check_token_ids(ids, 259)


def test_without_a_vocabulary_size_only_type_and_sign_count() -> None:
    check_token_ids([0, 10**9], None)
    with pytest.raises(ValueError, match=r"token id -3 .*non-negative"):
        check_token_ids([1, -3], None)
