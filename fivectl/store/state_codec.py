"""Torch state dicts and RNG states as arrays plus JSON, so that a checkpoint holds no pickle.

``flatten_state`` turns a ``state_dict`` (model, optimizer, any tree of dicts, lists, tuples, tensors and numbers)
into named arrays plus a JSON tree; ``unflatten_state`` rebuilds it bitwise. The RNG helpers do the same for the
torch, numpy and Python generators. Everything read back comes from a run directory, i.e. from disk that may be
damaged or foreign: dtype and bit-generator names are checked against allow-lists, never looked up by ``getattr``
on whatever string was stored.
"""

from __future__ import annotations

import math
import random
from collections import OrderedDict
from typing import Any

import numpy as np

from fivectl.errors import BadInput, FivectlError

STATE_FORMAT = 1  # the JSON tree of flatten_state
# torch dtypes a stored tensor may have (``str(dtype)`` without "torch."): those numpy can hold, plus bfloat16
# (stored as its int16 bits)
TORCH_DTYPES = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
# numpy bit generators whose state may be restored
NUMPY_BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


class CorruptState(FivectlError):
    """A stored state tree or RNG state names something this version of fivectl does not read (a damaged or
    foreign checkpoint)."""


# -- torch state dicts <-> arrays + JSON ---------------------------------------------------------------------
#
# A state dict is a tree of dicts (any hashable keys: optimizer state is keyed by int), lists, tuples, tensors and
# plain numbers. Tensors become arrays named by their path; the tree itself becomes JSON in which containers are
# tagged ({"dict": [[key, value], ...]}, {"list": [...]}, {"tuple": [...]}) and leaves are JSON scalars, tensors
# ({"tensor": name, "dtype": torch dtype}) or non-finite floats ({"float": "nan"}). Key types and order survive.


