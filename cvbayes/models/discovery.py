"""`LexiconDiscovery`: the words of a spoken corpus, each token with its times and its word type, by the three
layers of seed 004 (acoustic units, a noisy channel and an adaptor grammar; Lee, O'Donnell and Glass 2015)
learned one after the other.

The layers
----------
1. `AcousticUnits` (Lee and Glass 2012's Dirichlet process of left-to-right HMM units,
   `cvbayes.models.units`) fitted to the feature frames, with units starting only at spectral-change
   candidates by default (``presegment``);
2. every utterance read as its most probable unit string (Viterbi, `AcousticUnits.decode`), a unit written as
   its number;
3. the words over those strings:

   * ``channel=True``: `NoisyWords`, the unigram (or the colloc: `cvbayes.models.noisy_colloc`, its cvi
     `cvbayes.models.noisy_colloc_cvi`) adaptor grammar whose every word token is realised through a learned edit
     channel (Lee et al. 2015, §3).  A token's word type is its underlying word (`NoisyWords.decode`), so that
     tokens read as different unit strings (a unit substituted, inserted or dropped) are one type; a token the
     base reads better than any cached word is a type of its own unit string.
   * ``channel=False``: `AdaptorGrammar` (``grammar`` "unigram" or "colloc") on the unit strings; a token's
     type is its unit string.

``algorithm`` ("vb" or "cvi") is every layer's learner.  With ``joint_rounds=0`` this is the *pipeline* of Lee
et al. (2015)'s comparison, 1-best units into the grammar, with and without the channel: the layers are fitted
once each, in turn, and the words do not change which units are read.

Joint rounds
------------
With the channel, ``joint_rounds`` rounds (default 0) follow the pipeline, in which the words change the units:

1. every word token's underlying word (`NoisyWords.decode`) is aligned to the units read at its span by the
   channel's most probable edit sequence (`NoisyWords.align`), and every substituted unit is rewritten as the
   underlying symbol it realises (inserted units and the pauses are kept): the units as the word layer hears
   them, one reading an utterance;
2. the unit layer is re-estimated on that reading (`AcousticUnits.fit_reading`: the occurrences' units and
   boundaries fixed, their states and mixture components latent, one E-step under the posterior-mean tables);
3. every utterance is decoded again under the new units, and the word layer is fitted anew to the strings.

So a unit that the channel learns to read as another symbol of the same words is trained on that symbol's
frames, and the tokens of one word come to be heard as one unit string.  This is Lee et al.'s joint learning
with every layer's uncertainty between rounds replaced by its best reading (a Viterbi-style coordinate scheme,
as in hard EM): it is not the variational joint objective over a unit lattice of issue 31 (items 2-3), and no
single objective is shown to rise from round to round.  `cvbayes experiment uld` measures it against the
pipeline: three rounds beat it on every seed on the experiment's 500 utterances (token F1 28.4 against 25.8 %
by cvi, 20.2 against 18.4 % by vb, 3 seeds), but not on two other 500-utterance slices of the same voices
(cvi 23.5 -> 21.3 % and 24.7 -> 23.2 %, seed 0), so the rounds are off by default.  The reading is hard, and
takes the underlying symbol over the acoustics, because the units' frame likelihoods separate the units by tens
of nats an occurrence (a median of 81 nats between the best unit and the next, cvi, 300 utterances of synthetic
Brent), far more than any channel probability: a posterior over the units given the words would be the acoustic
one, and the words would change nothing (an n-best rescoring by the word layer read 1.08 distinct unit strings
an utterance among 11 candidates).

The n-best joint
----------------
``joint="nbest"`` (vb) replaces the hard rounds by ``joint_rounds`` rounds of coordinate ascent on one ELBO of
both layers (`cvbayes.models.discovery_nbest`, eq. J1): every utterance gets a fixed set of at most ``n_best``
candidate readings of the units (the Viterbi reading and the readings most often drawn among ``n_draws`` paths
from the unit layer's posterior), each round weighs them by q(k | u) ∝ exp(acoustic log Z + word chart log Z)
and updates both layers' q from the weighted statistics; the ELBO never decreases (NoisyWords' grammaton held
fixed).  ``readings_``, ``lexicon_`` and ``tokens_`` are then those of every utterance's most probable candidate.
`cvbayes experiment uld` measures it (3 rounds): level with the pipeline on four 500-utterance slices of the
synthetic Brent training voices (token F1 18.8 against 18.4 % on the experiment's, 3 seeds; the hard rounds 20.2),
as an utterance has 1.2-1.3 candidates and 1.02-1.06 distinct spoken strings with q(k | u) > 0.01.  With
``algorithm="cvi"`` the rounds are its collapsed counterpart (`cvbayes.models.discovery_nbest_cvi`): both layers'
parameters integrated out, every utterance in turn taken out of both layers' collapsed counts, its q(k | u) ∝
exp(A^-u + W^-u) from the log Z of its candidates under each layer's leave-one-out predictive, and its
q-weighted statistics put back; ``joint_objective_`` is then every round's sum of leave-one-out log predictives,
which need not rise.

Pauses: the units heard mostly at utterance edges (`pause_units`) are taken for silence, and those at an
utterance's edges are left out of its words (``trim_pauses``); an utterance of pauses alone has no words.

Times: unit occurrences start and end at frames; a word token spans from its first unit's first frame to its
last unit's end frame (exclusive), so that the tokens of an utterance tile its frames between the pauses.
"""
from __future__ import annotations

