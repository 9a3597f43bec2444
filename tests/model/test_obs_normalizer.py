import numpy as np
import pytest
import torch
from numba import njit

from fivectl.errors import BadInput
from fivectl.model import kernels
from fivectl.model.kernels.moments import column_moments
from fivectl.model.kernels.standardize import standardized_value
from fivectl.model.normalize import RunningMeanStd, batch_moments, standardize


def test_statistics_match_numpy_on_a_stream_of_batches():
    rng = np.random.default_rng(0)
    rms = RunningMeanStd(5)
    seen = []
    for i in range(20):
        # batches of varying size and shifting distribution, with extra leading dims
        batch = rng.normal(loc=i * 0.3, scale=1 + i * 0.1, size=(rng.integers(1, 7), 3, 5))
        rms.update(torch.from_numpy(batch))
        seen.append(batch.reshape(-1, 5))
    everything = np.concatenate(seen)
    np.testing.assert_allclose(rms.mean.numpy(), everything.mean(axis=0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rms.var.numpy(), everything.var(axis=0), rtol=1e-10)
    assert rms.count.tolist() == [len(everything)] * 5  # one count per column


def test_forward_standardizes_masked_columns_clips_and_keeps_dtype():
    mask = torch.tensor([True, True, False])
    rms = RunningMeanStd(3, mask=mask, clip=5.0)
    data = torch.randn(4000, 3, dtype=torch.float64) * torch.tensor([2.0, 10.0, 1.0]) + torch.tensor(
        [1.0, -3.0, 0.0]
    )
    rms.update(data)
    x = torch.tensor([[1.0, -3.0, 7.0], [1.0 + 100.0, -3.0 - 1000.0, -9.0]], dtype=torch.float32)
    y = rms(x)
    assert y.dtype == torch.float32
    assert torch.allclose(y[0, :2], torch.zeros(2), atol=0.1)  # the mean maps to ~0
    assert y[1, 0].item() == 5.0 and y[1, 1].item() == -5.0  # clipped to +-clip
    assert y[0, 2].item() == 7.0 and y[1, 2].item() == -9.0  # unmasked column passes through unchanged
    expected = (x[:, 0].double() - rms.mean[0]) / torch.sqrt(rms.var[0] + rms.eps)
    assert torch.allclose(y[0, 0].double(), expected[0], atol=1e-6)


def test_statistics_stay_float64_and_round_trip_through_state_dict():
    rms = RunningMeanStd(2)
    rms.update(torch.randn(10, 2))
    net = torch.nn.Sequential(torch.nn.Linear(2, 2), rms).float()
    assert net[1].mean.dtype == torch.float64
    copy = RunningMeanStd(2)
    copy.load_state_dict(rms.state_dict())
    assert torch.equal(copy.mean, rms.mean) and torch.equal(copy.var, rms.var) and torch.equal(copy.count, rms.count)
    # a checkpoint written with one count per normalizer loads as that count for every column
    old = {**rms.state_dict(), "count": torch.tensor(10.0, dtype=torch.float64)}
    copy.load_state_dict(old)
    assert copy.count.tolist() == [10.0, 10.0]


def test_a_column_with_its_own_count_is_not_diluted_by_the_others():
    rms = RunningMeanStd(2)
    rms.update(torch.zeros(1000, 2))
    rms.count[1] = 0  # column 1 is new (surgery add-obs): its statistics start from its own data
    rms.update(torch.full((10, 2), 4.0))
    assert rms.mean[1] == 4.0 and 0 < rms.mean[0] < 0.05


def _reference(norm: RunningMeanStd, x: torch.Tensor) -> torch.Tensor:
    std = torch.sqrt(norm.var + norm.eps)
    out = ((x.double() - norm.mean) / std).clamp(-norm.clip, norm.clip).to(x.dtype)
    return torch.where(norm.mask, out, x)


def test_forward_follows_every_way_the_statistics_change():
    """forward caches (mean, 1/std); an update, a state_dict load or a worker's in-place parameter copy must
    all be seen by the next call."""
    torch.manual_seed(0)
    norm = RunningMeanStd(3, mask=torch.tensor([True, True, False]))
    x = torch.randn(16, 3) * 4 + 2
    torch.testing.assert_close(norm(x), _reference(norm, x))
    norm.update(torch.randn(64, 3) * 3 + 1)
    torch.testing.assert_close(norm(x), _reference(norm, x))

    other = RunningMeanStd(3, mask=torch.tensor([True, True, False]))
    other.update(torch.randn(64, 3) * 0.5 - 3)
    norm.load_state_dict(other.state_dict())
    torch.testing.assert_close(norm(x), _reference(other, x))

    with torch.no_grad():  # how ParameterStore.read_into refreshes a worker's network
        for name, t in norm.state_dict().items():
            t.copy_(RunningMeanStd(3).state_dict()[name] if name != "mask" else t)
    torch.testing.assert_close(norm(x), _reference(norm, x))
    assert torch.equal(norm(x)[:, :2], x[:, :2].clamp(-5, 5))  # back to mean 0, var 1 (count 0 prior)


def test_update_does_not_track_gradients_and_rejects_wrong_width():
    rms = RunningMeanStd(2)
    x = torch.randn(3, 2, requires_grad=True)
    rms.update(x)
    assert not rms.mean.requires_grad
    with pytest.raises(BadInput):
        rms.update(torch.randn(3, 4))


@pytest.mark.filterwarnings("ignore:var_mean")  # the torch reference on no rows at all: a count of zero
@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batch_moments_of_the_kept_rows_match_float64_numpy(dtype, enabled, monkeypatch):
    """The compiled two-pass moments and the torch reference: only the kept rows count, a large mean does not
    cancel the variance, and no kept row at all is a count of zero."""
    monkeypatch.setattr(kernels, "ENABLED", enabled)
    rng = np.random.default_rng(0)
    rows = torch.from_numpy(rng.normal(1e4, 0.01, size=(500, 3))).to(dtype)
    keep = torch.from_numpy(rng.random(500) < 0.3)
    mean, var, n = batch_moments(rows, keep)
    kept = rows[keep].double().numpy()
    assert n == len(kept)
    np.testing.assert_allclose(mean.numpy(), kept.mean(0), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), kept.var(0), rtol=1e-6)
    mean, var, n = batch_moments(rows, None)
    np.testing.assert_allclose(var.numpy(), rows.double().numpy().var(0), rtol=1e-6)
    assert batch_moments(rows, torch.zeros(500, dtype=torch.bool))[2] == 0


