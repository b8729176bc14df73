"""Ragged units (sequences, sentence pairs, documents) laid end to end, and their split over threads.

Every parallel region of the package gets its threads from one rule, `n_threads_for`: numba's
threads, but none with less than `MIN_WORK_PER_THREAD` steps of work (issue 34, finding 2).  A
kernel whose ``prange`` runs over chunks gets its chunks from `equal_token_chunks` or `cubic_chunks`
(costed by its steps a token or a T^3) and is compiled by `parallel_over_chunks`, which runs it on
as many threads as it has chunks; a kernel whose ``prange`` runs over frames runs inside
`threads_for`.
"""
import functools
import inspect
from contextlib import contextmanager

import numpy as np
from numba import get_num_threads, njit, set_num_threads

MIN_WORK_PER_THREAD = 10_000_000
"""Inner-loop steps (about one multiply-add each) a thread must get before a parallel region is split:
10-25 ms of one thread's work at the 1-2.5 ns a step the kernels' cost estimates give on the 2-core
machine under load (benchmarks/bench_threads.py).  Waking a second thread and waiting for it costs
microseconds on a quiet machine but several ms on a loaded one, more than a smaller region saves."""


def n_threads_for(n_units, work):
    """How many threads (and chunks) a parallel region of ``work`` steps over ``n_units`` units gets:
    numba's threads, but none with less than `MIN_WORK_PER_THREAD` steps, and at least one."""
    return int(max(1, min(get_num_threads(), n_units, work // MIN_WORK_PER_THREAD)))


def equal_token_chunks(offsets, cost=1.0, n_chunks=None):
    """Split the units of ``offsets`` into chunks cut at equal token counts: ``n_chunks`` (some empty
    when there are fewer units), by default as many as `n_threads_for` gives ``offsets[-1] * cost``
    steps (``cost``: the kernel's steps a token).

    Parallel kernels keep one copy of their statistics per chunk (W x K for categorical emissions),
    so there is at most one chunk a thread.  ``offsets`` may count any work (e.g. a chart's cells).
    """
    n_units = offsets.shape[0] - 1
    if n_chunks is None:
        n_chunks = n_threads_for(n_units, float(offsets[-1]) * cost)
    if n_chunks == 1:  # the common case of a small region (a minibatch), without the search below
        return np.array([0, n_units], dtype=np.int64)
    targets = np.linspace(0, offsets[-1], n_chunks + 1)
    bounds = np.searchsorted(offsets, targets, side="left")
    bounds[0], bounds[-1] = 0, n_units
    return np.ascontiguousarray(np.maximum.accumulate(bounds), dtype=np.int64)


def cubic_chunks(offsets, cost=1.0):
    """`equal_token_chunks` for chart parsers: a sentence of T tokens is T^3 + 1 units of work, so
    cutting at equal token counts would leave one thread with the long sentences (``cost``: steps a
    (span, split) pair, e.g. the grammar's binary rules)."""
    cells = np.zeros(offsets.shape[0])
    np.cumsum(np.diff(offsets).astype(np.float64) ** 3 + 1.0, out=cells[1:])
    return equal_token_chunks(cells, cost)


@contextmanager
def numba_threads(n_threads):
    """Run the numba kernels inside on ``n_threads`` threads (at most numba's own)."""
    threads = get_num_threads()
    n_threads = max(1, min(threads, n_threads))
    if n_threads == threads:
        yield
        return
    set_num_threads(n_threads)
    try:
        yield
    finally:
        set_num_threads(threads)


def threads_for(n_units, work):
    """Run the numba kernels inside (``prange`` over ``n_units`` frames or rows) on `n_threads_for` threads."""
    return numba_threads(n_threads_for(n_units, work))


def parallel_over_chunks(**options):
    """numba's ``njit(parallel=True, cache=True, **options)`` for a kernel whose ``prange`` runs over the
    chunks of its ``chunk_bounds`` (or ``chunks``) argument, run on as many threads as it has chunks.

    A ``prange`` over one chunk still wakes every numba thread and waits for it; with one thread the
    region runs in the calling thread alone.  Python callers only (numba code cannot call the wrapper).
    """
    def decorate(function):
        kernel = njit(parallel=True, cache=True, **options)(function)
        names = list(inspect.signature(function).parameters)
        name = "chunk_bounds" if "chunk_bounds" in names else "chunks"
        position = names.index(name)

        @functools.wraps(function)
        def run(*args, **kwargs):
            chunks = args[position] if position < len(args) else kwargs[name]
            with numba_threads(chunks.shape[0] - 1):
                return kernel(*args, **kwargs)
        return run
    return decorate


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
