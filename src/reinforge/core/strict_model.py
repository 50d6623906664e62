"""The pydantic base of every YAML config section: a typo in a key is an error."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A config section that refuses unknown keys (``extra="forbid"``) and accepts a
    field by its name as well as by its alias (``populate_by_name``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
