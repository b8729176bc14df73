"""Ragged units (sequences, sentence pairs, documents) laid end to end, and their split over threads."""
from contextlib import contextmanager

import numpy as np
from numba import get_num_threads, njit, set_num_threads

# work (about the multiply-adds) below which a parallel kernel runs on one thread: waking the other
# threads costs microseconds on a quiet machine but milliseconds on a loaded one
PARALLEL_WORK = 200_000


def equal_token_chunks(offsets, n_chunks=None):
    """Split the units of ``offsets`` into ``n_chunks`` chunks (some empty when there are fewer units),
    cut at equal token counts; by default one chunk a thread and at most one a unit.

    Parallel kernels keep one copy of their statistics per chunk (W x K for categorical emissions),
    so there is one chunk per thread.
    """
    n_units = offsets.shape[0] - 1
    if n_chunks is None:
        n_chunks = max(1, min(n_units, get_num_threads()))
    targets = np.linspace(0, offsets[-1], n_chunks + 1)
    bounds = np.searchsorted(offsets, targets, side="left")
    bounds[0], bounds[-1] = 0, n_units
    return np.ascontiguousarray(np.maximum.accumulate(bounds), dtype=np.int64)


@contextmanager
def threads_for(work):
    """Run the numba kernels inside on one thread when ``work`` is below `PARALLEL_WORK`."""
    threads = get_num_threads()
    if work < PARALLEL_WORK:
        set_num_threads(1)
    try:
        yield
    finally:
        set_num_threads(threads)


@njit(cache=True)
def max_length(offsets):
    """The longest unit's length (at least 1): the size of a kernel's work rows."""
    longest = 0
    for i in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    return max(longest, 1)


@njit(cache=True)
def first_bad(bad_per_chunk):
    """The lowest unit index any chunk flagged as impossible, or -1."""
    first = -1
    for bad in bad_per_chunk:
        if bad >= 0 and (first < 0 or bad < first):
            first = bad
    return first


class ZeroProbabilityError(ValueError):
    """A unit (sequence, sentence, tree) that the model gives probability zero; the message names it."""
