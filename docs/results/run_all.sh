#!/bin/bash
# The commands that produced docs/results (from the repository root, after
# `cvbayes data fetch brown`). The first two chains ran one after the other; the brown-tag
# unsupervised chain ran beside fig3.10 on the same 2-core machine, so those wall times
# share the machine with another job (the ratios inside one experiment stay comparable).
set -e
cvbayes experiment grid-semi --grid 0.003 0.01 0.03 0.1 0.3 1.0 --iterations 50 --cgs-iterations 200
cvbayes experiment grid-unsup --tagset universal --iterations 200 --cgs-iterations 200
cvbayes experiment fig3.12 --seeds 10 --iterations 50 --cgs-iterations 500
cvbayes experiment fig3.13 --tagset universal --sizes 1000 all --seeds 10 --seeds-all 3 --iterations 200 --cgs-iterations 500
cvbayes experiment fig3.10 --seeds 3 --seeds-all 1 --iterations 50 --cgs-iterations 200 &
(cvbayes experiment grid-unsup --tagset brown --grid 0.01 0.1 1.0 --iterations 200 --cgs-iterations 200 &&
 cvbayes experiment fig3.13 --tagset brown --sizes 1000 --seeds 5 --iterations 200 --cgs-iterations 500)
wait
cvbayes experiment fig3.11

# Text prediction (issue 4), after `cvbayes data fetch ptb` and `cvbayes data fetch texts`;
# run one after the other on the otherwise idle 2-core machine.
cvbayes experiment fig3.17 --seeds 2
cvbayes experiment fig3.15 --passes 20 --iterations 100
cvbayes experiment fig3.16 --passes 20

# q(C_jk > 0) on simulated chains (thesis §5.4.4, Fig. 5.2-5.3); no data needed. Each K gets a
# 600 s budget: fig5.2 stops before the first I x T whose estimated time would pass it, fig5.3
# runs the exact search only where its estimate fits (else the heuristic alone, as the thesis).
nice -n 10 cvbayes experiment fig5.2 --seeds 5
nice -n 10 cvbayes experiment fig5.3 --seeds 5
python -m cvbayes experiment fig5.7 --seeds 10 --out docs/results
# Fig. 5.4-5.6 (after `cvbayes data fetch texts` and `brown`) and Fig. 5.9-5.10 (after `cvbayes data fetch ptb`)
cvbayes experiment fig5.4 --seeds 3
cvbayes experiment fig5.6 --seeds 3
cvbayes experiment fig5.9 --hdp-sizes 1000 5000 all --seeds 3 --hdp-models hmm hdp hdp-beta hmm-beta
cvbayes experiment fig5.10 --passes 5 --seeds 2 --hdp-models hmm hdp hdp-beta hmm-beta

# DP-HMM over speech (thesis §3.7 and chapter 5; Stengel-Eskin 2017, lexicon discovery from speech): the HDP-HMM with Gaussian emissions on
# the 31 TIDIGITS MFCC utterances, after `cvbayes data fetch tidigits` (apt-get, as root). About 9 min
# of wall clock on the shared 2-core machine.
nice -n 10 cvbayes experiment dp-hmm-tidigits --states 60 --iterations 300 --burn-in 100 --seeds 5

# Word alignment (issue 6, thesis §3.8.3), after `cvbayes data fetch nt`, `cvbayes data fetch bible`
# and `pip install eflomal` (the outside reference; not a cvbayes dependency). The recorded
# development.json grew in three --develop runs (each replaces the rows of the algorithms it names)
# as the best priors sat on the grid's edge; the grid in the code is the final one, so this one
# command reruns all of it (it would add VB rows at prior 1e-4, which fail like those at 1e-3).
nice -n 10 cvbayes experiment align-nt --develop
nice -n 10 cvbayes experiment align-nt
nice -n 10 cvbayes experiment align-bible --verse-counts 1000 4000 16000 all

# Dependency grammar induction (issue 17, thesis §4.5.2, Fig. 4.1 right), after `cvbayes data fetch ewt`,
# `htb` and `pud`: the DMV with em/vb/cvi/scvi, 5 seeds, 100 passes; 18.8 min on the shared machine.
cvbayes experiment fig4.1-dmv
python benchmarks/bench_dmv_learners.py

