"""The state-dict and RNG codec: torch state dicts and generator states round-trip bitwise through a checkpoint,
and names read back from disk (dtypes, bit generators) are checked against allow-lists."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from fivectl.errors import FivectlError
from fivectl.store.checkpoint import CheckpointStore
from fivectl.store.state_codec import (
    CorruptState,
    flatten_state,
    numpy_rng_from_state,
    numpy_rng_state,
    python_rng_state,
    set_numpy_rng_state,
    set_python_rng_state,
    set_torch_rng_state,
    torch_rng_state,
    unflatten_state,
)


def tiny_training_setup(seed: int) -> tuple[torch.nn.Module, torch.optim.Adam]:
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.LayerNorm(8), torch.nn.Linear(8, 2))
    opt = torch.optim.Adam(net.parameters(), lr=3e-3, betas=(0.9, 0.99), eps=1e-6)
    return net, opt


def train_steps(net: torch.nn.Module, opt: torch.optim.Adam, n: int) -> None:
    for _ in range(n):
        x = torch.randn(16, 5)
        loss = net(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_adam_resume_through_the_store_is_bitwise_exact(tmp_path: Path) -> None:
    net, opt = tiny_training_setup(0)
    train_steps(net, opt, 3)
    model_arrays, model_meta = flatten_state(net.state_dict())
    opt_arrays, opt_meta = flatten_state(opt.state_dict())
    store = CheckpointStore(tmp_path / "c.zarr")
    store.save(
        3,
        {"model": model_arrays, "optimizer": opt_arrays, "rng": {"torch": torch_rng_state()}},
        {"model_state": model_meta, "optimizer_state": opt_meta},
    )
    train_steps(net, opt, 4)  # the uninterrupted run
    reference = [p.detach().clone() for p in net.parameters()]

    ckpt = store.load()
    net2, opt2 = tiny_training_setup(99)  # different init: everything must come from the checkpoint
    net2.load_state_dict(unflatten_state(ckpt.arrays["model"], ckpt.attrs["model_state"]))
    sd = unflatten_state(ckpt.arrays["optimizer"], ckpt.attrs["optimizer_state"])
    assert sd["param_groups"][0]["betas"] == (0.9, 0.99) and isinstance(next(iter(sd["state"])), int)
    opt2.load_state_dict(sd)
    set_torch_rng_state(ckpt.arrays["rng"]["torch"])
    train_steps(net2, opt2, 4)
    for a, b in zip(reference, net2.parameters(), strict=True):
        assert torch.equal(a, b.detach())


def test_flatten_state_round_trips_types_keys_and_metadata() -> None:
    net = torch.nn.BatchNorm1d(3)
    sd = net.state_dict()
    odd = {
        "state": {0: {"step": torch.tensor(5.0), "bf": torch.ones(2, dtype=torch.bfloat16) * 1.5}},
        "groups": [{"betas": (0.9, 0.999), "lr": float("inf"), "name": "x", "fused": None, "n": 3}],
        "np": np.arange(4, dtype=np.int16),
        "scalar": np.float32(2.5),
    }
    for original in (sd, odd):
        arrays, meta = flatten_state(original)
        assert all(isinstance(a, np.ndarray) for a in arrays.values())
        back = unflatten_state(arrays, meta)
        assert_same_tree(original, back)
    back = unflatten_state(*flatten_state(sd))
    assert back._metadata == sd._metadata  # load_state_dict reads module versions from here
    net.load_state_dict(back)


def assert_same_tree(a: object, b: object) -> None:
    assert type(a) is type(b) or (isinstance(a, dict) and isinstance(b, dict)), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            assert_same_tree(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_tree(x, y)
    else:
        assert a == b and type(a) is type(b)


def test_rng_states_restore_exactly(tmp_path: Path) -> None:
    gen = np.random.default_rng(7)
    gen.random(3)
    np_state = numpy_rng_state(gen)
    torch.manual_seed(3)
    t_state = torch_rng_state()
    random.seed(5)
    py_state = python_rng_state()
    store = CheckpointStore(tmp_path / "c.zarr")
    store.save(1, {"rng": {"torch": t_state}}, {"numpy": np_state, "python": py_state})
    want = (gen.random(4), torch.rand(4), [random.random() for _ in range(4)])

    ckpt = store.load()
    gen2 = numpy_rng_from_state(ckpt.attrs["numpy"])
    other = np.random.default_rng(0)
    set_numpy_rng_state(other, ckpt.attrs["numpy"])
    set_torch_rng_state(ckpt.arrays["rng"]["torch"])
    set_python_rng_state(ckpt.attrs["python"])
    np.testing.assert_array_equal(gen2.random(4), want[0])
    np.testing.assert_array_equal(other.random(4), want[0])
    assert torch.equal(torch.rand(4), want[1])
    assert [random.random() for _ in range(4)] == want[2]
    mt = np.random.Generator(np.random.MT19937(1))
    mt_state = numpy_rng_state(mt)
    assert numpy_rng_from_state(mt_state).integers(1 << 30) == mt.integers(1 << 30)


def test_a_stored_torch_dtype_outside_the_allow_list_is_a_corrupt_state() -> None:
    arrays, meta = flatten_state({"w": torch.ones(2)})
    assert meta["tree"]["dict"][0][1]["dtype"] == "float32"
    for bad in ("Tensor", "load", "__class__", 7):
        meta["tree"]["dict"][0][1]["dtype"] = bad
        with pytest.raises(CorruptState, match="torch dtype"):
            unflatten_state(arrays, meta)
    assert issubclass(CorruptState, FivectlError)  # the CLI prints it on one line, exit 1


def test_a_state_naming_a_missing_array_or_a_non_numeric_scalar_is_a_corrupt_state() -> None:
    arrays, meta = flatten_state({"w": torch.ones(2), "s": np.float32(1.0)})
    with pytest.raises(CorruptState, match="not stored"):
        unflatten_state({}, meta)
    meta["tree"]["dict"][1][1]["dtype"] = "|O"
    with pytest.raises(CorruptState, match="non-numeric"):
        unflatten_state(arrays, meta)


def test_a_numpy_bit_generator_outside_the_allow_list_is_a_corrupt_state() -> None:
    state = numpy_rng_state(np.random.default_rng(1))
    assert state["bit_generator"] == "PCG64"
    for bad in ("RandomState", "default_rng", "__loader__", None):
        with pytest.raises(CorruptState, match="bit generator"):
            numpy_rng_from_state({**state, "bit_generator": bad})
