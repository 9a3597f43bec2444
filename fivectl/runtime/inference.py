"""Batched acting in an inference server (``train.acting = "server"``): the policy-worker pattern of Sample Factory
and SEED RL on one machine.

    rollout worker w --obs, LSTM state, row mask (request buffer w, shared memory)--+
                     --8-byte request on its own pipe-------------------------------+--> inference server
    rollout worker w <--actions, logprob, value, win_prob, new state, aux, version--+    one forward pass of
                     <--8-byte answer on the same pipe------------------------------+    every ready request

One process runs the latest network on the learner's device (``train.device``: cuda, or cpu where the same code is
tested). Each worker owns one slot of the request block: it writes its agents' observations, LSTM state, ``first``
and the mask of the rows the latest network plays, sends a request on its pipe and waits for the answer. The
server waits on every worker's pipe, takes every request that is ready (and, for up to ``train.acting_wait_ms``,
the ones that are about to be), gathers the masked rows of all of them into one batch (whole teams stay together:
the cross-hero pool needs them), runs ``PolicyNet.act`` once and writes each worker's rows back into its slot. The
server keeps no state between requests: LSTM states live in the workers, parameters in the parameter store (read
between batches; every answer carries the version that acted).

Pipes, not a shared queue or lock: a process killed at any moment leaves nothing locked that another waits on,
and messages are a few bytes (one write, which a kill cannot cut in half). A worker's pipe reaches the running
server as a file descriptor passed over the server's control socket (SCM_RIGHTS); the server greets each new
pipe, and only then does the worker write into its slot, so a replaced worker never shares its slot with a
request of its dead predecessor (whose pipe the server closed when the new one came).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
from contextlib import nullcontext
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait

import numpy as np
import torch

from fivectl.config import Recipe
from fivectl.config.train import TrainConfig
from fivectl.errors import RunFailed
from fivectl.model import PolicyNet
from fivectl.model.policy import ActOutput
from fivectl.model.traced import TracedActor
from fivectl.runtime.acting import ROW_BUCKET
from fivectl.runtime.buffers import ArraySpec, FragmentSlots, SharedBlock
from fivectl.runtime.fragment_source import FragmentSourceOptions, WorkerEvent
from fivectl.runtime.params import ParameterStore
from fivectl.schema import ObsSchema

# The server's status row in shared memory (float64), written by the server, read by the learner.
S_HEARTBEAT, S_READY, S_VERSION, S_PASSES, S_ROWS, S_REQUESTS, S_FORWARD_S = range(7)
N_STATUS = 7
MAX_SERVER_RESTARTS = 3
"""A server that died this many times in one session is a run failure: something keeps killing it."""

HELLO = 0xFFFFFFFF  # the sequence number of the server's greeting on a new pipe
F_AUX, F_DETERMINISTIC = 1, 2  # request flags


def resolve_acting(train: TrainConfig, device: torch.device) -> str:
    """``train.acting`` made concrete: "server" or "worker" (auto: the server when the learner is on a GPU and the
    workers are local processes)."""
    if train.acting != "auto":
        return train.acting
    local_workers = train.backend == "local" and train.workers > 0
    return "server" if device.type == "cuda" and local_workers else "worker"


def request_specs(recipe: Recipe, schema: ObsSchema) -> list[ArraySpec]:
    """One worker's request slot: its agents' inputs, then the outputs the server writes."""
    agents = recipe.train.games_per_worker * 2 * recipe.game.team_size
    lstm, k = recipe.model.lstm_size, recipe.game.team_size
    specs = [
        ArraySpec(f"obs.{key}", (agents, *shape), dtype)
        for key, (shape, dtype) in schema.array_specs().items()
    ]
    specs += [
        ArraySpec("h", (agents, lstm), "float32"),
        ArraySpec("c", (agents, lstm), "float32"),
        ArraySpec("first", (agents,), "bool"),
        ArraySpec("rows", (agents,), "bool"),  # the agents the latest network plays (whole teams)
        ArraySpec("actions", (agents, 4), "int64"),
        ArraySpec("logprob", (agents,), "float32"),
        ArraySpec("value", (agents,), "float32"),
        ArraySpec("win_prob", (agents,), "float32"),
        ArraySpec("next_h", (agents, lstm), "float32"),
        ArraySpec("next_c", (agents, lstm), "float32"),
        ArraySpec("networth_rank", (agents, k), "float32"),
        ArraySpec("version", (1,), "int64"),  # the policy version that answered
    ]
    if recipe.model.aux_objectives:
        specs.append(ArraySpec("objectives", (agents, len(recipe.model.aux_objectives)), "float32"))
    return specs


def status_specs() -> list[ArraySpec]:
    # stop[0] = 1 asks the server to finish: a flag in shared memory, like the workers' (no cross-process lock).
    return [ArraySpec("status", (N_STATUS,), "float64"), ArraySpec("stop", (1,), "int32")]


def encode(seq: int, value: int) -> bytes:
    # Eight bytes: one write well under PIPE_BUF, so a process killed mid-send cannot leave half a message.
    return int(seq).to_bytes(4, "little") + int(value).to_bytes(4, "little", signed=True)


def decode(data: bytes) -> tuple[int, int]:
    return int.from_bytes(data[:4], "little"), int.from_bytes(data[4:8], "little", signed=True)


class ServerGone(EOFError):
    """The inference server's end of a worker's pipe is closed: the worker stops (and is replaced)."""


# ---- the worker's side -----------------------------------------------------------------------------------------


class InferenceClient:
    """A rollout worker's latest network when it acts in the inference server: ``act`` has the signature of
    ``TracedActor.act`` (and ``act_on_rows`` of ``acting.act_on_rows``) and returns outputs for every agent,
    zeros on the rows the request left out, whose LSTM state stays as it was. ``version`` is the policy
    version of the last answer."""

    def __init__(self, block: SharedBlock, worker_id: int, conn: Connection):
        self.block = block.attach()
        self.views = self.block.slots[worker_id]
        self.conn = conn
        self.version = -1
        self.seq = 0
        self.greeted = False

    def act(
        self,
        obs: dict[str, torch.Tensor],
        state: tuple[torch.Tensor, torch.Tensor],
        first: torch.Tensor,
        deterministic: bool = False,
        with_aux: bool = False,
    ) -> ActOutput:
        self.send(obs, state, first, None, with_aux=with_aux, deterministic=deterministic)
        return self.receive(with_aux)

    def act_on_rows(
        self,
        obs: dict[str, torch.Tensor],
        state: tuple[torch.Tensor, torch.Tensor],
        first: torch.Tensor,
        *,
        rows: np.ndarray,
        with_aux: bool,
        deterministic: bool = False,
    ) -> ActOutput:
        self.send(obs, state, first, rows, with_aux=with_aux, deterministic=deterministic)
        return self.receive(with_aux)

    def send(
        self, obs, state, first, rows: np.ndarray | None, *, with_aux: bool, deterministic: bool
    ) -> None:
        """Write the request into this worker's slot and announce it (``rows`` None: every agent)."""
        self._greeting()
        v = self.views
        for key, value in obs.items():
            v[f"obs.{key}"][...] = value.numpy()
        v["h"][...] = state[0][0].numpy()
        v["c"][...] = state[1][0].numpy()
        v["first"][...] = first.numpy()
        if rows is None:
            v["rows"][...] = True
        else:
            v["rows"][...] = False
            v["rows"][rows] = True
        self.seq = self.seq % (HELLO - 1) + 1
        flags = (F_AUX if with_aux else 0) | (F_DETERMINISTIC if deterministic else 0)
        try:
            self.conn.send_bytes(encode(self.seq, flags))
        except OSError as e:
            raise ServerGone("the inference server has gone") from e

    def receive(self, with_aux: bool) -> ActOutput:
        """Wait for the answer to the request just sent; the outputs are copies (the slot is written again)."""
        seq, version = self._recv()
        if seq != self.seq:
            raise RuntimeError(f"inference server answered request {seq}, expected {self.seq}")
        self.version = version
        v = self.views
        aux = None
        if with_aux:
            aux = {"networth_rank": torch.from_numpy(v["networth_rank"].copy())}
            if "objectives" in v:
                aux["objectives"] = torch.from_numpy(v["objectives"].copy())
        return ActOutput(
            actions=torch.from_numpy(v["actions"].copy()),
            logprob=torch.from_numpy(v["logprob"].copy()),
            value=torch.from_numpy(v["value"].copy()),
            win_prob=torch.from_numpy(v["win_prob"].copy()),
            state=(torch.from_numpy(v["next_h"][None].copy()), torch.from_numpy(v["next_c"][None].copy())),
            aux=aux,
        )

    def _greeting(self) -> None:
        """Before the first request: wait until the server has taken this pipe (see the module docstring)."""
        if self.greeted:
            return
        seq, _ = self._recv()
        if seq != HELLO:
            raise RuntimeError(f"inference server: expected a greeting, got answer {seq}")
        self.greeted = True

    def _recv(self) -> tuple[int, int]:
        try:
            return decode(self.conn.recv_bytes())
        except OSError as e:  # a reset connection: the server died
            raise ServerGone("the inference server has gone") from e

    def close(self) -> None:
        self.views = {}
        self.block.close()
        self.conn.close()