# PCFGs with latent annotations (issue 18, thesis §4.5.3, Fig. 4.2), after `cvbayes data fetch ewt`: EM, VB
# and CVI on UD EWT converted to phrase structure (NOT the PTB). The thesis's protocol (H = 1, 2, 4, 8, best
# of 5, 50 passes, alpha on all of dev), the run kept by training objective; see fig4_2/table.md.
cvbayes experiment fig4.2 --la-select objective
# H = 16 split from each learner's H = 8 and trained pruned, 50 passes, all of test (two processes).
cvbayes experiment fig4.2-split --algorithms cvi,em --out docs/results/fig4_2/split/full_test &
cvbayes experiment fig4.2-split --algorithms vb --out docs/results/fig4_2/split/full_test; wait
# H = 2, every seed's run on test (fig4_2/h2_seeds.py).
for S in 0 1 2 3 4; do
  cvbayes experiment fig4.2 --la-subtypes 2 --la-alphas 1 --seeds 1 --seed $S --la-select objective \
      --la-dev-sentences 20 --out /tmp/h2seeds/s$S --quiet
done
python docs/results/fig4_2/h2_seeds.py /tmp/h2seeds docs/results/fig4_2/h2_seeds

# PCFGs (issue 16, thesis §4.5.1, Fig. 4.1 left), after `cvbayes data fetch morphology`: Hebrew and
# English morphology with em/vb/cvi (30 iterations) and mh (800 sweeps), 3 seeds, to fit 25 min of
# wall clock on the shared 2-core machine (24 min, load average 5-7); then the planted grammar.
cvbayes experiment fig4.1-morphology --seeds 3 --iterations 30 --cgs-iterations 800
cvbayes experiment pcfg-planted --seeds 2 --iterations 50 --cgs-iterations 200

# Acoustic unit discovery (issue 30), after `cvbayes data fetch synthetic-brent` (SYNTHETIC speech) and
# `cvbayes data fetch tidigits`: every learner, 3 seeds, 10 passes, on the first 500 training utterances
# (the same models decode the first 500 of the held-out voices), then TIDIGITS, into docs/results/units/;
# two processes at once took 50 min (the longer) on the shared 2-core machine (load 6-11). The truncation (100) was chosen on
# 300 other training utterances (docs/results/units/tune.py, tuning.jsonl). Then svi's memory at two sizes.
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus synthetic-brent --utterances 500 --algorithms vb,cvi,svi,scvi --seeds 3 --passes 10 --append &
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus synthetic-brent --utterances 500 --algorithms gibbs --seeds 3 --passes 10 --append
wait
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus tidigits --seeds 3 --passes 10 --append
for n in 250 1000; do
  NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus synthetic-brent-test --utterances $n --algorithms svi --seeds 1 --passes 2 --out docs/results/units/memory_$n
done
# The settings chosen on the tuning utterances (docs/results/units/README.md): edge silences trimmed, 4 states a
# unit, 20 passes; one process a seed and group of learners, each into its own folder, then joined.
for s in 0 1 2; do
  NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus synthetic-brent --utterances 500 --trim --states 4 --algorithms cvi,vb --seed $s --seeds 1 --passes 20 --out /tmp/units-runs/cv$s &
  NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus synthetic-brent --utterances 500 --trim --states 4 --algorithms scvi,svi,gibbs --seed $s --seeds 1 --passes 20 --out /tmp/units-runs/st$s &
