"""Acting in the inference server (``train.acting = "server"``), on CPU: the same code path as on a GPU."""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pytest
import torch
from shared_helpers import assert_bad_input
from typer.testing import CliRunner

from fivectl.cli.main import app
from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.runtime.fragment_queue import ProcessSource
from fivectl.runtime.fragment_source import FragmentSourceOptions
from fivectl.runtime.inference import InferenceClient, InferenceProcess, resolve_acting
from fivectl.runtime.params import ParameterStore
from fivectl.schema import load_schema
from fivectl.sim import MobaEnv
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.metrics import MetricsLog

runner = CliRunner()


def server_setup(tiny_recipe, *overrides: str):
    # game_phases=1: no staggered starts (bots playing the first part of the first games) to wait for
    recipe = load_recipe(
        tiny_recipe, ["train.workers=2", "train.acting=server", "train.game_phases=1", *overrides]
    )
    schema = load_schema(recipe.model.schema_version)
    torch.manual_seed(0)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size, obs_clip=recipe.train.obs_clip).eval()
    params = ParameterStore.for_model(net)
    params.publish(net, 5, team_spirit=0.0)
    options = FragmentSourceOptions(
        recipe, schema, params, seed=1, workers=2, heartbeat_timeout_s=60, acting="server", device="cpu"
    )
    return recipe, schema, net, params, options


def worker_inputs(recipe, schema, seed: int):
    """One step's inputs of a worker's games: observations of real games, a random LSTM state, some resets."""
    env = MobaEnv(recipe.game, recipe.train.games_per_worker, seed, schema)
    obs = {k: torch.from_numpy(v.reshape(-1, *v.shape[2:]).copy()) for k, v in env.reset().items()}
    agents = recipe.train.games_per_worker * 2 * recipe.game.team_size
    g = torch.Generator().manual_seed(seed)
    state = (
        torch.randn(1, agents, recipe.model.lstm_size, generator=g),
        torch.randn(1, agents, recipe.model.lstm_size, generator=g),
    )
    first = torch.rand(agents, generator=g) < 0.3
    return obs, state, first


def test_batched_outputs_equal_each_workers_own_forward_pass(tiny_recipe):
    # two teams of two per game, so that a worker's rows are whole teams of several heroes (the cross-hero pool)
    recipe, schema, net, params, options = server_setup(
        tiny_recipe, "game.team_size=2", "train.acting_wait_ms=5000"
    )
    server = InferenceProcess(options)
    clients = [InferenceClient(server.block, w, server.connect(w)) for w in range(2)]
    try:
        inputs = [worker_inputs(recipe, schema, seed=w) for w in range(2)]
        rows = [
            np.arange(8),
            np.array([0, 1, 4, 5]),
        ]  # worker 1: its games' first teams (a past version has the rest)
        for version in (5, 6):
            if version == 6:  # a new version: the server acts with it from the next batch on
                with torch.no_grad():
                    for p in net.parameters():
                        p.add_(0.05 * torch.randn_like(p))
                params.publish(net, 6, team_spirit=0.0)
            for client, (obs, state, first), r in zip(clients, inputs, rows, strict=True):
                client.send(obs, state, first, r, with_aux=True, deterministic=True)
            outs = [client.receive(with_aux=True) for client in clients]
            assert [c.version for c in clients] == [version, version]
            for out, (obs, state, first), r in zip(outs, inputs, rows, strict=True):
                index = torch.from_numpy(r)
                want = net.act(
                    {k: v[index] for k, v in obs.items()},
                    (state[0][:, index], state[1][:, index]),
                    first[index],
                    deterministic=True,
                    with_aux=True,
                )
                assert torch.equal(out.actions[index], want.actions)
                for got, expected in [
                    (out.logprob[index], want.logprob),
                    (out.value[index], want.value),
                    (out.win_prob[index], want.win_prob),
                    (out.state[0][:, index], want.state[0]),
                    (out.state[1][:, index], want.state[1]),
                    (out.aux["networth_rank"][index], want.aux["networth_rank"]),
                ]:
                    torch.testing.assert_close(got, expected)
                left_out = np.setdiff1d(np.arange(8), r)
                assert not out.value[left_out].any() and not out.actions[left_out].any()
                assert torch.equal(out.state[0][:, left_out], state[0][:, left_out])  # kept as it was
        metrics = server.metrics()
        # both workers' rows in one pass per round: batching, not one pass per worker
        assert metrics["inference_passes"] == 2 and metrics["inference_rows_per_pass"] == 12
        assert metrics["inference_version"] == 6
    finally:
        for client in clients:
            client.close()
        server.close()
        params.close(unlink=True)