import copy
import warnings
from collections import Counter
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from ..chains.edits import DELETE, INSERT
from ..checkpoints import NO_CHECKPOINT, Checkpoint, fingerprint, run_identity
from ..metrics.speech import boundary_time
from .adaptor.model import AdaptorGrammar
from .discovery_nbest import NbestJoint, candidate_readings
from .discovery_nbest_cvi import CollapsedNbestJoint
from .discovery_nbest_shards import ShardedNbestJoint
from .files import read_model, write_model
from .noisy_words import NoisyWords
from .units import DEFAULT_UNITS, AcousticUnits, Segments

LEARNERS = ("vb", "cvi")
GRAMMARS = ("unigram", "colloc")
SAVE_FORMAT = "cvbayes-lexicon-discovery-1"
PAUSE_SHARE = 0.5
PAUSE_LEAST = 0.1
JOINT_ROUNDS = 0
JOINTS = ("hard", "nbest")
N_BEST = 5
N_DRAWS = 20


class Token(NamedTuple):
    """One discovered word token: its word type (a key of ``lexicon_``: a unit string), its first frame
    ``start`` and end frame ``stop`` (exclusive), and the units read there."""

    word: tuple
    start: int
    stop: int
    units: tuple


class LexiconDiscovery:
    """Words discovered in speech: acoustic units, then words over them (module notes).

    Parameters
    ----------
    grammar : {"unigram", "colloc"}
        The word layer's adaptor grammar; "colloc" with the channel has no n-best joint (hard rounds only).
    channel : bool
        Read every word token through a learned edit channel (`NoisyWords`); default True.
    algorithm : {"vb", "cvi"}
        Every layer's learner.
    n_units : int
        Truncation of the units' Dirichlet process.
    presegment : bool
        Units begin only at spectral-change candidates (assumes the first 13 feature dimensions are static
        cepstra, as the speech front end's are).
    trim_pauses : bool
        Leave the pause units at utterance edges out of the words (`pause_units`; module notes).
    joint_rounds : int
        With the channel: rounds of the joint fit ``joint``; 0 (default): the pipeline.
    joint : {"hard", "nbest"}
        "hard" (default): rounds in which the words' reading re-estimates the units and the words are fitted
        again (module notes, Joint rounds); "nbest": both layers learned together over a fixed set of candidate
        readings of every utterance (vb: rounds of coordinate ascent on one ELBO, `cvbayes.models.discovery_nbest`;
        cvi: its collapsed counterpart, `cvbayes.models.discovery_nbest_cvi`).
    n_best, n_draws : int
        ``joint="nbest"``: the most candidate readings an utterance, the Viterbi reading and the readings most
        often drawn among ``n_draws`` paths from the unit layer's posterior.
    unit_iter, n_iter : int
        Passes of the unit layer and of the word layer.
    unit_params, word_params : dict, optional
        Further constructor arguments of `AcousticUnits` and of the word model (`NoisyWords` or
        `AdaptorGrammar`).
    random_state : int
        Seeds both layers.

    Attributes
    ----------
    units_ : the fitted `AcousticUnits`;  words_ : the fitted `NoisyWords` or `AdaptorGrammar`.
    pause_units_ : list of int, the units taken for pauses at utterance edges (`pause_units`).
    lexicon_ : dict of word type (tuple of unit numbers as str) to its tokens in the training utterances, most
        frequent first (``joint="nbest"``: in the readings ``readings_``).
    tokens_ : every training utterance's word tokens (as `discover` gives them; ``joint="nbest"``: in the readings
        ``readings_``).
    readings_ : ``joint="nbest"``: every training utterance's most probable candidate reading (a `Segments`).
    candidates_ : ``joint="nbest"``: every training utterance's candidate readings (a list of `Segments`).
    reading_posterior_ : ``joint="nbest"``: every training utterance's q(k | u) over its candidates (an array).
    joint_objective_ : ``joint="nbest"``: vb, the joint ELBO before every round and after the last (eq. J1 of
        `cvbayes.models.discovery_nbest`); cvi, every round's leave-one-out objective
        (`cvbayes.models.discovery_nbest_cvi`).
    """

    def __init__(self, grammar="unigram", channel=True, algorithm="cvi", n_units=DEFAULT_UNITS, presegment=True,
                 trim_pauses=True, joint_rounds=JOINT_ROUNDS, joint="hard", n_best=N_BEST, n_draws=N_DRAWS,
                 unit_iter=30, n_iter=10, unit_params=None, word_params=None, random_state=0):
        if grammar not in GRAMMARS:
            raise ValueError(f"unknown grammar {grammar!r}; choose {' or '.join(GRAMMARS)}")
        if algorithm not in LEARNERS:
            raise ValueError(f"unknown algorithm {algorithm!r}; choose {' or '.join(LEARNERS)}")
        if channel and grammar == "colloc" and joint == "nbest" and joint_rounds:
            raise ValueError("joint='nbest' carries the unigram grammar's q only; use joint='hard' with "
                             "grammar='colloc'")
        if isinstance(joint_rounds, bool) or not isinstance(joint_rounds, (int, np.integer)) or joint_rounds < 0:
            raise ValueError(f"joint_rounds must be an integer >= 0, got {joint_rounds!r}")
        if joint_rounds and not channel:
            raise ValueError("joint rounds read the units through the channel's underlying words; they need "
                             "channel=True")
        if joint not in JOINTS:
            raise ValueError(f"unknown joint {joint!r}; choose {' or '.join(JOINTS)}")
        for name, value in (("n_best", n_best), ("n_draws", n_draws)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        self.grammar, self.channel, self.algorithm = grammar, bool(channel), algorithm
        self.joint_rounds, self.joint, self.n_best, self.n_draws = int(joint_rounds), joint, int(n_best), int(n_draws)
        self.n_units, self.presegment, self.trim_pauses = n_units, bool(presegment), bool(trim_pauses)
        self.unit_iter, self.n_iter = unit_iter, n_iter
        self.unit_params, self.word_params = dict(unit_params or {}), dict(word_params or {})
        self.random_state = random_state

    def get_params(self) -> dict[str, Any]:
        return {"grammar": self.grammar, "channel": self.channel, "algorithm": self.algorithm,
                "n_units": self.n_units, "presegment": self.presegment, "trim_pauses": self.trim_pauses,
                "joint_rounds": self.joint_rounds, "joint": self.joint, "n_best": self.n_best,
                "n_draws": self.n_draws, "unit_iter": self.unit_iter, "n_iter": self.n_iter,
                "unit_params": self.unit_params, "word_params": self.word_params, "random_state": self.random_state}

    def _word_model(self):
        if self.channel:
            return NoisyWords(grammar=self.grammar, algorithm=self.algorithm, n_iter=self.n_iter,
                              random_state=self.random_state, **self.word_params)
        return AdaptorGrammar(self.grammar, algorithm=self.algorithm, n_iter=self.n_iter,
                              random_state=self.random_state, **self.word_params)

    def fit(self, features, *, units=None, client=None, n_shards=None, progress=False, checkpoint=None,
            checkpoint_every=1) -> LexiconDiscovery:
        """Fit the units to ``features`` (a list of (frames, dimensions) arrays, one an utterance), then the
        words to their unit strings.  ``units``: a fitted `AcousticUnits` to take as the unit layer instead (to
        compare word layers on the same units).  ``client``, ``n_shards`` (vb only): a dask.distributed.Client
        on whose workers every layer's E-steps run, each on its shard: the unit layer's on whole utterances, the
        word layer's (`NoisyWords`, or the channel-free grammar) on whole unit strings (utterance types), and the
        n-best joint rounds' (`cvbayes.models.discovery_nbest_shards`); the updates of q run in this process.
        ``checkpoint``: each layer saves its run to ``<checkpoint>.units``, ``<checkpoint>.words`` and one file a
        hard joint round (`checkpoint_parts`; `cvbayes.BayesModel.fit`), the n-best joint its rounds to
        ``<checkpoint>.nbest`` (`cvbayes.models.discovery_nbest`, Checkpoints), every ``checkpoint_every`` passes or
        rounds, so the same call resumes where it stopped: a finished hard round's words are fitted again (the
        rounds are deterministic), the interrupted one resumes; the n-best joint resumes after its last saved
        round."""
        if client is not None and self.algorithm != "vb":
            raise ValueError(f"algorithm {self.algorithm!r} does not run on shards; client= takes vb")
        sharded = {} if client is None else {"client": client, "n_shards": n_shards}
        if units is None:
            units = AcousticUnits(n_units=self.n_units, algorithm=self.algorithm, n_iter=self.unit_iter,
                                  presegment=self.presegment, random_state=self.random_state, **self.unit_params)
            units.fit(features, progress=progress, **sharded,
                      **layer_checkpoint(checkpoint, "units", checkpoint_every))
        # the joint rounds re-estimate the units: a unit layer passed in stays as it was
        self.units_ = copy.deepcopy(units) if self.joint_rounds else units
        word_layers = [part for part in self.checkpoint_parts() if part.startswith("words")]
        segments = self._fit_words(features, progress, sharded,
                                   layer_checkpoint(checkpoint, word_layers[0], checkpoint_every))
        if self.joint == "nbest" and self.joint_rounds:
            segments = self._fit_nbest(features, checkpoint, checkpoint_every, sharded)
        for layer in word_layers[1:]:
            self.units_.fit_reading(features, self._lexical_reading(segments))
            segments = self._fit_words(features, progress, sharded,
                                       layer_checkpoint(checkpoint, layer, checkpoint_every))
        self.tokens_ = self._tokens(segments)
        self.lexicon_ = type_counts(self.tokens_)
        return self

    def checkpoint_parts(self) -> list[str]:
        """The layers whose runs a fit with ``checkpoint`` saves, each to ``<checkpoint>.<part>``: the units, the
        words, and the words of every hard joint round or the n-best joint's rounds ("nbest")."""
        if self.joint == "nbest":
            return ["units", "words"] + ["nbest"] * bool(self.joint_rounds)
        return ["units", "words"] + [f"words{r}" for r in range(1, self.joint_rounds + 1)]

    def _fit_words(self, features, progress, sharded, checkpointing):
        """Decode the units, take the pauses and fit the word layer to the spoken unit strings; returns the
        decoded units."""
        segments = self.units_.decode(features)
        self.pause_units_ = pause_units(segments) if self.trim_pauses else []
        strings = [string for _, string in spoken(segments, self.pause_units_) if string]
        if not strings:
            raise ValueError("every utterance decodes to pause units only; no words to learn")
        self.words_ = self._word_model().fit(strings, progress=progress, **sharded, **checkpointing)
        return segments

    def _fit_nbest(self, features, checkpoint=None, checkpoint_every=1, sharded=None):
        """The joint fit over candidate readings (`cvbayes.models.discovery_nbest`), its rounds saved to
        ``<checkpoint>.nbest`` and resumed from it, their E-steps on a client's shards with ``sharded``
        (`cvbayes.models.discovery_nbest_shards`); returns every utterance's most probable candidate."""
        candidates = candidate_readings(self.units_, features, self.n_best, self.n_draws, self.random_state)
        pauses = self.pause_units_

        def speak(reading):
            return spoken([reading], pauses)[0][1]

        if self.algorithm == "vb":
            joint_class = partial(ShardedNbestJoint, **sharded) if sharded else NbestJoint
            joint = joint_class(self.units_, self.words_, features, candidates, speak)
        else:
            joint = CollapsedNbestJoint(self.units_, self.words_, features, candidates, speak, self.random_state)
        rounds = NO_CHECKPOINT if checkpoint is None else Checkpoint(
            f"{checkpoint}.nbest", checkpoint_every, run_identity(
                "LexiconDiscovery.nbest", self.algorithm, self.joint_rounds, self.random_state, features,
                params=self.get_params(), start=fingerprint(*joint.start())))
        joint.fit(self.joint_rounds, rounds)
        self.words_.adopt(joint.learner)
        self.joint_objective_ = list(joint.objective)
        self.candidates_ = joint.candidates
        bounds = np.cumsum([len(readings) for readings in joint.candidates])[:-1]
        self.reading_posterior_ = np.split(joint.posterior, bounds)
        self.readings_ = joint.best_readings()
        return self.readings_

    def _lexical_reading(self, segments):
        """Every utterance's units as the word layer hears them (module notes, Joint rounds, step 1)."""
        kept = spoken(segments, self.pause_units_)
        said = [i for i, (_, string) in enumerate(kept) if string]
        readings = [decoded.units.copy() for decoded in segments]
        places, pairs = [], []
        for i, words in zip(said, self._words([kept[i][1] for i in said])):
            for word, a, _, surface in words:
                if word != surface:
                    places.append((i, kept[i][0] + a))
                    pairs.append((word, surface))
        for (i, first), (word, _), edits in zip(places, pairs, self.words_.align(pairs)):
            for x, y in edits:
                if x != DELETE and y != INSERT:
                    readings[i][first + y] = int(word[x])
        return [Segments(units, decoded.starts, decoded.ends) for units, decoded in zip(readings, segments)]

    def discover(self, features) -> list[list[Token]]:
        """Every utterance's word tokens (frames, types) under the fitted layers."""
        self._check_fitted()
        return self._tokens(self.units_.decode(features))

    def _tokens(self, segments):
        kept = spoken(segments, self.pause_units_)
        said = [i for i, (_, string) in enumerate(kept) if string]
        out = [[] for _ in segments]
        for i, utterance in zip(said, self._words([kept[i][1] for i in said])):
            decoded, first = segments[i], kept[i][0]
            out[i] = [Token(word, int(decoded.starts[first + a]), int(decoded.ends[first + b - 1]), surface)
                      for word, a, b, surface in utterance]
        return out

    def _words(self, strings):
        """Each utterance's (type, first unit, end unit, units read) a word; an utterance with a unit the word
        layer never saw is one word, with a warning (as `AdaptorGrammar.segment` does)."""
        if not self.channel:
            out = []
            for words in self.words_.segment(strings):
                ends = np.cumsum([len(w) for w in words])
                out.append([(w, int(b) - len(w), int(b), w) for w, b in zip(words, ends)])
            return out
        known = set(self.words_.symbols_)
        readable = [i for i, s in enumerate(strings) if known.issuperset(s)]
        out = [[(tuple(s), 0, len(s), tuple(s))] for s in strings]
        for i, words in zip(readable, self.words_.decode([strings[i] for i in readable])):
            out[i] = [(w.underlying or w.surface, w.start, w.stop, w.surface) for w in words]
        if len(readable) < len(strings):
            warnings.warn(f"{len(strings) - len(readable)} utterance(s) hold a unit the word layer never saw and "
                          "are returned as one word", stacklevel=3)
        return out

    def _check_fitted(self):
        if not hasattr(self, "words_"):
            raise RuntimeError("this LexiconDiscovery is not fitted yet; call fit first")

    # -- files ---------------------------------------------------------------------------------------------
    def save(self, path):
        """Write both layers and the lexicon to one ``.npz`` file (`cvbayes.models.files`); ``load`` reads it."""
        self._check_fitted()
        meta, arrays = {"format": SAVE_FORMAT, "params": self.get_params(), "pause_units": self.pause_units_,
                        "lexicon": [[list(w), n] for w, n in self.lexicon_.items()]}, {}
        for part, model in (("units", self.units_), ("words", self.words_)):
            meta[part], saved = model.archive()
            arrays.update({f"{part}.{name}": value for name, value in saved.items()})
        write_model(path, meta, arrays)

    @classmethod
    def load(cls, path) -> LexiconDiscovery:
        meta, arrays = read_model(path, SAVE_FORMAT)
        model = cls(**meta["params"])

        def part(name):
            return {key[len(name) + 1:]: value for key, value in arrays.items() if key.startswith(name + ".")}

        model.units_ = AcousticUnits.from_archive(meta["units"], part("units"), path)
        words = NoisyWords if model.channel else AdaptorGrammar
        model.words_ = words.from_archive(meta["words"], part("words"), path)
        model.lexicon_ = {tuple(w): n for w, n in meta["lexicon"]}
        model.pause_units_ = list(meta["pause_units"])
        return model


def layer_checkpoint(checkpoint, layer, every):
    """`BayesModel.fit`'s checkpoint arguments for one layer: its own file beside ``checkpoint``."""
    return {} if checkpoint is None else {"checkpoint": f"{checkpoint}.{layer}", "checkpoint_every": every}


def unit_string(segments) -> list[str]:
    """An utterance's decoded units as the word layer's symbols: each unit's number."""
    return [str(u) for u in segments.units.tolist()]


def pause_units(segments, share=PAUSE_SHARE, least=PAUSE_LEAST) -> list[int]:
    """The units taken for pauses: those of which at least ``share`` of the occurrences begin or end an
    utterance, and that begin or end at least ``least`` of the utterances (and two).  Utterances cut from
    speech at pauses begin and end in silence (the synthetic corpus keeps 5 frames of it,
    `cvbayes.speech.load_corpus`'s trim), which a word would otherwise absorb: gluing a pause to the first or
    last word makes two types of one word and a token that the evaluators transcribe with a silence.  Several
    units can share the pauses (one a voice, say), and a unit of speech that often begins utterances is still
    mostly heard inside them."""
    edges, total = Counter(), Counter()
    for decoded in segments:
        units = decoded.units.tolist()
        total.update(units)
        edges.update(units[:1] + units[-1:] if len(units) > 1 else units)
    return sorted(u for u, n in edges.items() if n >= share * total[u] and n >= max(least * len(segments), 2))


def spoken(segments, pauses) -> list[tuple[int, list[str]]]:
    """Each utterance's (first unit kept, unit string) without the units of ``pauses`` at its edges."""
    pauses = set(pauses)
    out = []
    for decoded in segments:
        string = unit_string(decoded)
        first, end = 0, len(string)
        while first < end and int(string[first]) in pauses:
            first += 1
        while end > first and int(string[end - 1]) in pauses:
            end -= 1
        out.append((first, string[first:end]))
    return out


def type_counts(tokens) -> dict[tuple, int]:
    """Word type -> its tokens, most frequent first (ties by the type's units, for a stable order)."""
    counts = Counter(t.word for utterance in tokens for t in utterance)
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def word_classes(lexicon, names, tokens, first_frames=None):
    """{class number: [(utterance, start s, end s)]}: the word types numbered from 1 in ``lexicon``'s order (a
    type the training utterances did not have numbered after them); a token's times are those of the frame
    boundaries at its edges (`cvbayes.metrics.speech.boundary_time`), its utterance's frames starting at
    ``first_frames`` (0 each by default)."""
    number = {word: k for k, word in enumerate(lexicon, start=1)}
    classes = {}
    for i, (name, utterance) in enumerate(zip(names, tokens)):
        first = 0 if first_frames is None else int(first_frames[i])
        for token in utterance:
            k = number.setdefault(token.word, len(number) + 1)
            start, stop = boundary_time([token.start, token.stop], first_frame=first)
            classes.setdefault(k, []).append((name, float(start), float(stop)))
    return dict(sorted(classes.items()))
