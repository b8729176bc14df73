"""The acoustic unit model's statistics and its learners' states (`cvbayes.models.units` is the model):
the expected unit and transition counts, the utterances as one frame array, the E-step over blocks of
utterances, and the batch, stochastic, collapsed and sampled structures the schedules drive."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..chains.composite import batch_unit_log_evidence, batch_unit_posteriors, batch_unit_sample
from ..core.units import ZeroProbabilityError, equal_token_chunks, max_length, threads_for
from ..data.corpus import Corpus
from ..families.ops import GAUSSIAN, state_stats
from ..schedules import Minibatch
from .units_kernels import cvi_pass, cvi_state, cvi_workspace, keep_frames, move_frames, sample_components

# the frames of whole utterances one E-step block holds: its (frames, U S M) component table is the
# largest array of a pass (16,384 x 600 x 8 bytes = 79 MB at U = 100, S = 3, M = 2)
BLOCK_FRAMES = 16_384
# steps a frame of one composite state costs the chain kernels: five exp or log in log space
CHAIN_STEPS = 20


class UnitCounts(NamedTuple):
    """Expected statistics of a chain of units: occurrences (U,), stays and leaves (U S, 2) and the
    components' Gaussian statistics (1 + 2D, U S M) (`cvbayes.families.ops` layout)."""

    units: np.ndarray
    trans: np.ndarray
    stats: np.ndarray


class UnitTables(NamedTuple):
    """What the composite chain runs on (`cvbayes.chains.composite`, in log space): log unit entry (U,),
    log stay and log leave (U S,), and the mixtures' emission table (`families.gaussian.LinearTable` or
    `StudentTable`)."""

    log_entry: np.ndarray
    log_stay: np.ndarray
    log_leave: np.ndarray
    emission: Any


class Segments(NamedTuple):
    """One utterance's decoded units: ``units`` (n,), and each occurrence's first frame ``starts`` and
    end frame ``ends`` (exclusive), in frames of the input."""

    units: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


# -- data ---------------------------------------------------------------------------------------------


class Utterances:
    """Feature frames (N, D) of utterances laid end to end (``offsets``), for the kernels, and ``log_start``
    (N,): 0 where a unit may begin, -inf where a pre-segmentation allows none (``starts``, a bool (N,) array
    from `cvbayes.speech.spectral_change_starts`; every frame when None)."""

    def __init__(self, corpus, starts=None):
        self.features = np.ascontiguousarray(corpus.observations, dtype=np.float64)
        self.offsets = np.ascontiguousarray(corpus.offsets, dtype=np.int64)
        self.corpus = corpus
        self.log_start = np.zeros(self.features.shape[0]) if starts is None else np.where(starts, 0.0, -np.inf)

    @property
    def n_utterances(self):
        return self.offsets.shape[0] - 1

    @property
    def n_frames(self):
        return int(self.offsets[-1])

    def blocks(self, max_frames=BLOCK_FRAMES):
        """Ranges [a, b) of whole utterances of at most ``max_frames`` frames (or one utterance)."""
        bounds = [0]
        while bounds[-1] < self.n_utterances:
            a = bounds[-1]
            b = int(np.searchsorted(self.offsets, self.offsets[a] + max_frames, side="right")) - 1
            bounds.append(max(b, a + 1))
        return list(zip(bounds[:-1], bounds[1:]))

    def gather(self, ids):
        """The utterances ``ids`` (repeats allowed) as their own `Utterances`."""
        starts, stops = self.offsets[ids], self.offsets[ids + 1]
        frames = np.concatenate([np.arange(a, b) for a, b in zip(starts, stops)])
        lengths = stops - starts
        return Utterances(Corpus(self.features[frames], np.concatenate([[0], np.cumsum(lengths)])),
                          self.log_start[frames] == 0.0)


def presegmented(corpus, presegment):
    """Where a unit may begin in every frame of ``corpus`` (N,) bool, from the spectral-change candidates of
    each utterance (`cvbayes.speech.spectral_change_starts`); None (anywhere) unless ``presegment``."""
    if not presegment:
        return None
    from ..speech.landmarks import spectral_change_starts

    return np.concatenate([spectral_change_starts(frames) for frames in corpus])


