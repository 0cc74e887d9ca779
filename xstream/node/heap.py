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
"""

from __future__ import annotations

import ctypes
import ctypes.util

TRIM_FREE_BYTES = 8 << 20  # free heap bytes above which trim() gives whole pages back


class _MallInfo2(ctypes.Structure):
    _fields_ = [  # glibc's struct mallinfo2 (2.33+), every field a size_t
        ("arena", ctypes.c_size_t),  # heap bytes from the system (sbrk)
        ("ordblks", ctypes.c_size_t),
        ("smblks", ctypes.c_size_t),
        ("hblks", ctypes.c_size_t),
        ("hblkhd", ctypes.c_size_t),  # bytes in mmapped chunks
        ("usmblks", ctypes.c_size_t),
        ("fsmblks", ctypes.c_size_t),
        ("uordblks", ctypes.c_size_t),  # bytes in use
        ("fordblks", ctypes.c_size_t),  # bytes free
        ("keepcost", ctypes.c_size_t),
    ]


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        libc.mallinfo2.restype = _MallInfo2
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        libc.malloc_trim.restype = ctypes.c_int
    except (OSError, AttributeError, TypeError):  # not glibc, or older than 2.33
        return None
    return libc


_LIBC = _libc()


def free_bytes() -> int:
    """Bytes free inside the C heap (all arenas); 0 where it cannot be read."""
    return int(_LIBC.mallinfo2().fordblks) if _LIBC is not None else 0


def trim(min_free: int = TRIM_FREE_BYTES) -> bool:
    """malloc_trim(0) if more than `min_free` bytes are free in the heap; whether it ran."""
    if _LIBC is None or free_bytes() <= min_free:
        return False
    _LIBC.malloc_trim(0)
    return True
