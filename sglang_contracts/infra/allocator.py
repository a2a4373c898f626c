"""One arena of the C allocator for the whole process.

glibc gives a thread that allocates while another holds the main arena an arena of its own (up
to eight per core), and what one arena frees the others never reuse. A run reads the project on
one thread while others open the releases and the main thread waits, and each arena keeps its
high-water mark: checking sglang's own tree as the project, the main process peaked at 607 MB
with an arena per thread and at 520 MB with one, in the same time (the threads hold the GIL
while they allocate, so they seldom contend for the allocator).
"""

from __future__ import annotations

import os
import sys

M_ARENA_MAX = -8  # glibc's malloc.h; what MALLOC_ARENA_MAX sets from the environment


def one_malloc_arena() -> bool:
    """Before the process starts its threads: whether the allocator took the setting. A
    MALLOC_ARENA_MAX of the user's own is left as it is; elsewhere than on glibc, nothing."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no C library to ask, or one without mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return mallopt(M_ARENA_MAX, 1) == 1
