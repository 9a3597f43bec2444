"""The normalizer's standardization of one value, for the compiled loops that standardize as they gather."""

from __future__ import annotations

from numba import njit


@njit(cache=True, _nrt=False)
def standardized_value(v, shift, scale, low, high):
    """``fivectl.model.normalize.standardize`` of one value: ``clamp((v - shift) * scale, low, high)``, the same
    operations in the same order."""
    v = (v - shift) * scale
    if v < low:
        return low
    if v > high:
        return high
    return v
