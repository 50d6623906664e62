"""An experience's ``teacher_logprobs`` (Trinity-RFT's on-policy distillation field)
reach the trainer's side: they survive the SQLite buffer and both serialisations."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.core import Experience

TEACHER = [-0.125, -2.5, -1e-7, -13.0625]


def _reply() -> Experience:
    return Experience(tokens=[1, 2, 3, 4, 5, 6, 7], prompt_length=3, logprobs=[-0.5] * 4)


def test_teacher_logprobs_is_a_per_token_field() -> None:
    exp = Experience(tokens=[1, 2, 3, 4], prompt_length=2, teacher_logprobs=[-1.0, -2.0])
    assert exp.teacher_logprobs.dtype == torch.float32
    with pytest.raises(ValueError, match="teacher_logprobs has 3 entries"):
        Experience(tokens=[1, 2, 3, 4], prompt_length=2, teacher_logprobs=[-1.0] * 3)
    assert _reply().teacher_logprobs is None


@pytest.mark.parametrize(
    "assigned",
    [
        torch.tensor(TEACHER),
        torch.tensor([0.0, *TEACHER])[1:],  # a slice, as Trinity's workflows take it
        torch.tensor(TEACHER, requires_grad=True),
        TEACHER,  # a plain list
    ],
    ids=["tensor", "slice", "requires_grad", "list"],
)
def test_teacher_logprobs_set_after_sampling_survive_the_sqlite_buffer(
    tmp_path: Path, assigned: object
) -> None:
    exp = _reply()
    exp.teacher_logprobs = assigned  # Trinity: response.teacher_logprobs = teacher[...]
    storage = SQLiteExperienceStorage(tmp_path / "buffer.db")
    try:
        storage.write([exp, _reply()])
        back, plain = storage.read()
    finally:
        storage.close()
    assert back.teacher_logprobs.dtype == torch.float32
    assert torch.equal(back.teacher_logprobs, torch.tensor(TEACHER, dtype=torch.float32))
    assert plain.teacher_logprobs is None
    assert torch.equal(Experience.from_dict(exp.to_dict()).teacher_logprobs, back.teacher_logprobs)
