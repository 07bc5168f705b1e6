"""Which binder owns a node: a stable hash of its name, so every process agrees on it
without talking to each other, and a restart changes nothing."""
from __future__ import annotations

import zlib


def binder_for(node_name: str, binders: int) -> int:
    return zlib.crc32(node_name.encode()) % binders if binders > 1 else 0
