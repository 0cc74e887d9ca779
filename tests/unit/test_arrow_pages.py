"""pipeline/arrow.py: XNODES pages decoded into columns become RecordBatches of exactly the
declared schema whose rows are XRANGE's entries (IDs near 2**64 as two's complement LONGs,
integer-looking values as given, invalid UTF-8 replaced)."""

from __future__ import annotations

from typing import Any

from tests.unit.enginecalls import call
from xstream.engine import Engine, EngineConfig
from xstream.engine.columns import Columns, decode_node
from xstream.pipeline import arrow

MAX = 2**64 - 1


def _columns(e: Engine, key: str) -> Columns:
    reply = call(e, "XNODES", key, "-", "+", "COUNT", 1_000_000)
    assert isinstance(reply, list) and reply[0] is None
    cols = Columns()
    for i in range(1, len(reply), 2):
        ms, seq = (int(x) for x in reply[i].split(b"-"))
        decode_node(cols, reply[i + 1], ms, seq, 0, 0, MAX, MAX)
    return cols


def _signed(v: int) -> int:
    return v - 2**64 if v >= 2**63 else v


def _expected(e: Engine, key: str) -> list[dict[str, Any]]:
    out = []
    for eid, fv in call(e, "XRANGE", key, "-", "+"):  # type: ignore[union-attr]
        ms, seq = (int(x) for x in eid.split(b"-"))
        pairs = [
            (fv[i].decode("utf-8", "replace"), fv[i + 1].decode("utf-8", "replace"))
            for i in range(0, len(fv), 2)
        ]
        out.append(
            {
                "stream": key,
                "id": eid.decode(),
                "ms": _signed(ms),
                "seq": _signed(seq),
                "fields": pairs,
            }
        )
    return out


def test_batch_rows_equal_xrange() -> None:
    e = Engine(EngineConfig(node_max_entries=4))
    for i in range(1, 30):
        fields = ["user", str(10**11 + i), "n", str(i - 15), "empty", ""]
        if i % 3 == 0:
            fields += ["extra", "x" * (i * 20)]  # other fields: names inline, a long value
        call(e, "XADD", "s", f"{i}-{i % 2}", *fields)
    call(e, "XDEL", "s", "4-0", "5-1")
    b = arrow.batch("s", _columns(e, "s"))
    assert b.schema == arrow.SCHEMA
    assert b.to_pylist() == _expected(e, "s")


def test_ids_above_int64_and_invalid_utf8() -> None:
    e = Engine()
    call(e, "XADD", "s", f"{2**63 + 5}-{MAX}", "f", b"ok\xff", b"\xfe", "v")
    call(e, "XADD", "s", f"{MAX}-0", "f", "07")
    b = arrow.batch("s", _columns(e, "s"))
    assert b.schema == arrow.SCHEMA
    assert b.to_pylist() == _expected(e, "s")
    assert b.column("ms").to_pylist() == [2**63 + 5 - 2**64, -1]


def test_an_empty_page_is_an_empty_batch() -> None:
    b = arrow.batch("s", Columns())
    assert b.num_rows == 0 and b.schema == arrow.SCHEMA
