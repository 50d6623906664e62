"""Demonstration sets of a run, tokenized with its model's chat template.

Two uses: the dataset ``mode: sft`` trains on (``buffer.trainer_input.experience_buffer``)
and the demonstrations mixed into RL steps (``trainer.sft_aux``).
"""

from __future__ import annotations

from reinforge.buffer.sft_batches import SftBatches
from reinforge.buffer.sft_dataset import (
    SftDataError,
    read_conversations,
    tokenize_demonstrations,
)
from reinforge.buffer.sft_dataset_config import SftDatasetConfig
from reinforge.launcher.session import RunSession
from reinforge.models.wrapper.chat_prompts import ChatPrompts


def load_demonstrations(
    session: RunSession, config: SftDatasetConfig, batch_size: int, what: str
) -> SftBatches:
    """Read, check and tokenize ``config``'s rows; rows over the length limit are
    truncated (or skipped when no assistant token fits), with one warning saying how
    many. ``what`` names the config key in messages."""
    engine = session.explorer.engine
    tokenizer = engine.tokenizer
    limit = getattr(engine, "max_model_len", None) or session.cfg.model.max_model_len
    conversations = read_conversations(config, session.cfg.config_dir)
    prompts = ChatPrompts(tokenizer, config.format.chat_template)
    demos = tokenize_demonstrations(conversations, prompts.render_text, tokenizer.encode, limit)
    reporter = session.reporter
    if demos.truncated:
        reporter.warn(
            f"{what}: {len(demos.truncated)} of {len(conversations)} conversations are longer "
            f"than the {limit}-token limit and were truncated (first: {demos.truncated[0]})"
        )
    if demos.skipped:
        reporter.warn(
            f"{what}: {len(demos.skipped)} conversations skipped, their first assistant turn "
            f"starts past the {limit}-token limit (first: {demos.skipped[0]})"
        )
    if not demos.experiences:
        raise SftDataError(f"{what}: no conversation of {config.path} fits in {limit} tokens")
    reporter.info(f"{what}: {len(demos.experiences)} conversations from {config.path}")
    return SftBatches(
        demos.experiences,
        batch_size,
        shuffle=config.shuffle,
        seed=config.seed,
        window=config.length_bucket_window,
    )


def load_aux_demonstrations(session: RunSession) -> SftBatches | None:
    """The demonstrations of ``trainer.sft_aux`` (None when unset or weighted 0)."""
    aux = session.cfg.trainer.sft_aux
    if aux is None or aux.weight == 0:
        return None
    return load_demonstrations(session, aux, aux.batch_size, "trainer.sft_aux")
