"""Mirror of ``trinity.utils.log``: ``get_logger``."""

from __future__ import annotations

import logging
from typing import Any


def get_logger(
    name: str | None = None, level: int | str | None = None, **kwargs: Any
) -> logging.Logger:
    """The standard-library logger ``name``; reinforge's logging set-up decides where it goes.

    ``level`` sets the logger's level when given; Trinity-RFT's other options (such as
    ``in_ray_actor``) are accepted and have no effect.
    """
    logger = logging.getLogger(name)
    if level is not None:
        logger.setLevel(level)
    return logger
