"""The real network (the shipped recipes' PolicyNet) learning on CUDA: the same iteration as on the CPU, bfloat16
autocast, and an exact resume from a checkpoint written on the GPU (CUDA RNG included).

Every test here needs a CUDA device (``make test-gpu``); each takes a few seconds on one GPU: small batches of
two 16-step windows per column, one or two iterations.
"""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

from fivectl.config import Recipe, load_recipe
from fivectl.model.synthetic import random_obs
from fivectl.rl.learner import FragmentBatch
from fivectl.rl.schedules import Hyperparameters
from fivectl.runtime.run_state import LearnerState, RunCheckpoints, build_learner_state
from fivectl.schema import ObsSchema, load_schema
from fivectl.store.rundir import RunDir

pytestmark = pytest.mark.gpu

CUDA = torch.device("cuda")
RECIPES = ["quickstart", "five-v-five-quick"]
HP = Hyperparameters(learning_rate=3e-4, entropy_coef=0.01, team_spirit=0.0, horizon_s=10.0, gamma=0.99)


def small_recipe(name: str, *overrides: str) -> tuple[Recipe, ObsSchema]:
    """A shipped recipe's game and model with a learner small enough for a test: one pass, the given steps."""
    recipe = load_recipe(name, ["train.epochs=1", "train.minibatches=1", *overrides])
    return recipe, load_schema(recipe.model.schema_version)


def played_batch(state: LearnerState, recipe: Recipe, games: int, seed: int) -> FragmentBatch:
    """Two BPTT windows of ``games`` games (both teams) played by the learner's network on random observations,
    on the CPU, with every label the learner trains on (win probability, net-worth rank, team objectives)."""
    net = copy.deepcopy(state.model).cpu()
    bptt, team = recipe.train.bptt, recipe.game.team_size
    steps, columns, n_obj = 2 * bptt, games * 2 * team, len(recipe.model.aux_objectives)
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # the actions sampled
    obs = random_obs(net.schema, (steps, columns), g)
    first = torch.zeros(steps, columns, dtype=torch.bool)
    first[0] = True
    hidden = net.initial_state(columns)
    window_h, window_c, out = [], [], []
    with torch.no_grad():
        for t in range(steps):
            if t % bptt == 0:
                window_h.append(hidden[0])
                window_c.append(hidden[1])
            step = net.act({k: v[t] for k, v in obs.items()}, hidden, first[t])
            hidden = step.state
            out.append(step)
    dones = torch.zeros(steps, columns, dtype=torch.bool)
    dones[-1] = (
        True  # every game ends with the fragment: win labels, net-worth ranks and objectives all count
    )
    return FragmentBatch(
        obs=obs,
        actions=torch.stack([o.actions for o in out]),
        logprobs=torch.stack([o.logprob for o in out]),
        values=torch.stack([o.value for o in out]),
        rewards=torch.randn(steps, columns, generator=g),
        dones=dones,
        first=first,
        last_values=torch.zeros(columns),
        window_states=(torch.stack(window_h), torch.stack(window_c)),
        outcomes=(torch.rand(steps, columns, generator=g) < 0.5).float(),
        last_win_probs=torch.full((columns,), 0.5),
        networth=torch.rand(steps, columns, generator=g) * 1000,
        objective_events=torch.rand(steps, columns, n_obj, generator=g) < 0.05,
        last_networth_rank=torch.full((columns, team), 1.0 / team),
        last_objectives=torch.full((columns, n_obj), 0.1),
    )


def parameters(state: LearnerState) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().clone() for k, v in state.model.state_dict().items()}


