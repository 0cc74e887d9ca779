"""The cyclic garbage collector's policy for a node's process: a state once loaded is set
aside from the collector, and young collections run rarely enough that the objects of one
applied message (or one written batch) die before one runs.

Why: a replica applying a batched ingest allocates GC-tracked objects for every entry (the
engine's StreamIDs of an XAPPEND, one per entry, held in a list until the message is
applied). With CPython's default young threshold (700 allocations) a collection runs several
times per 256 KiB message, each promoting the IDs still alive, so the old generation's
pending count grows by thousands per message and a full collection follows every few dozen
messages: measured on a replica under service_bench.py's ingest (2 cores, load 6-7), 9 full
collections per 300,000 entries, each 40-170 ms of CPU (130-320 ms of wall time), nothing
ever collected, every one of them a pause in applying and in acking. With the young threshold
at YOUNG_THRESHOLD a message's IDs are freed by reference counting before a collection sees
them; with the state frozen (gc.freeze: the permanent generation, which no collection
walks) a full collection, when one runs, walks only what was allocated since. Measured the
same way: 1 full collection (the one `settle` runs) per replica over the same ingest.

    settle()               unfreeze, collect everything, freeze what is left, set the young
                           threshold
    settle(dropped=False)  the same without the unfreeze: nothing frozen that could hold a
                           cycle was dropped since the last settle (a full sync replacing an
                           empty data set), so only what was allocated since is walked

The primary's writes churn alike (the engine's IDs of a pipelined batch): a primary under
300 pipelines of 1,000 XADDs on its RESP port ran 4 full collections (128 ms of CPU, 294
objects collected) with the default thresholds, none with the young threshold here.

`settle` is called where a state has just been put in place (a primary's recovered state
before it serves, a replica's link once its Hello is sent, a full sync installed). It unfreezes
first, so that a state dropped since the last settle (the data set a full sync replaced) is
collected then if it held cycles, not kept frozen forever. Where nothing frozen that could
hold a cycle was dropped (a fresh replica's first full sync: the data set it replaces holds
no key, and its empty keyspaces, the backlog and the users it replaces hold no cycle) the
unfreeze buys nothing and costs a walk of every object the process holds (~30,000 after
start-up, ~20 ms on this 2-core machine, inside a full resync's spawn -> synced time):
`dropped=False` skips it.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 50_000  # allocations of tracked objects between two young collections


def settle(dropped: bool = True) -> None:
    """Collect everything once, set what survives aside from later collections, and make
    young collections rare (the older generations' thresholds are kept). `dropped`: whether
    anything frozen by an earlier settle may have been let go since (then it is unfrozen and
    walked again, so that cycles in it are collected); without it only what is not frozen is
    collected."""
    if dropped:
        gc.unfreeze()
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)
