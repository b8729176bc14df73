"""Symmetrisation of two directional alignments (Och and Ney 2003; Koehn et al. 2003).

Both inputs are in (source_i, target_j) orientation: ``forward`` from the
aligner that links every target word to at most one source word, ``reverse``
from the aligner trained on the swapped corpus, its links flipped back.

grow-diag-final-and follows Koehn's description (Statistical Machine
Translation, 2010, §4.5.3; the Moses ``grow-diag-final-and`` heuristic), with
English = target (e) and foreign = source (f):

1. start from the intersection;
2. GROW-DIAG: visit the grid in order (e = 0..J-1, then f = 0..I-1); at an
   aligned point, add each neighbour (the 8 around it, in the order
   (-1,0), (0,-1), (1,0), (0,1), (-1,-1), (-1,1), (1,-1), (1,1) as (de, df))
   that lies in the union and whose target or source word is still
   unaligned; points added ahead of the visit are visited in the same pass;
   repeat passes until one adds nothing;
3. FINAL-AND, first with the forward links, then with the reverse: add each
   link (in grid order) whose target and source words are both unaligned.
"""
from __future__ import annotations

from bisect import bisect_left

__all__ = ["SYMMETRIZATIONS", "symmetrize"]

SYMMETRIZATIONS = ("forward", "reverse", "intersection", "union", "grow-diag-final-and")

# (d target, d source), Koehn's order
NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def symmetrize(forward_links, reverse_links, method: str) -> list[set[tuple[int, int]]]:
    """Combine two alignments of the same pairs.

    Parameters
    ----------
    forward_links, reverse_links : list of set of (source_i, target_j)
    method : {"forward", "reverse", "intersection", "union", "grow-diag-final-and"}

    Returns
    -------
    list of set of (source_i, target_j), new sets
    """
    if method not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {method!r}; choose from {', '.join(SYMMETRIZATIONS)}")
    if len(forward_links) != len(reverse_links):
        raise ValueError(f"{len(forward_links)} forward but {len(reverse_links)} reverse alignments")
    combine = {
        "forward": lambda f, r: set(f),
        "reverse": lambda f, r: set(r),
        "intersection": lambda f, r: set(f) & set(r),
        "union": lambda f, r: set(f) | set(r),
        "grow-diag-final-and": _grow_diag_final_and,
    }[method]
    return [combine(f, r) for f, r in zip(forward_links, reverse_links)]


def _grow_diag_final_and(forward, reverse) -> set[tuple[int, int]]:
    forward, reverse = set(forward), set(reverse)
    union = forward | reverse
    alignment = forward & reverse
    source_aligned = {i for i, _ in alignment}
    target_aligned = {j for _, j in alignment}

    def add(i, j):
        alignment.add((i, j))
        source_aligned.add(i)
        target_aligned.add(j)

    grew = True
    while grew:
        grew = False
        # grid order: target position, then source position
        visit = sorted((j, i) for i, j in alignment)
        k = 0
        while k < len(visit):
            j, i = visit[k]
            for dj, di in NEIGHBOURS:
                nj, ni = j + dj, i + di
                if (ni, nj) in union and (nj not in target_aligned or ni not in source_aligned):
                    add(ni, nj)
                    grew = True
                    at = bisect_left(visit, (nj, ni))
                    visit.insert(at, (nj, ni))
                    if at <= k:
                        k += 1
            k += 1
    for links in (forward, reverse):
        for j, i in sorted((j, i) for i, j in links):
            if j not in target_aligned and i not in source_aligned:
                add(i, j)
    return alignment
