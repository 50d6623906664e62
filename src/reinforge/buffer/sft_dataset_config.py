"""Config of a dataset of demonstrations (OpenAI-format conversations) for SFT.

Used twice: as ``buffer.trainer_input.experience_buffer`` (what ``mode: sft`` trains
on, Trinity-RFT's name for the trainer's input) and inside ``trainer.sft_aux`` (the
demonstrations mixed into RL steps).
"""

from __future__ import annotations

from pydantic import Field

from reinforge.core.strict_model import StrictModel


class SftFormat(StrictModel):
    """Which keys of a row hold the conversation and its tool list, and how to render it."""

    messages_key: str = Field("messages", description="the row's OpenAI-format message list")
    tools_key: str = Field("tools", description="the row's tool list (optional per row)")
    chat_template: str | None = Field(
        None, description="a Jinja chat template to use instead of the tokenizer's"
    )


class SftDatasetConfig(StrictModel):
    """A JSON-lines file of conversations; each row becomes one Experience."""

    name: str = "sft"
    path: str = Field(description="a .jsonl file, relative to the config file")
    format: SftFormat = Field(default_factory=SftFormat)
    limit: int | None = Field(None, ge=1, description="use only the first N rows")
    shuffle: bool = Field(True, description="reshuffle the rows every epoch")
    seed: int = 42
    length_bucket_window: int = Field(
        16,
        ge=1,
        description="length bucketing: the shuffled rows are cut into windows of this many "
        "batches and sorted by length within each window, so a batch holds rows of similar "
        "length (less padding); 1 keeps the shuffled order",
    )


class TrainerInput(StrictModel):
    """What the trainer reads besides the explorer's experiences."""

    experience_buffer: SftDatasetConfig | None = Field(
        None, description="mode sft: the demonstrations to train on"
    )
