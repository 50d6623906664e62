"""The optimizer state of a checkpoint, written by one process or by several ranks and
read back by any number of ranks.

Several ranks write it with ``torch.distributed.checkpoint`` (DCP): each rank saves its
shards, keyed by parameter name, and DCP reshards on load, so a run saved on 2 ranks
resumes on 1 or 4. One process keeps today's ``optim.pt`` (a plain ``state_dict``
keyed by parameter index), which ranks read by mapping the indices to names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn


def save_optimizer(model: nn.Module, optimizer: torch.optim.Optimizer, folder: Path) -> None:
    """Write ``optimizer``'s state (every rank calls this: a collective)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

    dcp.save({"optimizer": get_optimizer_state_dict(model, optimizer)}, checkpoint_id=str(folder))


def load_optimizer(
    model: nn.Module, optimizer: torch.optim.Optimizer, saved: Any, distributed: bool
) -> None:
    """Restore ``saved``: a DCP folder (from ``save_optimizer``) or a plain state dict
    (``optim.pt``), into a trainer of one process or of several ranks."""
    from torch.distributed.checkpoint.state_dict import (
        StateDictOptions,
        get_optimizer_state_dict,
        set_optimizer_state_dict,
    )

    if isinstance(saved, Path):
        import torch.distributed.checkpoint as dcp

        state = get_optimizer_state_dict(model, optimizer)  # allocated, to be filled
        dcp.load({"optimizer": state}, checkpoint_id=str(saved))
        set_optimizer_state_dict(model, optimizer, state)
        return
    if not distributed:
        optimizer.load_state_dict(saved)
        return
    names = [name for name, p in model.named_parameters() if p.requires_grad]
    try:
        by_name = {
            "state": {names[int(i)]: value for i, value in saved["state"].items()},
            "param_groups": [
                {**group, "params": [names[int(i)] for i in group["params"]]}
                for group in saved["param_groups"]
            ],
        }
    except (IndexError, KeyError) as exc:
        raise ValueError(f"the optimizer state does not fit the model ({exc})") from exc
    options = StateDictOptions(full_state_dict=True)
    set_optimizer_state_dict(model, optimizer, by_name, options=options)