def test_workers_act_through_the_server_and_a_killed_worker_or_server_is_replaced(tiny_recipe):
    recipe, schema, net, params, options = server_setup(tiny_recipe)
    source = ProcessSource(options)
    try:

        def fragments_from(workers: set[int]) -> None:
            seen, deadline = set(), time.time() + 120
            while not workers <= seen and time.time() < deadline:
                got = source.get(timeout=5)
                if got is None:
                    source.check_health()
                    continue
                slot, views = got
                assert int(views["header"][0]) == 5  # the version that acted (the server's answers)
                seen.add(int(views["header"][1]))
                source.release(slot)
            assert workers <= seen

        fragments_from({0, 1})
        passes = source.stats().inference["inference_passes"]
        assert passes > 0
        time.sleep(0.3)  # the workers are filling their next fragments, asking the server every step
        source.procs[0].kill()
        source.procs[0].join()
        events = source.check_health()
        assert [(e.subject, e.kind) for e in events] == [("worker 0", "died"), ("worker 0", "restarted")]
        fragments_from({1})  # the server goes on serving the others; the dead worker's request is dropped
        server = source.inference.proc
        assert server.is_alive() and source.stats().inference["inference_passes"] > passes
        # a dead server is replaced, and every worker with it (their pipes led to it)
        server.kill()
        server.join()
        events = [(e.subject, e.kind) for e in source.check_health()]
        assert events[:2] == [("inference server", "died"), ("inference server", "restarted")]
        assert {s for s, kind in events[2:] if kind == "restarted"} == {"worker 0", "worker 1"}
        fragments_from({0, 1})
        assert source.stats().workers_alive == 2 and source.inference.proc.is_alive()
    finally:
        source.close()
        params.close(unlink=True)


def test_training_with_the_inference_server(tiny_recipe, tmp_path):
    run = tmp_path / "run"
    args = [
        "--run",
        str(run),
        "--workers",
        "2",
        "--set",
        "train.acting=server",
        "--set",
        "train.game_phases=1",
    ]
    args += ["--max-samples", "200"]
    result = runner.invoke(app, ["train", str(tiny_recipe), *args, "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert CheckpointStore(run / "checkpoints.zarr").latest() == summary["version"] > 0
    table = MetricsLog(run / "metrics").read()
    passes = table.column("inference_passes").to_pylist()
    assert passes[-1] > 0 and passes == sorted(passes)
    # the server followed the published versions
    assert max(table.column("inference_version").to_pylist()) > 0
    assert table.column("staleness_max").to_pylist()[-1] >= 0


def test_acting_auto_and_bad_combinations(tiny_recipe, tmp_path):
    recipe = load_recipe(tiny_recipe, ["train.workers=2"])
    assert resolve_acting(recipe.train, torch.device("cpu")) == "worker"
    assert resolve_acting(recipe.train, torch.device("cuda")) == "server"
    serial = load_recipe(tiny_recipe, ["train.workers=0"])
    assert resolve_acting(serial.train, torch.device("cuda")) == "worker"
    run = str(tmp_path / "r")
    serial_server = runner.invoke(
        app, ["train", str(tiny_recipe), "--run", run, "--set", "train.acting=server"]
    )
    assert_bad_input(serial_server, "train.acting", "workers > 0")
    ray_server = runner.invoke(
        app,
        [
            "train",
            str(tiny_recipe),
            "--run",
            run,
            "--workers",
            "2",
            "--backend",
            "ray",
            "--set",
            "train.acting=server",
        ],
    )
    assert_bad_input(ray_server, "train.acting", "'ray'")
    assert not (tmp_path / "r").exists()


@pytest.mark.gpu
def test_server_on_cuda_matches_the_cpu_network(tiny_recipe):
    recipe, schema, net, params, options = server_setup(tiny_recipe, "train.acting_wait_ms=5000")
    server = InferenceProcess(dataclasses.replace(options, device="cuda"))
    clients = [InferenceClient(server.block, w, server.connect(w)) for w in range(2)]
    try:
        inputs = [worker_inputs(recipe, schema, seed=w) for w in range(2)]
        for client, (obs, state, first) in zip(clients, inputs, strict=True):
            client.send(obs, state, first, None, with_aux=True, deterministic=True)
        for client, (obs, state, first) in zip(clients, inputs, strict=True):
            out = client.receive(with_aux=True)
            want = net.act(obs, state, first, deterministic=True, with_aux=True)
            torch.testing.assert_close(out.value, want.value, atol=1e-4, rtol=1e-4)
            torch.testing.assert_close(out.state[0], want.state[0], atol=1e-4, rtol=1e-4)
        assert server.metrics()["inference_passes"] == 1
    finally:
        for client in clients:
            client.close()
        server.close()
        params.close(unlink=True)
