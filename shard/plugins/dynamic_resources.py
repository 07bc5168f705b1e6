"""DynamicResources' framework side (common/plugins/dynamic_resources.py says what and why):
a record in the cycle state from PreFilter, and kube v1.37's PostFilter for pods without
claims: nothing to filter or score, nothing to deallocate."""
from __future__ import annotations

import numpy as np

from common.plugins import dynamic_resources
from ..framework import ERROR, SKIP, Plugin, PostFilterResult, Status, unschedulable

STATE = "DynamicResources"


class DynamicResources(Plugin, dynamic_resources.DynamicResources):
    def pre_filter(self, state, pod):
        state[STATE] = True
        return Status(SKIP)

    def filter(self, state, pod, info):
        return None

    def filter_vec(self, state, pod, table, rows):
        return np.ones(len(rows), dtype=bool)

    def pre_score(self, state, pod, rows):
        return Status(SKIP)

    def score(self, state, pod, info) -> int:
        return 0

    def post_filter(self, state, pod, result) -> PostFilterResult:
        out = PostFilterResult()
        out.status = unschedulable() if STATE in state else Status(ERROR, dynamic_resources.NO_STATE)
        return out