# ---- the server ------------------------------------------------------------------------------------------------


class BatchedActor:
    """The server's forward pass: the masked rows of many requests gathered into one batch, ``PolicyNet.act`` on
    the device, each request's rows written back into its slot.

    On CUDA the batch is gathered into pinned host memory and copied with ``non_blocking``, the outputs come
    back the same way (one synchronisation per pass), and ``train.precision = "bfloat16"`` runs the pass under
    autocast. On CPU it runs through the traced graphs the workers use (``model.traced``), the batch padded to a
    multiple of ``ROW_BUCKET`` teams so that a few graphs serve every batch size."""

    def __init__(self, net: PolicyNet, device: torch.device, precision: str, max_rows: int):
        self.net = net
        self.device = device
        self.cuda = device.type == "cuda"
        self.team_size = net.team_size
        self.actor = TracedActor(net) if not self.cuda else None
        self.autocast = (
            torch.autocast("cuda", dtype=torch.bfloat16)
            if self.cuda and precision == "bfloat16"
            else nullcontext()
        )
        self.max_rows = max_rows + ROW_BUCKET * self.team_size  # room for the padding
        self.staging: dict[str, torch.Tensor] = {}

    def _stage(self, key: str, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """A host buffer for ``key`` with room for every worker's rows (pinned on CUDA), as numpy."""
        buf = self.staging.get(key)
        if buf is None:
            t = torch.from_numpy(np.empty(0, dtype)).dtype
            buf = torch.empty((self.max_rows, *shape), dtype=t, pin_memory=self.cuda)
            self.staging[key] = buf
        return buf.numpy()

    @torch.no_grad()
    def run(self, requests: list[tuple[dict[str, np.ndarray], bool]], deterministic: bool) -> int:
        """Act for ``requests`` (a slot's views, with_aux) in one pass; returns the rows acted for."""
        rows = [np.flatnonzero(views["rows"]) for views, _ in requests]
        n = sum(r.size for r in rows)
        if n == 0:
            for views, _ in requests:
                self._write_back(views, np.zeros(0, np.int64), None, 0)
            return 0
        padded = n if self.cuda else n + (-n % (ROW_BUCKET * self.team_size))
        keys = [k for k in requests[0][0] if k.startswith("obs.")] + ["h", "c", "first"]
        batch: dict[str, torch.Tensor] = {}
        for key in keys:
            src = requests[0][0][key]
            stage = self._stage(key, src.shape[1:], src.dtype)
            offset = 0
            for (views, _), r in zip(requests, rows, strict=True):
                np.take(views[key], r, axis=0, out=stage[offset : offset + r.size])
                offset += r.size
            if padded > n:  # copies of the first team: whole teams, dropped after the pass
                stage[n:padded] = stage[np.resize(np.arange(self.team_size), padded - n)]
            host = self.staging[key][:padded]
            batch[key] = host.to(self.device, non_blocking=True) if self.cuda else host
        with_aux = any(aux for _, aux in requests)
        obs = {key.removeprefix("obs."): batch[key] for key in keys if key.startswith("obs.")}
        state = (batch["h"].unsqueeze(0), batch["c"].unsqueeze(0))
        with self.autocast:
            act = self.actor.act if self.actor is not None else self.net.act
            out = act(obs, state, batch["first"], deterministic, with_aux)
        outputs = self._to_host(out, n)
        offset = 0
        for (views, _), r in zip(requests, rows, strict=True):
            self._write_back(views, r, outputs, offset)
            offset += r.size
        return n

    def _to_host(self, out: ActOutput, n: int) -> dict[str, np.ndarray]:
        tensors = {
            "actions": out.actions,
            "logprob": out.logprob,
            "value": out.value,
            "win_prob": out.win_prob,
            "next_h": out.state[0][0],
            "next_c": out.state[1][0],
            **(out.aux or {}),
        }
        if not self.cuda:
            return {key: t[:n].numpy() for key, t in tensors.items()}
        host = {}
        for key, t in tensors.items():
            t = t[:n] if t.dtype in (torch.int64, torch.bool) else t[:n].float()  # bf16 state under autocast
            stage = self.staging.get(f"out.{key}")
            if stage is None:
                stage = torch.empty((self.max_rows, *t.shape[1:]), dtype=t.dtype, pin_memory=True)
                self.staging[f"out.{key}"] = stage
            stage[:n].copy_(t, non_blocking=True)
            host[key] = stage[:n].numpy()
        torch.cuda.synchronize(self.device)
        return host

    @staticmethod
    def _write_back(
        views: dict[str, np.ndarray], rows: np.ndarray, outputs: dict | None, offset: int
    ) -> None:
        """Outputs for every agent of the slot: zeros where the request left rows out, their state kept."""
        views["next_h"][...] = views["h"]
        views["next_c"][...] = views["c"]
        for key in ("actions", "logprob", "value", "win_prob", "networth_rank", "objectives"):
            if key in views:
                views[key][...] = 0
        if outputs is None:
            return
        for key, value in outputs.items():
            if key in views:
                views[key][rows] = value[offset : offset + rows.size]


class InferenceServer:
    """The server's loop (inside ``server_main``): requests in, one pass per batch, answers out."""

    def __init__(
        self,
        net: PolicyNet,
        actor: BatchedActor,
        params: ParameterStore,
        requests: FragmentSlots,
        status: dict[str, np.ndarray],
        ctrl: Connection,
        wait_s: float,
    ):
        self.net = net
        self.actor = actor
        self.params = params
        self.requests = requests
        self.status = status["status"]
        self.stop = status["stop"]
        self.ctrl = ctrl
        self.wait_s = wait_s
        self.conns: dict[int, Connection] = {}
        self.version = -1
        self.parent = os.getppid()

    def refresh(self) -> None:
        if self.params.version != self.version:
            self.version, _ = self.params.read_into(self.net)
            self.status[S_VERSION] = self.version

    def serve(self) -> None:
        self.refresh()
        self.status[S_HEARTBEAT] = time.time()
        self.status[S_READY] = 1.0
        while not self.stop[0] and os.getppid() == self.parent:
            self.status[S_HEARTBEAT] = time.time()
            ready = wait([self.ctrl, *self.conns.values()], timeout=0.1)
            if self.ctrl in ready:
                self.accept()
            pending = self.read(ready)
            if not pending:
                continue
            self.gather_more(pending)
            self.answer(pending)

    def accept(self) -> None:
        """Take the pipes of (re)started workers; a worker's earlier pipe is closed (its request dropped)."""
        while self.ctrl.poll(0):
            worker = decode(self.ctrl.recv_bytes())[0]  # EOFError: the learner has gone
            conn = Connection(reduction.recv_handle(self.ctrl))
            old = self.conns.pop(worker, None)
            if old is not None:
                old.close()
            try:
                conn.send_bytes(encode(HELLO, 0))
            except OSError:
                conn.close()  # that worker died already; its replacement brings another pipe
                continue
            self.conns[worker] = conn

    def read(
        self, ready: list, pending: dict[int, tuple[int, int]] | None = None
    ) -> dict[int, tuple[int, int]]:
        """worker -> (sequence number, flags) of its request, for the workers whose pipe is ``ready``; a closed
        pipe is dropped."""
        pending = {} if pending is None else pending
        for worker, conn in list(self.conns.items()):
            if conn not in ready or worker in pending:
                continue
            try:
                pending[worker] = decode(conn.recv_bytes())
            except (EOFError, OSError):
                self.drop(worker)
        return pending

    def gather_more(self, pending: dict[int, tuple[int, int]]) -> None:
        """Wait up to ``wait_s`` for the workers that have not asked yet (not at all once every one has)."""
        deadline = time.monotonic() + self.wait_s
        while len(pending) < len(self.conns):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            waiting = [conn for worker, conn in self.conns.items() if worker not in pending]
            ready = wait(waiting, timeout=remaining)
            if not ready:
                return
            self.read(ready, pending)

    def answer(self, pending: dict[int, tuple[int, int]]) -> None:
        self.refresh()  # between batches: the version every answer of this batch carries
        tic = time.perf_counter()
        for deterministic in (False, True):  # one pass each (workers never ask for deterministic actions)
            group = [w for w, (_, flags) in pending.items() if bool(flags & F_DETERMINISTIC) == deterministic]
            if not group:
                continue
            batch = [(self.requests.slots[w], bool(pending[w][1] & F_AUX)) for w in group]
            self.status[S_ROWS] += self.actor.run(batch, deterministic)
            self.status[S_PASSES] += 1
        self.status[S_FORWARD_S] += time.perf_counter() - tic
        self.status[S_REQUESTS] += len(pending)
        for worker, (seq, _) in pending.items():
            self.requests.slots[worker]["version"][0] = self.version
            conn = self.conns.get(worker)
            if conn is None:
                continue
            try:
                conn.send_bytes(encode(seq, self.version))
            except OSError:
                self.drop(worker)  # it died waiting; its replacement brings another pipe

    def drop(self, worker: int) -> None:
        conn = self.conns.pop(worker, None)
        if conn is not None:
            conn.close()


def server_main(
    *,
    recipe_dict: dict,
    schema_json: str,
    device: str,
    seed: int,
    params: SharedBlock,
    requests: SharedBlock,
    status: SharedBlock,
    ctrl: Connection,
) -> None:
    """Entry point of the inference server process. It exits when the learner asks (the stop flag), or when the
    learner has gone (its parent changed, or the control socket closed): a ``kill -9`` of the trainer leaves no
    server behind."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the learner decides when to stop
    torch.set_num_threads(1)
    from fivectl.config import recipe_from_dict

    recipe = recipe_from_dict(recipe_dict)
    schema = ObsSchema.from_json(schema_json)
    param_store = ParameterStore([ArraySpec(*s) for s in params.specs], shm_name=params.name)
    request_block = requests.attach()
    status_block = status.attach()
    control = status_block.slots[0]
    failed = False
    try:
        dev = torch.device(device)
        torch.manual_seed(seed)  # the server's own draws (every device's generator): actions are sampled here
        net = PolicyNet(schema, recipe.model, recipe.game.team_size, obs_clip=recipe.train.obs_clip)
        net = net.to(dev).eval()
        while param_store.version < 0 and not control["stop"][0]:
            time.sleep(0.01)
        agents = recipe.train.games_per_worker * 2 * recipe.game.team_size
        actor = BatchedActor(net, dev, recipe.train.precision, max_rows=requests.slots * agents)
        wait_s = recipe.train.acting_wait_ms / 1000.0
        InferenceServer(net, actor, param_store, request_block, control, ctrl, wait_s).serve()
    except (EOFError, BrokenPipeError):
        pass  # the learner has gone
    except Exception as e:  # noqa: BLE001 - one line for the learner's log, as the CLI does
        if os.environ.get("FIVECTL_DEBUG", "") not in ("", "0"):
            raise
        print(f"[fivectl] inference server on {device}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        failed = True
    finally:
        del control
        for block in (request_block, status_block, param_store):
            block.close()
    if failed:
        sys.exit(1)


SERVER = "inference server"


class InferenceProcess:
    """The learner's handle on the inference server: starts it, hands it each worker's pipe, watches it.

    A dead or hung server is replaced, and every worker with it (their pipes led to it): the server keeps no state
    of its own (LSTM states live in the workers, parameters in the store), so a new one goes on where the old one
    stopped and the learner only loses the fragments in progress. A server that never became ready (it cannot
    build the network, the device is out of memory) would fail again the same way, and one that died
    ``MAX_SERVER_RESTARTS`` times has something killing it: both are a run failure (exit 1) with the reason,
    not a restart loop."""

    def __init__(self, options: FragmentSourceOptions):
        self.options = options
        self.ctx = mp.get_context("spawn")
        self.requests = FragmentSlots(
            request_specs(options.recipe, options.schema), options.workers, create=True
        )
        self.status_block = FragmentSlots(status_specs(), 1, create=True)
        self.status = self.status_block.slots[0]
        self.generation = 0
        self.proc = None
        self.ctrl: Connection | None = None
        self.start()

    def start(self) -> None:
        o = self.options
        if self.ctrl is not None:
            self.ctrl.close()
        self.status["status"][:] = 0
        self.status["status"][S_HEARTBEAT] = time.time()
        self.status["stop"][0] = 0
        server_end, self.ctrl = self.ctx.Pipe(duplex=True)  # a socket pair: it carries file descriptors too
        seed = np.random.SeedSequence([o.seed, 1, self.generation, max(o.params.version, 0)]).generate_state(
            1
        )[0]
        self.proc = self.ctx.Process(
            target=server_main,
            name="fivectl-inference",
            kwargs=dict(
                recipe_dict=o.recipe.to_dict(),
                schema_json=o.schema.to_json(),
                device=o.device,
                seed=int(seed),
                params=SharedBlock([(s.key, s.shape, s.dtype) for s in o.params.specs], o.params.shm_name),
                requests=SharedBlock.of(self.requests),
                status=SharedBlock.of(self.status_block),
                ctrl=server_end,
            ),
            daemon=True,
        )
        self.proc.start()
        server_end.close()  # the server has its copy: its death shows here as end-of-file, and ours to it

    @property
    def block(self) -> SharedBlock:
        return SharedBlock.of(self.requests)

    def connect(self, worker_id: int) -> Connection:
        """A new pipe for worker ``worker_id``: one end goes to the server now, the other is returned for the
        worker process (the caller closes its copy once the worker has started)."""
        server_end, worker_end = self.ctx.Pipe(duplex=True)
        try:
            self.ctrl.send_bytes(encode(worker_id, 0))
            reduction.send_handle(self.ctrl, server_end.fileno(), self.proc.pid)
        except OSError:
            pass  # the server is gone: check_health replaces it and every worker
        finally:
            server_end.close()
        return worker_end

    def check_health(self, heartbeat_timeout_s: float, startup_timeout_s: float) -> list[WorkerEvent]:
        """Replace a dead or hung server (the caller then replaces every worker); raise RunFailed when that
        cannot help (see the class docstring)."""
        status = self.status["status"]
        ready = status[S_READY] > 0
        if self.proc.is_alive():
            silent = time.time() - status[S_HEARTBEAT]
            if silent <= (heartbeat_timeout_s if ready else startup_timeout_s):
                return []
            self.proc.kill()
            self.proc.join(timeout=5)
            event = WorkerEvent(-1, "hung", f"no heartbeat for {silent:.0f}s", who=SERVER)
        else:
            self.proc.join(timeout=5)
            event = WorkerEvent(-1, "died", f"exit code {self.proc.exitcode}", who=SERVER)
        where = f"train.acting=server on {self.options.device}"
        if not ready:
            raise RunFailed(f"the {SERVER} ({where}) {event.kind} before it was ready ({event.detail})")
        if self.generation >= MAX_SERVER_RESTARTS:
            raise RunFailed(
                f"the {SERVER} ({where}) {event.kind} again ({event.detail}) after {self.generation} restarts"
            )
        self.generation += 1
        self.start()
        return [
            event,
            WorkerEvent(-1, "restarted", f"generation {self.generation}, with every worker", who=SERVER),
        ]

    def metrics(self) -> dict[str, float]:
        status = self.status["status"]
        passes = float(status[S_PASSES])
        return {
            "inference_version": float(status[S_VERSION]),
            "inference_passes": passes,
            "inference_rows_per_pass": float(status[S_ROWS]) / passes if passes else 0.0,
            "inference_requests_per_pass": float(status[S_REQUESTS]) / passes if passes else 0.0,
            "seconds_inference_total": float(status[S_FORWARD_S]),
        }

    def stop(self) -> None:
        """Ask the server to finish; workers waiting on it see their pipe close and finish too."""
        if self.status:
            self.status["stop"][0] = 1

    def close(self) -> None:
        self.stop()
        if self.proc is not None:
            self.proc.join(timeout=5)
            if self.proc.is_alive():
                self.proc.kill()
                self.proc.join(timeout=2)
        if self.ctrl is not None:
            self.ctrl.close()
        self.status = {}
        self.requests.close(unlink=True)
        self.status_block.close(unlink=True)
