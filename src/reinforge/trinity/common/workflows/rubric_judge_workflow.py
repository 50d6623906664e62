"""Mirror of ``trinity.common.workflows.rubric_judge_workflow``."""

from reinforge.workflows import RubricJudgeWorkflow

__all__ = ["RubricJudgeWorkflow"]
