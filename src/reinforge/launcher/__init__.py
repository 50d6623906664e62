"""Run modes that wire explorer, buffer and trainer together (``reinforge run``)."""