def reading_frames(readings, offsets, n_units):
    """(starts (N,) bool, frame_units (N,)) of a reading of every utterance (one `Segments` each, laid over
    the frames ``offsets``): where its unit occurrences begin and the unit of every frame.  A ValueError
    names the first utterance whose occurrences do not tile its frames or read a unit beyond ``n_units``."""
    if len(readings) != offsets.shape[0] - 1:
        raise ValueError(f"{len(readings)} readings for {offsets.shape[0] - 1} utterances")
    starts = np.zeros(offsets[-1], dtype=np.bool_)
    frame_units = np.empty(offsets[-1], dtype=np.int64)
    for i, reading in enumerate(readings):
        n_frames = offsets[i + 1] - offsets[i]
        begins, ends, units = (np.asarray(part, dtype=np.int64) for part in (reading.starts, reading.ends,
                                                                              reading.units))
        if (units.size == 0 or begins[0] != 0 or ends[-1] != n_frames or np.any(begins[1:] != ends[:-1])
                or np.any(ends <= begins)):
            raise ValueError(f"utterance {i}: the reading's unit occurrences do not tile its {n_frames} frames")
        bad = units[(units < 0) | (units >= n_units)]
        if bad.size:
            raise ValueError(f"utterance {i}: the reading has unit {int(bad[0])}, outside units 0..{n_units - 1}")
        starts[offsets[i] + begins] = True
        frame_units[offsets[i]:offsets[i + 1]] = np.repeat(units, ends - begins)
    return starts, frame_units


def chain_chunks(offsets, log_lik):
    """Thread chunks of utterances for the chain kernels over the emission rows ``log_lik`` (T, U S)."""
    return equal_token_chunks(offsets, CHAIN_STEPS * log_lik.shape[1])


def unit_posteriors(family, n_states, tables, data, frame_units=None):
    """Forward-backward of every utterance of ``data`` under ``tables``, block by block of whole
    utterances: yields (a, b, frames x, marginals (T, U S), E[n_u] (b - a, U), component posteriors
    q(z_t = c, m_t = m) (T, U S M), log Z (b - a,)).  ``frame_units`` (N,), optional: the unit every frame
    must be in (a reading's, `reading_frames`): a frame's emission rows are computed under that unit's S
    mixtures alone, the other units' emissions zero (`GaussianMixture.emission_rows`' groups), so that with
    the reading's unit starts as the chain's ``log_start`` the paths left are the reading's, its occurrences'
    states latent; the other units' marginals are 0 and the component posteriors are compact, (T, S M) over
    the frame's unit's components alone (column j of frame t: component frame_units[t] S M + j).

    Raises
    ------
    ZeroProbabilityError
        For the first utterance with no path (its emissions underflow everywhere).
    """
    n_units = tables.log_entry.shape[0]
    for a, b in data.blocks():
        begin, end = data.offsets[a], data.offsets[b]
        x = data.features[begin:end]
        offsets = data.offsets[a:b + 1] - begin
        unit_counts = np.zeros((b - a, n_units))
        log_z = np.empty(b - a)
        reading_units = block_units(frame_units, begin, end)
        log_lik, posterior = family.emission_rows(tables.emission, x, reading_units, n_states)
        marginals = np.empty_like(log_lik)
        batch_unit_posteriors(*tables[:3], data.log_start[begin:end], log_lik, offsets, n_states,
                              chain_chunks(offsets, log_lik), marginals, unit_counts, log_z)
        bad = np.flatnonzero(~np.isfinite(log_z))
        if bad.size:
            i = a + int(bad[0])
            raise ZeroProbabilityError(f"utterance {i} ({data.offsets[i + 1] - data.offsets[i]} frames) has "
                                       f"probability zero under every path of units")
        # the marginals of the states whose components the posterior's columns are
        states = marginals if reading_units is None else np.take_along_axis(
            marginals, reading_units[:, None] * n_states + np.arange(n_states), axis=1)
        posterior.reshape(x.shape[0], states.shape[1], -1)[...] *= states[:, :, None]
        yield a, b, x, marginals, unit_counts, posterior, log_z


def unit_log_evidence(family, n_states, tables, data, frame_units=None):
    """log Z of every utterance of ``data`` under ``tables``: the forward pass of eq. 3.16-3.17's forward-backward
    alone (`chains.composite.unit_forward`), block by block as `unit_posteriors`, whose log Z it is; -inf for an
    utterance no path explains.  ``frame_units``: as `unit_posteriors`."""
    log_z = np.empty(data.n_utterances)
    for a, b in data.blocks():
        begin, end = data.offsets[a], data.offsets[b]
        offsets = data.offsets[a:b + 1] - begin
        log_lik, _ = family.emission_rows(tables.emission, data.features[begin:end],
                                          block_units(frame_units, begin, end), n_states)
        batch_unit_log_evidence(*tables[:3], data.log_start[begin:end], log_lik, offsets, n_states,
                                chain_chunks(offsets, log_lik), log_z[a:b])
    return log_z


def block_units(frame_units, begin, end):
    """The reading's unit of the frames [begin, end) (None without a reading)."""
    return None if frame_units is None else frame_units[begin:end]


