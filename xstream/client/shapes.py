"""Replies into redis-py's Python values: the RESP2 view of a raw engine reply, then the
response callbacks redis-py 8.1 applies to stream commands (RESP2 protocol, its
`_RedisCallbacks` + `_RedisCallbacksRESP2` tables).

`to_python(raw, decode)` gives what redis-py's RESP2 parser returns before any callback:

    bytes        -> bytes, or str when decoding (strict utf-8 by default, like redis-py)
    Status       -> the same as a bulk string (redis-py reads +OK as b"OK" / "OK")
    int          -> int
    None         -> None          (null bulk)
    NULL_ARRAY   -> None          (null array)
    list         -> list
    ReplyMap     -> flat list [k, v, k, v, ...]   (RESP2 map)
    PairMap      -> list of [k, v] lists          (XREAD / XREADGROUP)

The `parse_*` functions then take that value to the callback's shape. They never look at
the decode setting: like redis-py's, they work on bytes or str alike (dict keys named by the
callback, such as XINFO's, are always str).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from xstream.engine.reply import NULL_ARRAY, PairMap, Reply, ReplyMap

Parse = Callable[[Any], Any]


def to_python(raw: Reply, decode: bool, encoding: str = "utf-8", errors: str = "strict") -> Any:
    """The RESP2 value of an engine reply, as redis-py's parser would hand it to a callback."""
    if isinstance(raw, bytes):
        return raw.decode(encoding, errors) if decode else raw
    if isinstance(raw, str):  # Status (a simple string such as OK) is a str
        return str(raw) if decode else raw.encode(encoding, errors)
    if isinstance(raw, ReplyMap):
        flat: list[Any] = []
        for k, v in raw:
            flat.append(to_python(k, decode, encoding, errors))
            flat.append(to_python(v, decode, encoding, errors))
        return flat
    if isinstance(raw, PairMap):
        return [[to_python(x, decode, encoding, errors) for x in pair] for pair in raw]
    if isinstance(raw, list):  # a plain one (mypy's narrowing brings back ReplyMap, PairMap)
        return [to_python(x, decode, encoding, errors) for x in cast("list[Reply]", raw)]
    if raw is NULL_ARRAY:
        return None
    return raw  # int or None


def str_if_bytes(value: Any) -> Any:
    """redis-py's str_if_bytes: bytes decoded as utf-8 with replacement, anything else as is."""
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value


def identity(response: Any) -> Any:
    return response


def bool_ok(response: Any) -> bool:
    return bool(str_if_bytes(response) == "OK")


def pairs_to_dict(response: Any, decode_keys: bool = False) -> dict[Any, Any]:
    """A dict from a flat [k, v, k, v, ...] list; None -> {} (redis-py's pairs_to_dict)."""
    if response is None:
        return {}
    keys = response[::2]
    if decode_keys:
        keys = [str_if_bytes(k) for k in keys]
    return dict(zip(keys, response[1::2], strict=False))


def parse_stream_list(response: Any, claim: bool = False) -> Any:
    """[[id, [f, v, ...]], ...] -> [(id, {f: v}), ...]; a null entry -> (None, None).

    With `claim` (XREADGROUP ... CLAIM), the extra columns follow: (id, {f: v}, idle, count).
    """
    if response is None:
        return None
    data: list[tuple[Any, ...]] = []
    for r in response:
        if r is None:
            data.append((None, None))
        elif claim:
            data.append((r[0], pairs_to_dict(r[1]), *r[2:]))
        else:
            data.append((r[0], pairs_to_dict(r[1])))
    return data


def parse_xread(response: Any, claim: bool = False) -> list[list[Any]]:
    """XREAD / XREADGROUP: [[stream, [(id, {f: v}), ...]], ...]; nothing -> []."""
    if response is None:
        return []
    return [[r[0], parse_stream_list(r[1], claim)] for r in response]


def parse_xclaim(justid: bool) -> Parse:
    return identity if justid else parse_stream_list


def parse_xautoclaim(justid: bool) -> Parse:
    def parse(response: Any) -> Any:
        if justid:
            return response[1]
        response[1] = parse_stream_list(response[1])
        return response

    return parse


