"""Mirror of ``trinity.common.rewards.eval_utils`` (newer Trinity-RFT moved
``trinity.utils.eval_utils`` here and renamed its ``compute_score`` ``compute_score_v0``)."""

from reinforge.trinity.utils.eval_utils import *  # noqa: F403
from reinforge.trinity.utils.eval_utils import __all__ as _moved
from reinforge.trinity.utils.eval_utils import compute_score as compute_score_v0

__all__ = [*_moved, "compute_score_v0"]
