"""Acting for some agents of a worker's batch: the latest network for the agents it plays, each past version for
the agents it plays (``fivectl.runtime.opponents``), through traced graphs (``fivectl.model.traced``)."""

from __future__ import annotations

import numpy as np
import torch

from fivectl.model.policy import ActOutput
from fivectl.model.traced import TracedActor

ROW_BUCKET = 8
"""Teams per step of the batch sizes a network acts on (``act_on_rows``)."""


def act_on_rows(
    actor: TracedActor,
    obs: dict[str, torch.Tensor],
    state: tuple[torch.Tensor, torch.Tensor],
    first: torch.Tensor,
    *,
    rows: np.ndarray,
    team_size: int,
    with_aux: bool,
) -> ActOutput:
    """``actor.act`` on the agent ``rows`` alone (whole teams, in order), scattered back into outputs for every
    agent: zeros on the other rows, whose LSTM state stays as it was.

    The rows are padded to a multiple of ``ROW_BUCKET`` teams with copies of the first team, so one traced
    graph serves every count in a bucket: a worker meets a handful of sizes, not one per mix of opponents. The
    padding's outputs are dropped."""
    agents, n = first.shape[0], rows.size
    pad = -n % (ROW_BUCKET * team_size)
    index = torch.from_numpy(np.concatenate([rows, np.resize(rows[:team_size], pad)]))
    sub = actor.act(
        {key: value.index_select(0, index) for key, value in obs.items()},
        (state[0].index_select(1, index), state[1].index_select(1, index)),
        first.index_select(0, index),
        with_aux=with_aux,
    )
    keep = index[:n]

    def scattered(x: torch.Tensor) -> torch.Tensor:
        full = x.new_zeros(agents, *x.shape[1:])
        full[keep] = x[:n]
        return full

    h, c = state[0].clone(), state[1].clone()
    h[:, keep], c[:, keep] = sub.state[0][:, :n], sub.state[1][:, :n]
    return ActOutput(
        actions=scattered(sub.actions),
        logprob=scattered(sub.logprob),
        value=scattered(sub.value),
        win_prob=scattered(sub.win_prob),
        state=(h, c),
        aux={name: scattered(x) for name, x in sub.aux.items()} if sub.aux is not None else None,
    )
