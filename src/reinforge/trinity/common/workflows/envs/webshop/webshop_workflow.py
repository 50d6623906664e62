"""Mirror of ``trinity.common.workflows.envs.webshop.webshop_workflow``.

``parse_action`` and ``validate_action`` are Trinity-RFT's helpers of that module
(the action inside ``<action>``, and whether it can be taken on the page).
"""

from reinforge.envs.webshop import WebShopWorkflow
from reinforge.envs.webshop.prompts import parse_action, validate_action

__all__ = ["WebShopWorkflow", "parse_action", "validate_action"]
