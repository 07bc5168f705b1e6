"""Score helpers shared by plugins (kube-scheduler's DefaultNormalizeScore)."""
from __future__ import annotations

import numpy as np

MAX_NODE_SCORE = 100


def default_normalize(scores: np.ndarray, reverse: bool = False) -> None:
    """Scale so the highest score becomes 100 (integer division); `reverse` flips it."""
    if not len(scores):
        return
    top = int(scores.max())
    if top == 0:
        if reverse:
            scores[:] = MAX_NODE_SCORE
        return
    scores *= MAX_NODE_SCORE
    scores //= top
    if reverse:
        np.subtract(MAX_NODE_SCORE, scores, out=scores)