done
wait
(cd docs/results/units && python merge_runs.py trimmed_states4 /tmp/units-runs/*)

# The fourth round (issue 30): 2 Gaussians a state, gamma 1 and 30 passes chosen on the tuning utterances
# (docs/results/units/README.md, tried.py), one process a learner and seed, two at a time, then joined;
# TIDIGITS at the same settings. About 1.5-7.5 min a process on the shared machine (load 5-11).
for a in cvi vb scvi gibbs svi; do
  for s in 0 1 2; do
    NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus synthetic-brent --utterances 500 --trim --states 4 --components 2 --gamma 1 --algorithms $a --seed $s --seeds 1 --passes 30 --out /tmp/units-runs4/$a$s &
    [ $s = 1 ] && wait
  done
  wait
done
(cd docs/results/units && python merge_runs.py trimmed_states4_passes30 /tmp/units-runs4/*)
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus tidigits --states 4 --components 2 --gamma 1 --algorithms vb,cvi,svi --seed 0 --seeds 3 --passes 30 --out /tmp/units-tid4/a &
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus tidigits --states 4 --components 2 --gamma 1 --algorithms gibbs,scvi --seed 0 --seeds 3 --passes 30 --out /tmp/units-tid4/b
wait
(cd docs/results/units && python merge_runs.py tidigits_states4 /tmp/units-tid4/a /tmp/units-tid4/b)

# The fourth round's settings on 2,000 trimmed utterances, cvi and vb (issue 30; vb seed 2 was stopped
# unfinished): three processes at once, about 444-509 CPU s each
for a in cvi vb; do
  for s in 0 1 2; do
    NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus synthetic-brent --utterances 2000 --trim --states 4 --components 2 --gamma 1 --algorithms $a --seed $s --seeds 1 --passes 30 --quiet --out /tmp/units-runs2000/$a$s &
  done
  wait
done
(cd docs/results/units && python merge_runs.py trimmed_states4_2000 /tmp/units-runs2000/cvi0 /tmp/units-runs2000/cvi1 /tmp/units-runs2000/cvi2 /tmp/units-runs2000/vb0 /tmp/units-runs2000/vb1)

# Issue 30's fifth round: unit starts only at spectral-change candidates (--presegment, Lee and Glass 2012),
# trimmed, 3 states, 2 Gaussians, gamma 1, 30 passes (chosen on the tuning utterances: tried.jsonl,
# candidates.jsonl), every learner and seed its own process, three at a time, then joined
P="cvbayes experiment units --corpus synthetic-brent --trim --states 3 --components 2 --gamma 1 --presegment --seeds 1 --passes 30 --quiet"
for a in cvi vb scvi svi gibbs; do
  for s in 0 1 2; do
    NUMBA_NUM_THREADS=1 nice -n 10 $P --utterances 500 --algorithms $a --seed $s --out /tmp/units-pre/${a}${s}_500 &
  done
  wait
done
for a in cvi vb; do
  for s in 0 1 2; do
    NUMBA_NUM_THREADS=1 nice -n 10 $P --utterances 2000 --algorithms $a --seed $s --out /tmp/units-pre/${a}${s}_2000 &
  done
  wait
done
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment units --corpus tidigits --states 3 --components 2 --gamma 1 --presegment --algorithms vb,cvi,svi,scvi,gibbs --seed 0 --seeds 3 --passes 30 --quiet --out docs/results/units/tidigits_presegment
(cd docs/results/units && python merge_runs.py presegment_500 /tmp/units-pre/*_500 \
   && python merge_runs.py presegment_2000 /tmp/units-pre/*_2000 && python candidates.py > candidates.jsonl \
   && python candidates.py slice >> candidates.jsonl)

# The HMM's default alpha and beta per learner (issue 33), after `cvbayes data fetch ewt`, `brown` and
# `htb`; one after the other on the shared 2-core machine (load 7-20): 32 min and 28 min
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment defaults --seed 0 --seeds 2
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment defaults --check --seed 0 --seeds 2

# The edit channel recovered from Brent's words (issue 31's symbolic stage, the channel only); about
# 50 s each on the shared 2-core machine
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment channel --seeds 3
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment channel --seeds 3 --noise 3 --out docs/results/channel/noise3

# Words segmented through a known random edit channel, with and without a learned channel (issue 31's symbolic
# stage, NoisyWords); about 9 min a seed on the shared 2-core machine
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment noisy-words --utterances 1500 --passes 10 --seeds 3
# The same systems on Buckeye's surface phones (real reductions, no true channel; the learned edits instead of TV),
# its first 1,000 utterances of at most 25 phones (`cvbayes data fetch buckeye`; about 2-4 min a seed); writes
# docs/results/noisy_words/buckeye
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment noisy-words --corpus buckeye --utterances 1000 --max-length 25 --passes 10 --seeds 3
# the same at most 40 phones (the finding on longer utterances; about 10 min a seed)
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment noisy-words --corpus buckeye --utterances 1000 --max-length 40 --passes 10 --seeds 3 \
    --out docs/results/noisy_words/buckeye_max40

# Adaptor grammars with a = 0.5 and a, b learned by empirical Bayes, cvi, all of Brent (issue 29; the other
# wordseg rows' commands are in docs/results/wordseg/table.md); about 160 (unigram) and 250 (colloc) CPU s a run
for s in 0 1 2; do
  NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --grammars unigram --algorithms cvi --iterations 10 --seed $s --seeds 1 --corpora brent --discount 0.5 --estimate-hyperparameters --append
  NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --grammars colloc --algorithms cvi --iterations 6 --seed $s --seeds 1 --corpora brent --discount 0.5 --estimate-hyperparameters --append
done
# cvbayes segment at its defaults on the letters of 500 UD EWT sentences (after `cvbayes data fetch ewt`)
NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --sentences 500
# colloc-syllable (with word-edge syllables) by cvi, one seed, at the defaults and with a, b learned; about 420 CPU s, 1.7 GB each
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --grammars colloc-syllable --algorithms cvi --iterations 6 --seed 0 --seeds 1 --corpora brent --append
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --grammars colloc-syllable --algorithms cvi --iterations 6 --seed 0 --seeds 1 --corpora brent --discount 0.5 --estimate-hyperparameters --append
# Is a = 0.5 with a, b learned a better default for cvi? (issue 29) Off Brent and on HKCanCor with the flags, and
# colloc-syllable's seed 1 both ways; about 650 (EWT), 400 (HKCanCor) and 500-540 (colloc-syllable) CPU s each
NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --sentences 500 --algorithms cvi --options="--discount 0.5 --estimate-hyperparameters"
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram --algorithms cvi --iterations 10 --seeds 1 --discount 0.5 --estimate-hyperparameters --append
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram --algorithms cvi --iterations 10 --seed 1 --seeds 1 --discount 0.5 --estimate-hyperparameters --append
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram --algorithms cvi --iterations 10 --seed 1 --seeds 1 --append
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --grammars colloc-syllable --algorithms cvi --iterations 6 --seed 1 --seeds 1 --corpora brent --append
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --grammars colloc-syllable --algorithms cvi --iterations 6 --seed 1 --seeds 1 --corpora brent --discount 0.5 --estimate-hyperparameters --append
# The cvi rows of Buckeye's first 500 utterances and HKCanCor's colloc rows (issue 29; nothing tuned on either;
# `cvbayes data fetch buckeye` and `cvbayes data fetch hkcancor` first). Buckeye at the defaults was stopped after
# colloc for the machine's time (1,889 CPU s, 1,019 MiB for unigram and colloc) and its colloc-syllable ran alone,
# 3 passes (719 CPU s, 1,404 MiB); with a = 0.5, 3 passes, not 10 (1,383 CPU s, 1,422 MiB for the three grammars).
# HKCanCor colloc: 616 CPU s, 752 MiB (vb and cvi) and 564 CPU s, 647 MiB (a = 0.5)
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora buckeye --utterances 500 --grammars unigram,colloc,colloc-syllable --algorithms cvi --iterations 10 --seeds 1 --append
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora buckeye --utterances 500 --grammars unigram,colloc,colloc-syllable --algorithms cvi --iterations 3 --seeds 1 --discount 0.5 --estimate-hyperparameters --append
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora buckeye --utterances 500 --grammars colloc-syllable --algorithms cvi --iterations 3 --seeds 1 --append
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars colloc --algorithms vb,cvi --iterations 10 --seeds 1 --append
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars colloc --algorithms cvi --iterations 10 --seeds 1 --discount 0.5 --estimate-hyperparameters --append
# b learned with a = 0 (--estimate-hyperparameters alone) under py-cfg's prior, for cvi's default (issue 29;
# docs/results/wordseg/reference_settings.md): about 550, 500, 370 and 760 CPU s
sed 's/ ;eword//g' ../shared/data/brent/br-phonemes.txt > /tmp/brent.txt
NUMBA_NUM_THREADS=1 cvbayes segment /tmp/brent.txt --grammar colloc --algorithm cvi --estimate-hyperparameters --iterations 10 --gold ../shared/data/brent/br-phonemes.txt --json -o /tmp/brent_colloc_b.seg --quiet
for s in 1 2; do  # seeds 1 and 2 of the same (2026-11-27)
  NUMBA_NUM_THREADS=1 nice -n 10 cvbayes segment /tmp/brent.txt --grammar colloc --algorithm cvi --estimate-hyperparameters --iterations 10 --seed $s --gold ../shared/data/brent/br-phonemes.txt --json -o /tmp/brent_colloc_b_s$s.seg --quiet
done
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram --algorithms cvi --iterations 10 --seeds 1 --estimate-hyperparameters --out /tmp/hk_b
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram --algorithms cvi --iterations 10 --seeds 1 --discount 0.5 --estimate-hyperparameters --out /tmp/hk_ab
NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --sentences 500 --algorithms cvi --options="--estimate-hyperparameters"
# issue 29, 2026-11-27: HKCanCor colloc seeds 1-2; colloc-syllable with the grammar's concentrations
# (docs/results/wordseg/syllable_settings.md; the earlier cvi runs at b = 1 were renamed 'colloc-syllable-b1' in
# results.json); colloc mcmc from py-cfg's start with Johnson's table-label move
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars colloc --algorithms vb,cvi --iterations 10 --seed 1 --seeds 2 --append
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora brent --grammars colloc-syllable --algorithms vb --iterations 10 --seeds 3 --append
for s in 0 1 2; do
  NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars colloc-syllable --algorithms cvi --iterations 6 --seed $s --seeds 1 --append
done
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora buckeye --utterances 500 --grammars colloc-syllable --algorithms cvi --iterations 3 --seeds 1 --append
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment wordseg --corpora brent --grammars colloc --algorithms mcmc --cgs-iterations 200 --seeds 3 --discount 0.0001 --concentration 10000 --estimate-hyperparameters --resample-tables --append
# 2026-11-28 (issue 29): every vb row again after vb's grammaton atoms became draws from their base, and mcmc
# from py-cfg's start (segment's new default) on the other grammars and corpora; each into a copy of
# docs/results/wordseg or a folder of its own, then joined by wordseg._appended (the colloc-syllable mcmc seed 0
# ran on its own, seeds 1 and 2 together)
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars unigram,colloc,colloc-syllable --algorithms vb --iterations 10 --seeds 3 --append
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram,colloc --algorithms vb --iterations 10 --seeds 3 --append
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora buckeye --utterances 500 --grammars unigram,colloc,colloc-syllable --algorithms vb --iterations 10 --seeds 1 --append
PYCFG="--discount 0.0001 --concentration 10000 --estimate-hyperparameters --resample-tables"
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars colloc-syllable --algorithms mcmc --cgs-iterations 200 --seeds 1 $PYCFG --append
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars colloc-syllable --algorithms mcmc --cgs-iterations 200 --seed 1 --seeds 2 $PYCFG --append
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars unigram --algorithms mcmc --cgs-iterations 200 --seeds 1 $PYCFG --append
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram,colloc --algorithms mcmc --cgs-iterations 200 --seeds 1 $PYCFG --append
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora buckeye --utterances 500 --grammars unigram,colloc --algorithms mcmc --cgs-iterations 200 --seeds 1 $PYCFG --append
NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --sentences 500 --max-words 10 --algorithms mcmc,vb
NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --sentences 500 --max-words 10 --algorithms mcmc --options="--grammar colloc"
# Lexicon discovery from speech (issue 31): units, then words with and without the noisy channel and with three
# joint rounds, vb and cvi, scored by zerospeech-tde on the synthetic Brent corpus (`cvbayes data fetch
# synthetic-brent`), and word detection on TIDIGITS; each seed ran as its own process (24 min wall a seed, three
# seeds and a probe sharing the two cores) and the runs were joined with docs/results/uld/merge_runs.py
for s in 0 1 2; do
  NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment uld --seed $s --seeds 1 --out /tmp/uld_s$s
done
python docs/results/uld/merge_runs.py docs/results/uld /tmp/uld_s0 /tmp/uld_s1 /tmp/uld_s2
# (the vb rows now published were made again with the n-best joint added, vb only, 7 min a seed; their other
# scores are those of the first run to the last digit; the cvi rows are the first run's, kept by merge_runs.py
# from a copy of its results.json holding only them)
# other 500-utterance slices of the training voices, vb (the table: docs/results/uld/slices.py)
# (utterances 501-1000, 1001-1500 and 6301-6800, the last two the earlier probe's; 4-7 min a run)
for f in 500 1000 6300; do
  for s in 0 1 2; do
    NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment uld --algorithms vb --first $f --seed $s --seeds 1 --out /tmp/uld_first${f}_s$s
  done
done
for f in 500 1000 6300; do python docs/results/uld/merge_runs.py docs/results/uld/first_$f /tmp/uld_first${f}_s*; done
python docs/results/uld/slices.py docs/results/uld/slices.md docs/results/uld docs/results/uld/first_*
NUMBA_NUM_THREADS=1 cvbayes experiment uld --corpus tidigits --seeds 3
# the same at 2,000 utterances, one seed, vb and cvi as two processes (about 20 min each beside a test suite),
# made before the joint system existed
for a in vb cvi; do
  NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment uld --seeds 1 --utterances 2000 --algorithms $a --joint-rounds 0 --out /tmp/uld2000_$a
done
python docs/results/uld/merge_runs.py docs/results/uld/utterances_2000 /tmp/uld2000_vb /tmp/uld2000_cvi
# 2026-11-28 (later): vb from cvi's empty start (one run: it draws nothing); py-cfg's colloc-syllable run longer
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars unigram,colloc,colloc-syllable --algorithms vb --init empty --iterations 10 --seeds 1 --append
python benchmarks/bench_wordseg.py ag --grammar colloc-syllable --iterations 2000    # stopped at sweep 500, then:
python benchmarks/bench_wordseg.py ag --grammar colloc-syllable --iterations 2000 --score-only
python benchmarks/bench_wordseg.py ag --grammar colloc --iterations 2000    # stopped at sweep 340, then:
python benchmarks/bench_wordseg.py ag --grammar colloc --iterations 2000 --score-only
# cvi on the other slices (10-20 min a run, two at a time), merged beside their vb rows
for f in 500 1000 6300; do
  for s in 0 1 2; do
    NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment uld --algorithms cvi --first $f --seed $s --seeds 1 --out /tmp/uld_cvi_first${f}_s$s
  done
  python docs/results/uld/merge_runs.py docs/results/uld/first_$f docs/results/uld/first_$f /tmp/uld_cvi_first${f}_s*
done
# every vb row of the experiment's own slice, the other slices and TIDIGITS again after NoisyWords vb's refresh
# change (eq. N3), merged with copies of the results.json holding only the cvi rows (/tmp/uld_cvi_only*)
for s in 0 1 2; do
  NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment uld --algorithms vb --seed $s --seeds 1 --out /tmp/uld_vb_s$s
done
python docs/results/uld/merge_runs.py docs/results/uld /tmp/uld_cvi_only /tmp/uld_vb_s0 /tmp/uld_vb_s1 /tmp/uld_vb_s2
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment uld --corpus tidigits --algorithms vb --seeds 3 --out /tmp/uld_tidigits_vb
python docs/results/uld/merge_runs.py docs/results/uld/tidigits /tmp/uld_tidigits_cvi_only /tmp/uld_tidigits_vb
for f in 500 1000 6300; do
  for s in 0 1 2; do
    NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment uld --algorithms vb --first $f --seed $s --seeds 1 --out /tmp/uld_vb_first${f}_s$s
  done
  python docs/results/uld/merge_runs.py docs/results/uld/first_$f /tmp/uld_cvi_only_first$f /tmp/uld_vb_first${f}_s*
done
python docs/results/uld/slices.py docs/results/uld/slices.md docs/results/uld docs/results/uld/first_*
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment noisy-words --utterances 1500 --passes 10 --seeds 3
# the 2,000-utterance run's vb rows again, now with both joint systems (one seed, 20 min), beside its cvi rows
NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment uld --seeds 1 --utterances 2000 --algorithms vb --out /tmp/uld2000_vb
python docs/results/uld/merge_runs.py docs/results/uld/utterances_2000 /tmp/uld2000_vb /tmp/uld2000_cvi_only
# issue 29, session 14: cvi's a and b (generalized Stirling likelihood, tables grown with the restaurant), 10 passes;
# each seed into a copy of docs/results, then merged (the same label replaces the runs before the fixes)
for s in 0 1 2; do
  NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars colloc --algorithms cvi \
    --iterations 10 --seed $s --seeds 1 --discount 0.5 --estimate-hyperparameters --append --out /tmp/wsR_$s
done
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram \
  --algorithms cvi --iterations 10 --seeds 1 --discount 0.5 --estimate-hyperparameters --out /tmp/hkR
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora hkcancor --utterances 2000 --grammars unigram \
  --algorithms cvi --iterations 10 --seeds 1 --estimate-hyperparameters --out /tmp/hkb
# vb colloc with b learned, one start
NUMBA_NUM_THREADS=1 cvbayes segment brent.txt --grammar colloc --algorithm vb --iterations 10 --restarts 1 --seed 0 \
  --estimate-hyperparameters --gold br-phonemes.txt --json --quiet -o vb_c_est.seg
# cvi's joint at 2,000 utterances (one seed), merged beside the vb rows
NUMBA_NUM_THREADS=1 nice -n 10 cvbayes experiment uld --seeds 1 --utterances 2000 --algorithms cvi --out /tmp/uld2000_cvi
python docs/results/uld/merge_runs.py docs/results/uld/utterances_2000 /tmp/uld2000_cvi /tmp/uld2000_vb
# cvi colloc, a and b learned from a start near the sampler's learned values (each seed into a copy, then appended)
for s in 0 1 2; do
  NUMBA_NUM_THREADS=1 nice -n 5 cvbayes experiment wordseg --corpora brent --grammars colloc --algorithms cvi \
    --iterations 10 --seed $s --seeds 1 --discount 0.4 --concentration 400 --estimate-hyperparameters --append --out /tmp/ws44_$s
done

# --- session 15 (2026-11-28) ---
# colloc-syllable cvi with a started at 0.4 and a, b learned (one seed), appended
NUMBA_NUM_THREADS=1 cvbayes experiment wordseg --corpora brent --grammars colloc-syllable --algorithms cvi \
  --iterations 6 --seed 0 --seeds 1 --discount 0.4 --estimate-hyperparameters --out /tmp/cs_a04
# the EWT letters row with a learned, after the estimate's correction
NUMBA_NUM_THREADS=1 python benchmarks/bench_segment_defaults.py --sentences 500 --max-words 10 --algorithms cvi \
  --options='--discount 0.5 --estimate-hyperparameters'
# the uld cvi rows with the collapsed n-best joint (the machine's default BLAS threads, as the vb rows ran)
cvbayes experiment uld --utterances 500 --algorithms cvi --seeds 3 --out /tmp/uldcvi
# cvi colloc after the nested leave-out (each seed into its own folder, then appended to docs/results/wordseg)
for s in 0 1 2; do
  OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 nice -n 3 cvbayes experiment wordseg --corpora brent --grammars colloc \
    --algorithms cvi --iterations 10 --seed $s --seeds 1 --discount 0.4 --concentration 400 --estimate-hyperparameters \
    --out /tmp/nest_$s
done
