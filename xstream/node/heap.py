"""Giving the C heap's free pages back to the system (glibc's malloc_trim).

CPython allocates everything above 512 bytes with malloc. Bulk work that is over in a moment
(recovering a log of tens of MB, restoring a full sync's snapshot, building a long reply,
rebuilding the state after a disk fault) leaves its buffers free inside the heap, where glibc
keeps them resident: measured, a primary restarted on 1.5M entries held 20 MB more than the
one that loaded them, all of it free heap that malloc_trim(0) returned. `trim()` does that,
but only when the heap holds more than TRIM_FREE_BYTES free (mallinfo2, a few microseconds),
so the node calls it every few seconds (server/runner.py) for nothing when nothing is to give
back. Free space in holes smaller than a page (fragmentation between live objects) stays.

Only on glibc (Linux); elsewhere both calls are absent and `trim()` does nothing.

The C library is bound at the first call, not at import: a starting node reaches its first
trim seconds later, and ctypes (~1.5 ms of imports) is not on its way to serving. The symbols
are looked up in the process's own namespace (dlopen(NULL), where the interpreter linked
libc), not through ctypes.util.find_library, which forks `/sbin/ldconfig -p` to find a name.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ctypes

TRIM_FREE_BYTES = 8 << 20  # free heap bytes above which trim() gives whole pages back
# glibc's struct mallinfo2 (2.33+), every field a size_t, in order
MALLINFO2_FIELDS = (
    "arena",  # heap bytes from the system (sbrk)
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",  # bytes in mmapped chunks
    "usmblks",
    "fsmblks",
    "uordblks",  # bytes in use
    "fordblks",  # bytes free
    "keepcost",
)


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library's mallinfo2 and malloc_trim, bound once (None when the process's libc
    has not both: not glibc, or older than 2.33)."""
    import ctypes  # noqa: PLC0415 (at the first trim, not at start-up: see the top)

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in MALLINFO2_FIELDS]

    try:
        libc = ctypes.CDLL(None)
        libc.mallinfo2.restype = MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError, TypeError):
        return None
    return libc


def free_bytes() -> int:
    """Bytes free inside the C heap (all arenas); 0 where it cannot be read."""
    libc = _libc()
    return int(libc.mallinfo2().fordblks) if libc is not None else 0


def trim(min_free: int = TRIM_FREE_BYTES) -> bool:
    """malloc_trim(0) if more than `min_free` bytes are free in the heap; whether it ran."""
    libc = _libc()
    if libc is None or free_bytes() <= min_free:
        return False
    libc.malloc_trim(0)
    return True
