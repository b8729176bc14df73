"""Update schedules: when the statistics are refreshed (thesis §3.3-3.7, §4.3-4.4; DESIGN.md).

Every algorithm is a schedule paired with a rule of `cvbayes.core.rules`:

* `batch`: EM (rule MAP) and VB (rule VB) refresh every table after a full pass;
* `leave_one_out` with `passes`: CVI refreshes after every unit (a token for CVI-1 and CVB0, a
  sequence, subchain, sentence pair, tree or document for CVI-2/CVI-3), on MEAN tables of the counts
  of every other unit;
* `stochastic`: SVI (rule VB) and SCVI (rule MEAN) take Robbins-Monro steps on minibatches;
* `gibbs` with `passes`: collapsed Gibbs and Metropolis-Hastings samplers redraw one site at a time
  from the MEAN predictive of everything else.

A model supplies the structure (its dynamic program bound to the data) and the hooks; the schedule
supplies the loop, and saves and resumes it through the `cvbayes.checkpoints.Checkpoint` the model
opens (NO_CHECKPOINT by default).  `driver` is the fit every model shares (checks, seeds, restarts,
checkpoints, progress, history); a model's ``ALGORITHMS`` table names its learners by `Algorithm`
records.  Schedules import only `cvbayes.core` and `cvbayes.checkpoints`.
"""
from .batch import batch
from .collapsed import leave_one_out, passes
from .progress import IterationRecord, Progress
from .sampling import gibbs
from .stochastic import Minibatch, stochastic, step_size
from .driver import Algorithm, Run

__all__ = ["Algorithm", "IterationRecord", "Run", "Minibatch", "Progress", "batch", "gibbs", "leave_one_out", "passes",
           "step_size", "stochastic"]
