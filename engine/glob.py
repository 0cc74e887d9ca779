"""Redis's glob matcher (stringmatchlen), for KEYS and SCAN MATCH.

`*` any run, `?` any byte, `[abc]` / `[^abc]` / `[a-z]` classes, `\\x` a literal x. An
unterminated class ends at the pattern's end, as in Redis. Matching is on bytes, with two C
quirks kept: range bounds compare as signed chars (`[a-\\xff]` is the range -1..97), and an
empty string matches only an empty pattern (callers treat a lone `*` as "everything").
"""

from __future__ import annotations


def match(pattern: bytes, s: bytes) -> bool:
    if not s:  # stringmatchlen's loop never runs: only the empty pattern matches
        return not pattern
    return _match(pattern, 0, s, 0)


def _signed(c: int) -> int:
    """A byte as x86's signed `char`: range ends and the tested byte compare this way."""
    return c - 256 if c > 127 else c


def _match(p: bytes, pi: int, s: bytes, si: int) -> bool:
    plen, slen = len(p), len(s)
    while pi < plen and si <= slen:
        c = p[pi]
        if c == 42:  # '*'
            while pi + 1 < plen and p[pi + 1] == 42:
                pi += 1
            if pi + 1 == plen:
                return True
            return any(_match(p, pi + 1, s, k) for k in range(si, slen + 1))
        if si == slen:
            return False
        if c == 63:  # '?'
            si += 1
        elif c == 91:  # '['
            pi, ok = _klass(p, pi + 1, s[si])
            if not ok:
                return False
            si += 1
        else:
            if c == 92 and pi + 1 < plen:  # '\\'
                pi += 1
                c = p[pi]
            if c != s[si]:
                return False
            si += 1
        pi += 1
    while pi < plen and p[pi] == 42:
        pi += 1
    return pi == plen and si == slen


def _klass(p: bytes, pi: int, ch: int) -> tuple[int, bool]:
    """Match `ch` against the class starting at `pi`; returns (index of `]`, matched)."""
    plen = len(p)
    negate = pi < plen and p[pi] == 94  # '^'
    if negate:
        pi += 1
    hit = False
    while True:
        if pi >= plen:
            pi -= 1
            break
        c = p[pi]
        if c == 92 and pi + 1 < plen:
            pi += 1
            hit = hit or p[pi] == ch
        elif c == 93:  # ']'
            break
        elif pi + 2 < plen and p[pi + 1] == 45:  # a-z
            lo, hi = sorted((_signed(c), _signed(p[pi + 2])))
            hit = hit or lo <= _signed(ch) <= hi
            pi += 2
        else:
            hit = hit or c == ch
        pi += 1
    return pi, hit != negate
