"""ScienceWorld (Wang et al. 2022): science experiments in text, ``sciworld_workflow``
(``workflow.py``) over the simulator's Python interface (``env.py``)."""

from reinforge.envs.sciworld.workflow import SciWorldWorkflow

__all__ = ["SciWorldWorkflow"]
