"""The normalizer's batch statistics as one compiled two-pass loop (``normalize.batch_moments``' kernel).

In torch a batch is first converted to float64 as a whole and then reduced column by column; a unit set's batch is
over a hundred thousand rows, and the loop reads the float32 rows once per pass instead.
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit


@njit(cache=True, _nrt=False)
def _column_moments(rows: np.ndarray, keep: np.ndarray, mean: np.ndarray, var: np.ndarray) -> int:
    """Mean and population variance (float64, written into ``mean`` and ``var``) of the columns of ``rows``
    [R, F] over the rows where ``keep`` [R] is set, in two passes (the variance from deviations, not from the
    sum of squares, so a large mean does not cancel it away). Returns the number of rows kept."""
    n = 0
    mean[:] = 0.0
    var[:] = 0.0
    for r in range(rows.shape[0]):
        if keep[r]:
            n += 1
            for j in range(rows.shape[1]):
                mean[j] += rows[r, j]
    if n == 0:
        return 0
    for j in range(rows.shape[1]):
        mean[j] /= n
    for r in range(rows.shape[0]):
        if keep[r]:
            for j in range(rows.shape[1]):
                d = rows[r, j] - mean[j]
                var[j] += d * d
    for j in range(rows.shape[1]):
        var[j] /= n
    return n


def column_moments(rows: torch.Tensor, keep: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(mean, population variance, count) in float64 of the CPU ``rows`` [R, F] where ``keep`` [R] is set."""
    if keep is None:
        keep = torch.ones(rows.shape[0], dtype=torch.bool)
    mean = np.empty(rows.shape[1])
    var = np.empty(rows.shape[1])
    n = _column_moments(rows.contiguous().numpy(), keep.contiguous().numpy(), mean, var)
    return torch.from_numpy(mean), torch.from_numpy(var), n
