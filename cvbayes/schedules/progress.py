"""What every schedule reports after an iteration: the history, a progress bar and the user's callback."""
from dataclasses import astuple, dataclass

from tqdm.auto import tqdm


@dataclass(frozen=True)
class IterationRecord:
    """One entry of a model's ``history_``: the objective after an iteration and its wall time.

    ``stage`` names the model of a staged fit (the aligner's "ibm1" then "hmm"); empty otherwise.
    """

    iteration: int
    objective: float
    seconds: float
    stage: str = ""


class Progress:
    """The history of a fit, its progress bar and its callback.

    ``callback(iteration)`` runs after each record; its time is not part of ``seconds``.
    """

    def __init__(self, total, description, enabled, callback=None, unit="it"):
        self.history = []
        self.callback = callback
        self._bar = tqdm(total=total, desc=description, disable=not enabled, leave=False, unit=unit)

    def record(self, iteration, objective, seconds, stage="", advance=True):
        """Append to the history; ``advance`` moves the bar (False where `advance` counts steps)."""
        self.history.append(IterationRecord(iteration, float(objective), seconds, stage))
        self._bar.set_postfix(objective=f"{objective:.6g}")
        if advance:
            self._bar.update()
        if self.callback is not None:
            self.callback(iteration)

    def saved_history(self):
        """The history as tuples, for a checkpoint (`cvbayes.checkpoints`)."""
        return [astuple(record) for record in self.history]

    def restore_history(self, saved):
        """Put back a checkpoint's history (in place: ``history_`` may be this list) and move the bar."""
        self.history[:] = [IterationRecord(int(i), float(o), float(t), str(s)) for i, o, t, s in saved]
        self._bar.update(len(saved))

    def advance(self):
        """Move the bar without a record (a minibatch step inside a pass)."""
        self._bar.update()

    @property
    def train_seconds(self):
        return sum(record.seconds for record in self.history)

    def close(self):
        # tqdm draws at most every 0.1 s, so a fast fit's last drawn state can be short of its end: draw the
        # end before the bar goes (a log keeps it: `cvbayes.cli.ProgressLog`)
        self._bar.refresh()
        self._bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
