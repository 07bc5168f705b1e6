"""Score helpers shared by plugins (kube-scheduler's DefaultNormalizeScore and
BuildBrokenLinearFunction)."""
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


def _go_div(a: int, b: int) -> int:
    """Integer division truncating toward zero, as Go's `/` on integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def broken_linear(points, p: int) -> int:
    """kube-scheduler's helper.BuildBrokenLinearFunction at utilisation `p`."""
    for i, (u, score) in enumerate(points):
        if p <= u:
            if i == 0:
                return points[0][1]
            u0, s0 = points[i - 1]
            return s0 + _go_div((score - s0) * (p - u0), u - u0)
    return points[-1][1]