def parse_list_of_dicts(response: Any) -> list[dict[str, Any]]:
    """XINFO GROUPS / CONSUMERS: one dict per flat map, keys str."""
    return [pairs_to_dict(r, decode_keys=True) for r in response]


def parse_xinfo_stream(full: bool) -> Parse:
    def parse(response: Any) -> dict[str, Any]:
        data: dict[str, Any] = pairs_to_dict(response, decode_keys=True)
        if not full:
            first = data.get("first-entry")
            if first is not None and first[0] is not None:
                data["first-entry"] = (first[0], pairs_to_dict(first[1]))
            last = data["last-entry"]
            if last is not None and last[0] is not None:
                data["last-entry"] = (last[0], pairs_to_dict(last[1]))
            return data
        data["entries"] = {eid: pairs_to_dict(entry) for eid, entry in data["entries"]}
        groups = data["groups"]
        if groups and isinstance(groups[0], list):
            data["groups"] = [pairs_to_dict(g, decode_keys=True) for g in groups]
            for g in data["groups"]:
                if g["consumers"] and g["consumers"][0] is not None:
                    g["consumers"] = [pairs_to_dict(c, decode_keys=True) for c in g["consumers"]]
        return data

    return parse


def parse_xpending(response: Any) -> dict[str, Any]:
    """XPENDING summary: {pending, min, max, consumers: [{name, pending: int}]}."""
    consumers = [{"name": n, "pending": int(p)} for n, p in response[3] or []]
    return {
        "pending": response[0],
        "min": response[1],
        "max": response[2],
        "consumers": consumers,
    }


_PENDING_KEYS = ("message_id", "consumer", "time_since_delivered", "times_delivered")


def parse_xpending_range(response: Any) -> list[dict[str, Any]]:
    return [dict(zip(_PENDING_KEYS, r, strict=False)) for r in response]


def parse_set_result(get: bool) -> Parse:
    """SET: True when OK, None when not set (NX/XX); with GET, the old value."""

    def parse(response: Any) -> Any:
        if get:
            return response
        return response and str_if_bytes(response) == "OK"

    return parse


def parse_ping(response: Any) -> bool:
    return bool(str_if_bytes(response) == "PONG")


def _info_value(text: str) -> Any:
    """An INFO value as redis-py types it: int, float, a dict for `a=1,b=2`, a list for
    `a,b`, else the text."""
    if "=" in text:
        out: dict[str, Any] = {}
        for item in filter(None, text.split(",")):
            key, eq, value = item.rpartition("=")
            out[key if eq else value] = _info_value(value) if eq else True
        return out
    if "," in text:
        return [_info_value(v) for v in text.split(",") if v]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_info(response: Any) -> dict[str, Any]:
    """INFO's text as a dict of field -> typed value (redis-py's shape); lines without a
    colon go under "__raw__"."""
    info: dict[str, Any] = {}
    for line in str_if_bytes(response).splitlines():
        if not line or line.startswith("#"):
            continue
        key, colon, value = line.partition(":")
        if colon:
            info[key] = _info_value(value)
        else:
            info.setdefault("__raw__", []).append(line)
    return info


def parse_scan(response: Any) -> tuple[int, list[Any]]:
    cursor, keys = response
    return int(cursor), keys


# Callbacks by command name for `execute_command`, as redis-py applies them to a raw call
# (without per-call options: XCLAIM / XAUTOCLAIM assume no JUSTID, XINFO STREAM no FULL,
# SET no GET, XPENDING the summary form), RESP2 tables.
CALLBACKS: dict[str, Parse] = {
    "XREAD": parse_xread,
    "XREADGROUP": parse_xread,
    "XRANGE": parse_stream_list,
    "XREVRANGE": parse_stream_list,
    "XAUTOCLAIM": parse_xautoclaim(False),
    "XCLAIM": parse_stream_list,
    "XGROUP CREATE": bool_ok,
    "XGROUP DESTROY": bool,
    "XGROUP SETID": bool_ok,
    "XINFO STREAM": parse_xinfo_stream(False),
    "XINFO CONSUMERS": parse_list_of_dicts,
    "XINFO GROUPS": parse_list_of_dicts,
    "XPENDING": parse_xpending,
    "FLUSHALL": bool_ok,
    "SET": parse_set_result(False),
    "SCAN": parse_scan,
    "PING": parse_ping,
    "INFO": parse_info,
}
