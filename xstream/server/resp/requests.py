"""Request parsing for the RESP server: which parser a connection gets.

codec.RespParser reads requests exactly as Redis's networking.c does (multibulk and inline,
Redis's protocol error texts and limits).
"""

from __future__ import annotations

from .codec import RespParser


def new_parser(max_bulk_len: int) -> RespParser:
    """A request parser bounded by proto-max-bulk-len."""
    return RespParser(max_bulk_len)