@pytest.mark.parametrize("name", RECIPES)
def test_an_iteration_of_the_real_network_on_cuda_matches_the_cpu(name):
    recipe, schema = small_recipe(name)
    cpu = build_learner_state(recipe, schema, torch.device("cpu"), 1)
    gpu = build_learner_state(recipe, schema, CUDA, 1)
    before = parameters(cpu)
    for key, value in parameters(gpu).items():  # the same initialization on both devices
        torch.testing.assert_close(value, before[key], rtol=0, atol=0, msg=key)
    batch = played_batch(cpu, recipe, games=2, seed=1)
    on_cpu = cpu.learner.train_iteration(batch, HP)
    on_gpu = gpu.learner.train_iteration(batch, HP)
    assert next(gpu.model.parameters()).device.type == CUDA.type
    assert on_gpu.keys() == on_cpu.keys()
    # Loose: convolutions run in TF32 on CUDA by default and sums run in another order.
    for key, value in on_cpu.items():
        assert on_gpu[key] == pytest.approx(value, rel=1e-2, abs=2e-3), key
    # Adam's first step moves each weight by about the learning rate whatever its gradient's size, so a weight
    # whose gradient is near 0 may move either way on either device: the steps are compared as a whole.
    after_cpu, after_gpu = parameters(cpu), parameters(gpu)
    moved = [k for k in before if before[k].is_floating_point() and not torch.equal(after_cpu[k], before[k])]
    assert moved
    step_cpu = torch.cat([(after_cpu[k] - before[k]).reshape(-1) for k in moved])
    step_gpu = torch.cat([(after_gpu[k] - before[k]).reshape(-1) for k in moved])
    assert (
        float((step_gpu - step_cpu).norm() / step_cpu.norm()) < 0.2
    )  # a broken device path: about 1 or more


@pytest.mark.parametrize("name", RECIPES)
def test_bfloat16_autocast_on_cuda_trains_the_real_network(name):
    recipe, schema = small_recipe(name, "train.precision='bfloat16'")
    state = build_learner_state(recipe, schema, CUDA, 1)
    before = parameters(state)
    metrics = state.learner.train_iteration(played_batch(state, recipe, games=2, seed=2), HP)
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values()), metrics
    after = parameters(state)
    assert all(v.dtype == before[k].dtype and torch.isfinite(v).all() for k, v in after.items())
    assert any(not torch.equal(after[k], before[k]) for k in before)  # the parameters stay float32 and move


@pytest.fixture
def deterministic():
    """cuDNN and torch's deterministic kernels (cuBLAS too: tests/conftest.py sets CUBLAS_WORKSPACE_CONFIG
    before CUDA starts). An op without a deterministic CUDA kernel warns instead of failing; the resume test
    then compares with a tolerance instead of bitwise."""
    was = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    with torch.backends.cudnn.flags(enabled=True, benchmark=False, deterministic=True):
        yield
    torch.use_deterministic_algorithms(was[0], warn_only=was[1])


def test_a_checkpoint_written_on_cuda_resumes_exactly(tmp_path, deterministic):
    # two minibatches over two passes: the minibatch order (the learner's generator) matters
    recipe, schema = small_recipe("five-v-five-quick", "train.epochs=2", "train.minibatches=2")
    run = RunDir.create(tmp_path / "run", recipe)
    first = build_learner_state(recipe, schema, CUDA, 1)
    batches = [played_batch(first, recipe, games=2, seed=seed) for seed in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first.learner.train_iteration(batches[0], HP)  # Adam has moments to save
        first.counters.version = first.counters.iteration = 1
        torch.rand(3, device=CUDA)  # the CUDA generator is no longer where a fresh seed puts it
        RunCheckpoints(run, recipe, schema, note=print).save(first)
        draw = torch.rand(8, device=CUDA)
        straight = [first.learner.train_iteration(b, HP) for b in batches[1:]]

        resumed = build_learner_state(recipe, schema, CUDA, 1)
        torch.manual_seed(12345)  # the restore must undo these
        torch.cuda.manual_seed_all(12345)
        assert RunCheckpoints(run, recipe, schema, note=print).restore(resumed) == 1
        torch.testing.assert_close(torch.rand(8, device=CUDA), draw, rtol=0, atol=0)
        again = [resumed.learner.train_iteration(b, HP) for b in batches[1:]]
    nondeterministic = [str(w.message) for w in caught if "deterministic" in str(w.message)]
    # bitwise when every op had a deterministic kernel; else within what atomics' summation order changes
    tolerance = dict(rtol=1e-4, atol=1e-5) if nondeterministic else dict(rtol=0, atol=0)
    assert resumed.counters == first.counters
    assert torch.equal(resumed.generator.get_state(), first.generator.get_state())
    for one, other in zip(straight, again, strict=True):
        assert one.keys() == other.keys()
        for key in one:
            torch.testing.assert_close(other[key], one[key], **tolerance, msg=key)
    want = parameters(first)
    for key, value in parameters(resumed).items():
        torch.testing.assert_close(value, want[key], **tolerance, msg=key)
    adam = first.learner.optimizer.state_dict()["state"]
    for index, moments in resumed.learner.optimizer.state_dict()["state"].items():
        for key, value in moments.items():
            torch.testing.assert_close(value, adam[index][key], **tolerance, msg=f"{index}.{key}")
