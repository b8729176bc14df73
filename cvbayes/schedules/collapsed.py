"""The leave-one-out schedule of collapsed VI, and the pass loop it shares with the samplers.

CVI updates one unit at a time against the counts of every other unit (eq. 3.33 for tokens, 3.47-3.50
for sequences, 3.56-3.82 for subchains, 4.24 for trees): take the unit's local statistics out of the
global counts, run the structure's dynamic program on the MEAN tables of what is left, and put the new
local statistics back.  ``update_unit(state, unit)`` does that for one unit of one model and returns
the unit's log normaliser (a leave-one-out predictive log-probability), or -inf when no structure of
the unit has positive probability; `leave_one_out` runs it over the units in order.
"""
import time

import numpy as np
from numba import njit

from ..checkpoints import NO_CHECKPOINT


# inlined into the model's entry point: called as a function, it receives the unit's dispatcher as a
# value, whose address numba embeds unless LLVM happens to inline the call, and the entry point then
# cannot be cached (numba 0.68, any update with a loop of dynamic length)
@njit(cache=True, inline="always")
def leave_one_out(update_unit, state, order):
    """One pass of ``update_unit`` over the units in ``order``.

    Returns (objective, first_bad): the summed log normalisers, and the first unit that no structure
    can explain (-1 if none; the pass stops there).
    """
    objective = 0.0
    for unit in order:
        log_z = update_unit(state, unit)
        if log_z == -np.inf:
            return objective, unit
        objective += log_z
    return objective, -1


def passes(sweep, n_iter, record, after_pass=None, checkpoint=NO_CHECKPOINT):
    """Run ``sweep(iteration) -> objective`` ``n_iter`` times (CVI's and the samplers' passes).

    ``after_pass(iteration)`` runs inside the timed pass (the HDP's hyperparameter updates, §5.3);
    ``record(iteration, objective, seconds)`` after it.  ``checkpoint`` (`cvbayes.checkpoints`) holds
    the state the model declared: resumed before the first pass, saved after each.
    """
    for iteration in range(checkpoint.resume(), n_iter):
        started = time.perf_counter()
        objective = sweep(iteration)
        if after_pass is not None:
            after_pass(iteration)
        record(iteration, objective, time.perf_counter() - started)
        checkpoint.save_if_due(iteration, n_iter)
