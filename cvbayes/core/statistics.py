"""Expected-count statistics: the blocks every schedule adds, subtracts, scales and decays.

A model's statistics are named blocks of expected counts: dense arrays whose last axis holds the
outcomes of Dirichlet rows (an HMM's start row, its K x K transitions, a family's (S, K) table), or
the stored slots of sparse rows (the aligner's translation rows).  The collapsed schedules keep each
unit's local statistics in float32 and move exactly those rounded values in and out of the global
blocks (`move`, `store`, `move_slots`), so that taking a unit out later removes what it put in; the
stochastic schedule decays and refreshes the global blocks (`DecayingCounts`, eq. 3.103-3.104).
"""
import numpy as np
from numba import njit


@njit(cache=True)
def move(target, values, sign):
    """target += sign * values, elementwise over blocks of the same shape (a unit's start row or its
    K x K transition counts in or out of the global ones)."""
    # .flat, not reshape: reshaping costs about 80 ns a call, as much as moving a 15-bucket block
    for i in range(target.size):
        target.flat[i] += sign * values.flat[i]


@njit(cache=True)
def store(source, local, target):
    """local = source (rounded to local's precision), then target += the stored values: a unit's new
    statistics kept and added to the global block."""
    for i in range(source.size):
        local.flat[i] = source.flat[i]
        target.flat[i] += local.flat[i]


@njit(cache=True)
def move_slots(counts, row_totals, cell_slot, slot_row, first, n_cells, values, sign):
    """Add (sign = 1) or remove (sign = -1) the values of cells first..first+n_cells-1 in the sparse
    slots they map to (``cell_slot``), keeping each row's total (``slot_row``) in step."""
    for c in range(first, first + n_cells):
        slot = cell_slot[c]
        v = sign * np.float64(values[c])
        counts[slot] += v
        row_totals[slot_row[slot]] += v


class DecayingCounts:
    """A global block updated by N <- (1 - rho) N + rho * update (eq. 3.103-3.104).

    The decay is kept as one scale factor, so a step costs only the rows its minibatch touches instead
    of every entry (K x W for emissions, every translation slot for the aligner).
    """

    def __init__(self, values):
        self.stored = np.array(values, dtype=float)
        self.scale = 1.0

    def decay(self, keep):
        self.scale *= keep
        if self.scale < 1e-150:
            self.stored *= self.scale
            self.scale = 1.0

    def add(self, rows, update):
        """Add ``update`` at ``rows`` (an index array, or ``slice(None)`` for the whole block)."""
        self.stored[rows] += update / self.scale

    def rows(self, rows):
        return self.scale * self.stored[rows]

    def values(self):
        return self.scale * self.stored

    @property
    def nbytes(self):
        return self.stored.nbytes