def test_update_with_a_mask_equals_update_with_the_kept_rows():
    torch.manual_seed(0)
    x = torch.randn(6, 5, 4)
    keep = torch.rand(6, 5) < 0.5
    masked, indexed = RunningMeanStd(4), RunningMeanStd(4)
    for _ in range(2):
        masked.update(x, keep)
        indexed.update(x[keep])
    for name in ("mean", "var", "count"):
        torch.testing.assert_close(getattr(masked, name), getattr(indexed, name), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_the_compiled_moments_equal_the_torch_reference(dtype, monkeypatch):
    rng = np.random.default_rng(1)
    rows = torch.from_numpy(rng.normal(3.0, 2.0, size=(300, 4))).to(dtype)
    keep = torch.from_numpy(rng.random(300) < 0.5)
    for k in (keep, None):
        compiled = column_moments(rows, k)
        monkeypatch.setattr(kernels, "ENABLED", False)
        reference = batch_moments(rows, k)
        monkeypatch.setattr(kernels, "ENABLED", True)
        assert compiled[2] == reference[2]
        torch.testing.assert_close(compiled[0], reference[0], rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(compiled[1], reference[1], rtol=1e-10, atol=1e-12)


@njit
def _standardize_each(x, shift, scale, low, high, out):
    """``standardized_value`` as the kernels call it: inside a compiled loop, in the arrays' dtype."""
    for i in range(x.shape[0]):
        out[i] = standardized_value(x[i], shift[i], scale[i], low[i], high[i])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_compiled_loops_standardize_each_value_as_the_torch_reference_to_the_bit(dtype):
    rng = np.random.default_rng(2)
    x, shift, scale = (rng.normal(size=64).astype(dtype) * 4 for _ in range(3))
    low, high = np.full(64, -5, dtype), np.full(64, 5, dtype)
    high[:8], low[:8] = np.inf, -np.inf  # columns that are not clipped
    standardizer = tuple(torch.from_numpy(a) for a in (shift, scale, low, high))
    expected = standardize(torch.from_numpy(x), standardizer).numpy()
    got = np.empty_like(x)
    _standardize_each(x, shift, scale, low, high, got)
    assert np.array_equal(got, expected)
    assert (np.abs(expected) == 5).any()
