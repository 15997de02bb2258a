"""STRaP's prioritization of archived witnesses (the order ``lastv2x regress`` re-runs them in).

Each witness's MCAP trace is ingested and reduced by STRaP (``services.strap.pipeline``); RSC
(rarity of the features a segment exercises, Algorithm 2) scores every segment against the frames
of *all* witnesses' traces together, and a witness ranks by its best segment: the witness whose
trace holds the rarest behaviour re-runs first. A witness without a readable trace ranks last
(chronologically). Lives in the composition root: it joins the search archive and STRaP.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from services.search.store import WitnessRow


def strap_order(witnesses: Sequence[WitnessRow]) -> list[str]:
    """Witness ids, rarest trace behaviour first (RSC over the traces); ties keep the given order."""
    from services.strap.pipeline import ingest, reduce_table
    from services.strap.prioritize import rsc_scores

    reduced: list[tuple[int, np.ndarray, np.ndarray]] = []
    for i, w in enumerate(witnesses):
        if not w.trace_path or not Path(w.trace_path).is_file():
            continue
        try:
            table = ingest(w.trace_path, None)
            red = reduce_table(table)
        except Exception:  # noqa: BLE001 - an unreadable trace ranks last, it does not stop the regression
            continue
        if len(red.segments):
            reduced.append((i, np.asarray(red.segment_vectors), np.asarray(table.vectors)))
    widths = {sv.shape[1] for _, sv, _ in reduced}
    score = np.full(len(witnesses), -np.inf)
    if len(widths) == 1:  # one feature schema: rarity over every witness's frames together
        frames = np.concatenate([fv for _, _, fv in reduced])
        for i, sv, _ in reduced:
            score[i] = float(rsc_scores(sv, frames).max())
    else:  # schemas differ: each trace's rarity against its own frames
        for i, sv, fv in reduced:
            score[i] = float(rsc_scores(sv, fv).max())
    order = sorted(range(len(witnesses)), key=lambda i: (-score[i], i))
    return [witnesses[i].id for i in order]


__all__ = ["strap_order"]
