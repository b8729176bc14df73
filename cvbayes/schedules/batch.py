"""The batch schedule of EM and VB: every table refreshed after a full pass (eq. 3.13-3.22, 4.5-4.12)."""
import time

from ..checkpoints import NO_CHECKPOINT


def batch(structure, rule, n_iter, record, statistics=None, tables=None, checkpoint=NO_CHECKPOINT):
    """Run ``n_iter`` passes; returns the last expected counts.

    Parameters
    ----------
    structure : the model's dynamic program bound to its data, with
        ``tables(statistics, rule)``: the parameter tables of ``rule`` (core.rules MAP or VB);
        ``expectations(tables)``: the E-step over every unit, (statistics, sum of log Z);
        ``penalty(rule, statistics, tables)``: what the objective adds to sum log Z: the log prior of
        the tables for MAP (EM raises the posterior), minus KL(q(theta) || p(theta)) of the counts the
        tables came from for VB (the ELBO, eq. 3.11).
    rule : core.rules.MAP or core.rules.VB
    record : ``record(iteration, objective, statistics, seconds)`` after every pass
    statistics, tables : where to start: expected counts, or (MAP only, whose penalty needs no counts) the
        first pass's tables themselves
    checkpoint : `cvbayes.checkpoints.Checkpoint`, where the statistics are saved and resumed from
    """
    def restore(saved):
        nonlocal statistics, tables
        statistics, tables = saved, None

    checkpoint.track("batch.statistics", lambda: statistics, restore)
    for iteration in range(checkpoint.resume(), n_iter):
        started = time.perf_counter()
        if tables is None:
            tables = structure.tables(statistics, rule)
        penalty = structure.penalty(rule, statistics, tables)
        statistics, log_evidence = structure.expectations(tables)
        tables = None
        record(iteration, log_evidence + penalty, statistics, time.perf_counter() - started)
        checkpoint.save_if_due(iteration, n_iter)
    return statistics