def transition_counts(occupancy, unit_counts, n_states):
    """(U S, 2) stays and leaves from the states' occupancies and the units' occurrences (module notes)."""
    leaves = np.repeat(unit_counts, n_states, axis=-1)
    return np.stack([np.maximum(occupancy - leaves, 0.0), leaves], axis=-1)


def unit_expectations(family, n_states, tables, data, frame_units=None, weights=None):
    """The E-step: (UnitCounts summed over utterances, log Z of every utterance) (eq. 3.13-3.17 on
    the chain of units); a pure function of the tables and the data, so that shards add up.
    ``frame_units``: as `unit_posteriors`; ``weights`` (I,), optional: each utterance's statistics count this
    many times (a reading's posterior probability, `cvbayes.models.discovery_nbest`)."""
    n_units = tables.log_entry.shape[0]
    units = np.zeros(n_units)
    occupancy = np.zeros(tables.log_stay.shape[0])
    stats = np.zeros((family.n_stats(), occupancy.shape[0] * family.n_components))
    log_z = np.empty(data.n_utterances)
    for a, b, x, marginals, unit_counts, posterior, block_log_z in unit_posteriors(family, n_states, tables, data,
                                                                                   frame_units):
        if weights is not None:
            frame_weights = np.repeat(weights[a:b], np.diff(data.offsets[a:b + 1]))[:, None]
            unit_counts, marginals, posterior = (weights[a:b, None] * unit_counts, frame_weights * marginals,
                                                 frame_weights * posterior)
        units += unit_counts.sum(axis=0)
        occupancy += marginals.sum(axis=0)
        family.add_statistics(stats, x, posterior, block_units(frame_units, data.offsets[a], data.offsets[b]),
                              n_states)
        log_z[a:b] = block_log_z
    return UnitCounts(units, transition_counts(occupancy, units, n_states), stats), log_z


# -- the structures the schedules drive --------------------------------------------------------------


class BatchUnits:
    """The structure of `schedules.batch` (VB) from the model's hooks only (`_tables`, `_expectations`,
    `_kl`): tables, E-step and penalty of the model on its data."""

    def __init__(self, model, data):
        self.model = model
        self.data = data

    def tables(self, statistics, rule):
        return self.model._tables(UnitCounts(*statistics), rule)

    def expectations(self, tables):
        counts, log_z = self.model._expectations(tables, self.data)
        return counts, float(log_z.sum())

    def penalty(self, rule, statistics, tables):
        return -self.model._kl(UnitCounts(*statistics))


class StochasticUnits:
    """The structure of `schedules.stochastic` (SVI with rule VB, SCVI with rule MEAN) from the model's
    hooks: a minibatch's E-step under the tables of the running counts ``counts`` (DecayingCounts blocks
    "units", "trans", "stats"), scaled from the minibatch to the corpus (eq. 3.103-3.104)."""

    def __init__(self, model, data, rule, counts):
        self.model = model
        self.data = data
        self.rule = rule
        self.counts = counts
        self.n_units = data.n_utterances

    def current(self):
        return UnitCounts(*(self.counts[name].values() for name in UnitCounts._fields))

    def minibatch(self, ids):
        batch_data = self.data.gather(ids)
        counts, log_z = self.model._expectations(self.model._tables(self.current(), self.rule), batch_data)
        scale = self.n_units / ids.shape[0]
        return Minibatch([(name, slice(None), value, scale) for name, value in zip(UnitCounts._fields, counts)],
                         float(log_z.sum()), batch_data.n_frames)


