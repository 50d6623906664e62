"""``EXPERIENCE_OPERATORS``: the names operator configs refer to.

Register a class (``ExperienceOperatorV1`` or legacy ``ExperienceOperator``) with
``@EXPERIENCE_OPERATORS.register_module("my_op")``; a dotted path
``package.module.Class`` in a config also resolves without registration.
"""

from __future__ import annotations

from reinforge.core import Registry

EXPERIENCE_OPERATORS = Registry("experience operator")
