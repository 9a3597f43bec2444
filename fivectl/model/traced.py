"""Acting through a recorded graph: ``PolicyNet.act`` replayed by TorchScript, the same outputs bit for bit.

A rollout worker calls ``act`` on a few dozen agents every decision: about 260 small torch operations, and
at that size most of their cost is Python and dispatch, not arithmetic. ``torch.jit.trace`` records the
operations of one call into a graph that TorchScript replays without Python: the same kernels in the same
order, on the network's own parameter and buffer tensors (held by reference, so a worker's in-place parameter
copies reach it), with the same random draws from the default generator. The observed unit slots still vary from call to
call: the graph holds ``nonzero`` and ``index_select``, not their sizes at trace time.

What a trace fixes is everything Python decided while it ran: the batch size and the flags (a graph for each).
What the network derives from its parameters and statistics and caches on the Python side until they change
(the normalizers' constants, the stacked embedding tables: ``ObsEncoder.acting_constants``) are the graph's
inputs, taken from those caches on every call: the graph reads them instead of deriving them again (about 150
operations fewer).

Every new graph is checked once against eager ``act`` on the call that made it (same inputs, same random
state): a graph that differs in any output, or a trace that fails (a torch without TorchScript), leaves that
network on eager ``act`` for good, with one warning. Parameters replaced by new tensors (``.to(device)``)
drop the graphs; in-place copies need not.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from fivectl.model.encoder import Obs
from fivectl.model.policy import ActOutput, PolicyNet, State

GraphKey = tuple[int, bool, bool, tuple[str, ...]]


class _ActCall(nn.Module):
    """``PolicyNet.act`` with positional tensor inputs and a tuple of tensor outputs, which tracing needs."""

    def __init__(self, net: PolicyNet, keys: tuple[str, ...], deterministic: bool, with_aux: bool):
        super().__init__()
        self.net = net
        self.keys = keys
        self.deterministic = deterministic
        self.with_aux = with_aux

    def forward(self, h: torch.Tensor, c: torch.Tensor, first: torch.Tensor, *inputs: torch.Tensor):
        obs, constants = inputs[: len(self.keys)], inputs[len(self.keys) :]
        named = dict(zip(self.keys, obs, strict=True))
        with self.net.encoder.pinned(constants):
            out = self.net.act(named, (h, c), first, self.deterministic, self.with_aux)
        aux = tuple(out.aux[name] for name in sorted(out.aux)) if out.aux is not None else ()
        return (out.actions, out.logprob, out.value, out.win_prob, out.state[0], out.state[1], *aux)


def _as_act_output(outputs: tuple[torch.Tensor, ...], aux_names: tuple[str, ...] | None) -> ActOutput:
    actions, logprob, value, win_prob, h, c, *aux = outputs
    return ActOutput(
        actions=actions,
        logprob=logprob,
        value=value,
        win_prob=win_prob,
        state=(h, c),
        aux=dict(zip(aux_names, aux, strict=True)) if aux_names is not None else None,
    )


class TracedActor:
    """``act`` of one ``PolicyNet`` through traced graphs (see the module docstring); same signature and
    outputs as ``PolicyNet.act``. Acting needs no gradient: graphs are recorded and run without one."""

    def __init__(self, net: PolicyNet):
        self.net = net
        self.graphs: dict[GraphKey, torch.jit.ScriptModule] = {}
        self.aux_names: dict[GraphKey, tuple[str, ...] | None] = {}
        self.eager = False  # set for good when a trace fails or differs from eager
        # (module, name) of the first parameter and buffer, found once: listing them walks every module
        self._probes = [
            next((m, n) for m in net.modules() for n in attrs(m)) for attrs in (_own_parameters, _own_buffers)
        ]
        self._tensors = self._fingerprint()

    def _fingerprint(self) -> tuple[int, ...]:
        """Storage of the first parameter and buffer: moving or rebuilding the network replaces every tensor,
        copying into it (``load_state_dict``, a worker's parameter refresh) none. All of them would cost more
        than the graph saves at this batch size."""
        return tuple(getattr(module, name).data_ptr() for module, name in self._probes)

    @torch.no_grad()
    def act(
        self,
        obs: Obs,
        state: State,
        first: torch.Tensor,
        deterministic: bool = False,
        with_aux: bool = False,
    ) -> ActOutput:
        if self.eager:
            return self.net.act(obs, state, first, deterministic, with_aux)
        fingerprint = self._fingerprint()
        if fingerprint != self._tensors:  # parameters replaced, not copied into: the graphs hold the old ones
            self.graphs.clear()
            self._tensors = fingerprint
        keys = tuple(sorted(obs))
        key: GraphKey = (int(first.shape[0]), deterministic, with_aux, keys)
        constants = self.net.encoder.acting_constants(state[0].dtype)
        inputs = (state[0], state[1], first, *(obs[k] for k in keys), *constants)
        graph = self.graphs.get(key)
        if graph is None:
            return self._trace_and_check(key, inputs, obs, state, first, deterministic, with_aux)
        return _as_act_output(graph(*inputs), self.aux_names[key])

    def _trace_and_check(self, key, inputs, obs, state, first, deterministic, with_aux) -> ActOutput:
        """Trace, then run eager ``act`` and the graph from the same random state: the caller gets eager's
        outputs and the random stream it would have had without the trace."""
        rng = torch.get_rng_state()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # TracerWarnings on Python values: what the graph key covers
                graph = torch.jit.trace(
                    _ActCall(self.net, key[3], deterministic, with_aux), inputs, check_trace=False
                )
        except Exception as exc:  # noqa: BLE001 - whatever stops a trace, eager act still works
            graph = None
            self._give_up(f"tracing failed ({type(exc).__name__}: {exc})")
        torch.set_rng_state(rng)
        expected = self.net.act(obs, state, first, deterministic, with_aux)
        if graph is None:
            return expected
        aux_names = tuple(sorted(expected.aux)) if expected.aux is not None else None
        torch.set_rng_state(rng)
        got = _as_act_output(graph(*inputs), aux_names)
        if _same_outputs(expected, got):
            self.graphs[key] = graph
            self.aux_names[key] = aux_names
        else:
            self._give_up("the traced graph's outputs differ from eager act")
        return expected

    def _give_up(self, why: str) -> None:
        warnings.warn(f"acting without a traced graph: {why}", RuntimeWarning, stacklevel=4)
        self.eager = True
        self.graphs.clear()


def _own_parameters(module: nn.Module) -> list[str]:
    return [name for name, p in module._parameters.items() if p is not None]


def _own_buffers(module: nn.Module) -> list[str]:
    return [name for name, b in module._buffers.items() if b is not None]


def _same_outputs(a: ActOutput, b: ActOutput) -> bool:
    pairs = [(a.actions, b.actions), (a.logprob, b.logprob), (a.value, b.value), (a.win_prob, b.win_prob)]
    pairs += list(zip(a.state, b.state, strict=True))
    if (a.aux is None) != (b.aux is None):
        return False
    if a.aux is not None and b.aux is not None:
        pairs += [(a.aux[k], b.aux[k]) for k in a.aux]
    return all(torch.equal(x, y) for x, y in pairs)