def flatten_state(sd: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A torch ``state_dict`` (model or optimizer) -> (arrays, JSON tree) such that ``unflatten_state`` rebuilds it
    bitwise, including int keys, tuples and the module ``_metadata`` that ``load_state_dict`` reads."""
    arrays: dict[str, np.ndarray] = {}
    tree = _encode(sd, (), arrays)
    meta: dict[str, Any] = {"format": STATE_FORMAT, "tree": tree}
    module_meta = getattr(sd, "_metadata", None)
    if module_meta is not None:
        meta["module_metadata"] = _encode(dict(module_meta), (), {})
    return arrays, meta


def unflatten_state(arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> Any:
    """Inverse of ``flatten_state``: tensors come back as CPU torch tensors with their original dtype."""
    sd = _decode(meta["tree"], arrays)
    if "module_metadata" in meta:
        sd = OrderedDict(sd)
        sd._metadata = OrderedDict(_decode(meta["module_metadata"], {}))  # type: ignore[attr-defined]
    return sd


def _array_name(path: tuple[str, ...], arrays: dict[str, np.ndarray]) -> str:
    base = ".".join(p.replace("/", "|") for p in path) or "value"
    if base.startswith("__"):
        base = "_" + base.lstrip("_")
    name, n = base, 1
    while name in arrays:
        name, n = f"{base}#{n}", n + 1
    return name


def _encode(obj: Any, path: tuple[str, ...], arrays: dict[str, np.ndarray]) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            a = t.view(torch.int16).numpy().copy()
        else:
            a = t.numpy().copy()
        name = _array_name(path, arrays)
        arrays[name] = a
        return {"tensor": name, "dtype": str(t.dtype).removeprefix("torch.")}
    if isinstance(obj, np.ndarray):
        name = _array_name(path, arrays)
        arrays[name] = obj.copy()
        return {"ndarray": name}
    if isinstance(obj, dict):
        return {"dict": [[_encode_key(k), _encode(v, (*path, str(k)), arrays)] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"tuple": [_encode(v, (*path, str(i)), arrays) for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return {"list": [_encode(v, (*path, str(i)), arrays) for i, v in enumerate(obj)]}
    if isinstance(obj, np.generic):
        return {"npscalar": obj.item() if np.isfinite(obj) else repr(float(obj)), "dtype": obj.dtype.str}
    if isinstance(obj, float) and not math.isfinite(obj):
        return {"float": repr(obj)}
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise BadInput(f"cannot store {type(obj).__name__} at {'.'.join(path) or '<root>'} in a checkpoint")


def _encode_key(k: Any) -> Any:
    if isinstance(k, bool) or not isinstance(k, int | str):
        raise BadInput(f"state dict key {k!r}: only str and int keys can be stored")
    return k


def _decode(node: Any, arrays: dict[str, np.ndarray]) -> Any:
    import torch

    if not isinstance(node, dict):
        return node
    if "tensor" in node:
        a = _stored_array(arrays, node["tensor"])
        dtype = torch_dtype(node["dtype"])
        if dtype == torch.bfloat16:
            return torch.from_numpy(np.array(a, dtype=np.int16)).view(torch.bfloat16)
        return torch.from_numpy(np.array(a, copy=True))
    if "ndarray" in node:
        return np.array(_stored_array(arrays, node["ndarray"]), copy=True)
    if "dict" in node:
        return {k: _decode(v, arrays) for k, v in node["dict"]}
    if "tuple" in node:
        return tuple(_decode(v, arrays) for v in node["tuple"])
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    if "npscalar" in node:
        v = node["npscalar"]
        return _numeric_dtype(node["dtype"]).type(float(v) if isinstance(v, str) else v)
    if "float" in node:
        return float(node["float"])
    raise CorruptState(f"unknown state node {sorted(node)}")


def torch_dtype(name: Any) -> Any:
    """The torch dtype a stored state names, if it is one of ``TORCH_DTYPES``; else ``CorruptState``."""
    import torch

    if name not in TORCH_DTYPES:
        raise CorruptState(f"checkpoint state names torch dtype {name!r}; known: {', '.join(TORCH_DTYPES)}")
    return getattr(torch, name)


def _stored_array(arrays: dict[str, np.ndarray], name: Any) -> np.ndarray:
    if not isinstance(name, str) or name not in arrays:
        raise CorruptState(f"checkpoint state refers to array {name!r}, which is not stored")
    return arrays[name]


def _numeric_dtype(name: Any) -> np.dtype:
    try:
        dtype = np.dtype(name)
    except TypeError:
        raise CorruptState(f"checkpoint state names numpy dtype {name!r}") from None
    if dtype.kind not in "biufc":
        raise CorruptState(f"checkpoint state names non-numeric numpy dtype {name!r}")
    return dtype


# -- RNG state ----------------------------------------------------------------------------------------------
#
# numpy's bit generator state holds 128-bit integers; they are written as decimal strings so that any JSON reader
# (not only Python's) keeps them exact.


def numpy_rng_state(gen: np.random.Generator) -> dict[str, Any]:
    """JSON state of a numpy ``Generator`` (any bit generator)."""
    return _ints_to_str(gen.bit_generator.state)


def set_numpy_rng_state(gen: np.random.Generator, state: dict[str, Any]) -> None:
    gen.bit_generator.state = _str_to_ints(state)


def numpy_rng_from_state(state: dict[str, Any]) -> np.random.Generator:
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name not in NUMPY_BIT_GENERATORS:
        known = ", ".join(NUMPY_BIT_GENERATORS)
        raise CorruptState(f"checkpoint RNG state names numpy bit generator {name!r}; known: {known}")
    gen = np.random.Generator(getattr(np.random, name)())
    set_numpy_rng_state(gen, state)
    return gen


def torch_rng_state() -> np.ndarray:
    """The torch CPU generator state as a uint8 array."""
    import torch

    return torch.get_rng_state().numpy().copy()


def set_torch_rng_state(state: np.ndarray) -> None:
    import torch

    torch.set_rng_state(torch.from_numpy(np.asarray(state, dtype=np.uint8).copy()))


def cuda_rng_states() -> np.ndarray | None:
    """The generator state of every CUDA device as a uint8 array [devices, bytes]; None without CUDA (no CUDA
    context is created then)."""
    import torch

    if not torch.cuda.is_available():
        return None
    return np.stack([s.numpy() for s in torch.cuda.get_rng_state_all()])


def set_cuda_rng_states(states: np.ndarray) -> None:
    """Restore :func:`cuda_rng_states` on as many devices as both the checkpoint and this machine have."""
    import torch

    if not torch.cuda.is_available():
        return
    for device, state in enumerate(np.asarray(states, dtype=np.uint8)[: torch.cuda.device_count()]):
        torch.cuda.set_rng_state(torch.from_numpy(state.copy()), device)


def python_rng_state() -> dict[str, Any]:
    """The state of Python's global ``random`` module as JSON."""
    version, internal, gauss_next = random.getstate()
    return {"version": version, "internal": list(internal), "gauss_next": gauss_next}


def set_python_rng_state(state: dict[str, Any]) -> None:
    random.setstate((state["version"], tuple(state["internal"]), state["gauss_next"]))


def _ints_to_str(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _ints_to_str(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_ints_to_str(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return {"uint_array": [str(int(x)) for x in obj.ravel()], "dtype": obj.dtype.str}
    if isinstance(obj, int | np.integer) and not isinstance(obj, bool):
        return {"int": str(int(obj))}
    return obj


def _str_to_ints(obj: Any) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {"int"}:
            return int(obj["int"])
        if set(obj) == {"uint_array", "dtype"}:
            return np.array([int(x) for x in obj["uint_array"]], dtype=np.dtype(obj["dtype"]))
        return {k: _str_to_ints(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_str_to_ints(v) for v in obj]
    return obj


__all__ = [
    "NUMPY_BIT_GENERATORS",
    "TORCH_DTYPES",
    "CorruptState",
    "flatten_state",
    "numpy_rng_from_state",
    "numpy_rng_state",
    "python_rng_state",
    "set_numpy_rng_state",
    "set_python_rng_state",
    "set_torch_rng_state",
    "torch_dtype",
    "torch_rng_state",
    "unflatten_state",
]
