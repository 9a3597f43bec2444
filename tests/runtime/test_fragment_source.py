"""One fragment-source interface for the three transports (worker processes, serial mode, Ray actors), built from
one options object and picked by ``open_fragment_source``."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from fivectl.config import load_recipe
from fivectl.model import PolicyNet
from fivectl.runtime import fragment_queue, ray_backend
from fivectl.runtime.fragment_queue import ProcessSource, SerialSource
from fivectl.runtime.fragment_source import FragmentSource, FragmentSourceOptions, open_fragment_source
from fivectl.runtime.params import ParameterStore
from fivectl.runtime.ray_backend import RaySource
from fivectl.schema import load_schema

TRANSPORTS = [ProcessSource, SerialSource, RaySource]
INTERFACE = ("get", "release", "check_health", "stats", "oldest_version_in_flight", "close")


def parameter_names(function) -> list[str]:
    return [name for name in inspect.signature(function).parameters if name != "self"]


def test_the_interface_is_what_the_learner_calls():
    assert sorted(name for name in vars(FragmentSource) if name in INTERFACE) == sorted(INTERFACE)


@pytest.mark.parametrize("transport", TRANSPORTS, ids=lambda t: t.__name__)
def test_every_transport_has_the_interface_and_takes_the_options(transport):
    for name in INTERFACE:
        assert callable(getattr(transport, name, None)), f"{transport.__name__}.{name}"
        assert parameter_names(getattr(transport, name)) == parameter_names(getattr(FragmentSource, name))
    assert parameter_names(transport.__init__) == ["options"]


@pytest.fixture
def options(tiny_recipe):
    recipe = load_recipe(tiny_recipe, ["train.workers=0"])
    schema = load_schema(recipe.model.schema_version)
    net = PolicyNet(schema, recipe.model, recipe.game.team_size)
    params = ParameterStore.for_model(net, shared=False)
    params.publish(net, 0, team_spirit=0.0)
    yield FragmentSourceOptions(recipe, schema, params, seed=1)
    params.close()


def test_serial_mode_gives_fragments_through_the_interface(options):
    source = open_fragment_source("local", options)
    try:
        assert isinstance(source, SerialSource) and isinstance(source, FragmentSource)
        slot, views = source.get(timeout=1.0)
        assert int(views["header"][0]) == 0  # played by the published version
        source.release(slot)
        assert source.check_health() == [] and source.stats().workers_alive == 1
    finally:
        source.close()


@pytest.mark.parametrize(
    ("backend", "workers", "module", "chosen"),
    [("local", 2, fragment_queue, "ProcessSource"), ("ray", 2, ray_backend, "RaySource")],
)
def test_the_factory_picks_the_transport_of_the_backend(
    options, monkeypatch, backend, workers, module, chosen
):
    opened = []
    monkeypatch.setattr(module, chosen, lambda given: opened.append(given) or chosen)
    with_workers = FragmentSourceOptions(
        options.recipe, options.schema, options.params, seed=1, workers=workers
    )
    assert open_fragment_source(backend, with_workers) == chosen
    assert opened == [with_workers]


def test_the_ray_transport_imports_without_ray():
    code = "import sys, fivectl.runtime.ray_backend, fivectl.runtime.fragment_source; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
