"""Mirror of ``trinity.buffer.selector``: the selector base class and registry (a selector
registered here is one ``data_selector.selector_type`` can name)."""

from reinforge.buffer.task_selectors import SELECTORS, BaseSelector

__all__ = ["SELECTORS", "BaseSelector"]