class CollapsedUnits:
    """CVI's state (models/units_kernels.py): global counts, each utterance's local statistics, and the
    pass `sweep` that `schedules.passes` runs."""

    def __init__(self, model, data, tables, width):
        family = model.family
        n_units, n_states = model.n_units, model.n_states
        n_utterances = data.n_utterances
        self.data = data
        self.units = np.zeros(n_units)
        self.trans = np.zeros((n_units * n_states, 2))
        self.stats = np.zeros((family.n_stats(), n_units * n_states * family.n_components))
        self.local_units = np.zeros((n_utterances, n_units), dtype=np.float32)
        self.local_trans = np.zeros((n_utterances, n_units * n_states, 2), dtype=np.float32)
        self.kept = np.zeros((data.n_frames, width), dtype=np.int32)
        self.kept_weight = np.zeros((data.n_frames, width), dtype=np.float32)
        for a, b, x, marginals, unit_counts, posterior, _ in unit_posteriors(family, n_states, tables, data):
            offsets = data.offsets[a:b + 1] - data.offsets[a]
            self.local_units[a:b] = unit_counts
            occupancy = np.add.reduceat(marginals, offsets[:-1], axis=0)
            self.local_trans[a:b] = transition_counts(occupancy, self.local_units[a:b], n_states)
            with threads_for(posterior.shape[0], posterior.size):
                keep_frames(posterior, data.offsets[a], self.kept, self.kept_weight)
        # the global counts are the sums of the stored (float32) local statistics
        self.units += self.local_units.sum(axis=0, dtype=np.float64)
        self.trans += self.local_trans.sum(axis=0, dtype=np.float64)
        move_frames(data.features, 0, data.n_frames, self.kept, self.kept_weight, self.stats, 1.0)
        priors = (float(model.gamma), float(model.transition_prior), float(family.weight_prior),
                  family.components.prior_array())
        work = cvi_workspace(max_length(data.offsets), n_units, n_states, family.n_components, family.n_dims)
        self.state = cvi_state(data.features, data.offsets, data.log_start, n_states, family.n_components, priors,
                               (self.units, self.trans, self.stats),
                               (self.local_units, self.local_trans, self.kept, self.kept_weight), work)
        self.order = np.arange(n_utterances, dtype=np.int64)
        # an utterance's emission rows run in parallel over its frames, worth it from some length on
        self.frames = data.n_frames / n_utterances
        self.work = family.work(self.frames)
        self.memory_bytes = (self.local_units.nbytes + self.local_trans.nbytes + self.kept.nbytes
                             + self.kept_weight.nbytes)

    def arrays(self):
        """Every array a pass changes, for checkpoints."""
        return {"units": self.units, "trans": self.trans, "stats": self.stats, "local_units": self.local_units,
                "local_trans": self.local_trans, "kept": self.kept, "kept_weight": self.kept_weight}

    def current(self):
        return UnitCounts(self.units, self.trans, self.stats)

    def sweep(self, iteration):
        with threads_for(self.frames, self.work):
            objective, bad = cvi_pass(self.state, self.order)
        if bad >= 0:
            raise ZeroProbabilityError(f"utterance {bad} has probability zero under every path of units")
        return objective


class SampledUnits:
    """The blocked Gibbs sampler's state: every frame's composite state, component and unit starts;
    `sweep` draws the parameters, then every utterance's path (module notes)."""

    def __init__(self, model, data, tables, rng):
        self.model = model
        self.data = data
        self.rng = rng
        self.states = np.zeros(data.n_frames, dtype=np.int32)
        self.components = np.zeros(data.n_frames, dtype=np.int32)
        self.starts = np.zeros(data.n_frames, dtype=np.bool_)
        self._draw_paths(tables)

    def arrays(self):
        return {"states": self.states, "components": self.components, "starts": self.starts}

    def current(self):
        """The hard statistics of the current sample."""
        model = self.model
        n_units, n_states = model.n_units, model.n_states
        n_composite = n_units * n_states
        units = np.bincount(self.states[self.starts] // n_states, minlength=n_units).astype(float)
        occupancy = np.bincount(self.states, minlength=n_composite).astype(float)
        n_columns = n_composite * model.family.n_components
        stats = state_stats(GAUSSIAN, np.empty(0, dtype=np.int32), self.data.features, self.components, n_columns,
                            model.family.n_stats())
        return UnitCounts(units, transition_counts(occupancy, units, n_states), stats)

    def _draw_paths(self, tables):
        """Every utterance's path and components under ``tables``, from generators seeded by a draw of
        the sampler's NumPy generator (so a run resumes exactly from a checkpoint of that generator)."""
        data, model = self.data, self.model
        seed = int(self.rng.integers(2 ** 62))
        for a, b in data.blocks():
            begin, end = data.offsets[a], data.offsets[b]
            x = data.features[begin:end]
            offsets = data.offsets[a:b + 1] - begin
            log_z = np.empty(b - a)
            log_lik, responsibilities = model.family.emission_rows(tables.emission, x)
            chunks = chain_chunks(offsets, log_lik)
            batch_unit_sample(*tables[:3], data.log_start[begin:end], log_lik, offsets, model.n_states, chunks, seed, a,
                              self.states[begin:end], self.starts[begin:end], log_z)
            sample_components(responsibilities, self.states[begin:end], model.family.n_components, offsets,
                              chunks, seed + 1, a, self.components[begin:end])
            bad = np.flatnonzero(~np.isfinite(log_z))
            if bad.size:
                raise ZeroProbabilityError(f"utterance {a + int(bad[0])} has probability zero under every path "
                                           f"of units")

    def sweep(self, iteration):
        model = self.model
        self._draw_paths(model._draw_tables(self.rng, self.current()))
        return model._log_joint(self.current())


# -- the estimator --------------------------------------------------------------------------------------
