"""What a primary accepts from a replication peer: nothing a peer sends may count as an ack
it has not earned, or break anything but its own link.

    Hello.name      1..MAX_NAME printable characters (a label in INFO, logs and metrics)
    Hello.address   "" (a node under election serves no reads yet) or HOST:PORT, PORT in
                    1..65535 (clients dial it for read_from="replica")
    after Hello     Ack only; Ack.offset <= the offset sent on that link (ReplicaLink.sent)

A peer that breaks one of these gets PeerError: the replication service closes its call with
INVALID_ARGUMENT and the message, logs it, and detaches its link (it counts as a departed
replica until forgotten, like any other).
"""

from __future__ import annotations

from xstream.engine.errors import CoreError
from xstream.node.handshake import Hello

__all__ = ["Hello", "PeerError", "check_ack", "check_hello", "split_address"]

MAX_NAME = 256
MAX_PORT = 65535


class PeerError(CoreError, ValueError):
    """A replication peer broke the protocol; the message says how."""


def split_address(address: str) -> tuple[str, int] | None:
    """HOST and PORT of "HOST:PORT" (an IPv6 host in brackets), or None if it is not that."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isascii() or not port.isdigit():
        return None
    number = int(port)
    return (host, number) if 1 <= number <= MAX_PORT else None


def check_hello(name: str, address: str) -> None:
    if not name:
        raise PeerError("hello: empty replica name")
    if len(name) > MAX_NAME or not name.isprintable():
        raise PeerError(f"hello: replica name must be 1..{MAX_NAME} printable characters")
    if address and split_address(address) is None:
        shown = address[:80] + ("..." if len(address) > 80 else "")
        raise PeerError(f"hello: replica address {shown!r} is not HOST:PORT (port 1..{MAX_PORT})")


def check_ack(offset: int, sent: int) -> None:
    if offset > sent:
        raise PeerError(f"ack for offset {offset} beyond the {sent} sent to this replica")
