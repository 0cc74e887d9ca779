"""Permission rules, sans I/O: what Redis's ACL selectors hold (src/acl.c's ACLSetSelector).

    Selector           a set of permissions: command rules, key patterns, channel patterns
                       (a user's own rules are its root selector; `(...)` adds more)
    perm_rule(sel, op) apply one rule of commands, keys or channels; AclError if it does not
    selector(op)       a new selector from `(rule rule ...)`
    merge_selectors    ACL SETUSER's and the ACL file's words with a `(...)` split over several
                       words joined back

Command rules are kept as Redis 7.2+ does: a base (`+@all` or `-@all`) and the rules given
since, in order (a rule naming the same target again moves to the end); whether a command
is allowed is replayed once into `allowed` (`+xgroup` covers every `xgroup|sub`). `+cmd|arg`
for a command without subcommands allows it with that first argument only (Redis allows
it, deprecated; any later rule naming the command drops it). Key patterns carry R, W or RW
(a pattern given again gains the permissions); `~*`/`allkeys` and `&*`/`allchannels` are
"everything", after which a pattern is refused. Error texts are Redis's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xstream.engine import glob
from xstream.engine.errors import CoreError

from . import aclcats

_PATTERN_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns"
)
_CHANNEL_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels"
)


UNKNOWN_NAME = "Unknown command or category name in ACL"  # Redis's ENOENT text


class AclError(CoreError):
    """A rule that does not apply: `modifier` is the rule, `reason` Redis's text for it."""

    def __init__(self, modifier: str, reason: str) -> None:
        super().__init__(f"Error in ACL SETUSER modifier '{modifier}': {reason}")
        self.modifier = modifier
        self.reason = reason


@dataclass(kw_only=True)
class Selector:
    """What a set of rules allows: commands, key patterns, channel patterns. A user's own
    rules are its root selector; `(...)` adds more, any one of which may allow a command."""

    all_base: bool = False  # the command rules start from +@all (True) or -@all
    rules: list[str] = field(default_factory=list)  # command rules after the base, in order
    allkeys: bool = False  # `~*` or `allkeys`: every key (then `keys` is empty)
    keys: list[tuple[str, str]] = field(default_factory=list)  # (perm "RW"|"R"|"W", pattern)
    channels: list[str] = field(default_factory=list)  # &patterns; ["*"]: allchannels
    allowed: frozenset[str] = frozenset()  # command fullnames the rules allow (derived)
    firstargs: dict[str, frozenset[str]] = field(default_factory=dict)  # `+cmd|arg` (derived)

    def perms(self) -> Selector:
        """A copy of these permissions alone (a selector's, or a user's root)."""
        return Selector(all_base=self.all_base, rules=list(self.rules), allkeys=self.allkeys,
                        keys=list(self.keys), channels=list(self.channels),
                        allowed=self.allowed, firstargs=dict(self.firstargs))  # fmt: skip

    def command_text(self) -> str:
        return " ".join(["+@all" if self.all_base else "-@all", *self.rules])

    def key_tokens(self) -> list[str]:
        if self.allkeys:
            return ["~*"]
        return [("~" if p == "RW" else f"%{p}~") + pat for p, pat in self.keys]

    def key_text(self) -> str:
        return " ".join(self.key_tokens())

    def perm_tokens(self) -> list[str]:
        """Keys, channels, commands: ACL LIST's description of a selector, split."""
        channels = ["&*"] if self.channels == ["*"] else ["resetchannels"] + [
            "&" + c for c in self.channels
        ]  # fmt: skip
        return [*self.key_tokens(), *channels, "+@all" if self.all_base else "-@all",
                *self.rules]  # fmt: skip

    def may_run(self, fullname: str, argv: list[bytes]) -> bool:
        """The command's rules allow it (`+xgroup` put every xgroup|sub in `allowed`), or a
        `+cmd|arg` rule allows it with that first argument."""
        if fullname in self.allowed:
            return True
        args = self.firstargs.get(fullname)
        return (
            args is not None
            and len(argv) > 1
            and argv[1].decode("utf-8", "replace").lower() in args
        )

    def key_ok(self, key: bytes, need: str) -> bool:
        """Whether a pattern with the permissions `need` ("R", "W" or "RW") matches `key`."""
        if self.allkeys:
            return True
        for perm, pat in self.keys:
            if perm in ("RW", need) and glob.match(_pattern(pat), key):
                return True
        return False


@functools.lru_cache(maxsize=4096)
def _pattern(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def replay(sel: Selector) -> None:
    """Derive what the base and rules allow: the command fullnames, and `+cmd|arg`'s first
    arguments (any later rule naming the command drops them, as Redis's)."""
    allowed = set(aclcats.TABLE) if sel.all_base else set()
    firstargs: dict[str, set[str]] = {}
    for rule in sel.rules:
        target = rule[1:]
        cmd, bar, arg = target.partition("|")
        if bar and cmd not in aclcats.CONTAINERS:
            firstargs.setdefault(cmd, set()).add(arg)
            continue
        names = _names(target)
        if rule[0] == "+":
            allowed |= names
        else:
            allowed -= names
        for name in names:
            firstargs.pop(name, None)
    sel.allowed = frozenset(allowed)
    sel.firstargs = {c: frozenset(a) for c, a in firstargs.items()}


def _names(target: str) -> set[str]:
    """The fullnames a rule's target (`@cat`, `cmd`, `cmd|sub`) covers."""
    if target.startswith("@"):
        cat = target[1:]
        return set(aclcats.TABLE) if cat == "all" else set(aclcats.commands_in(cat))
    return {n for n in aclcats.TABLE if n == target or n.startswith(target + "|")}


def _known(target: str) -> bool:
    if target.startswith("@"):
        return target[1:] == "all" or target[1:] in aclcats.CATEGORIES
    return target in aclcats.TABLE


# --- applying one rule ---------------------------------------------------------------------------


def selector(op: str) -> Selector:
    """A selector from `(rule rule ...)`; AclError naming the whole `(...)`."""
    sel = Selector()
    try:
        for rule in op[1:-1].split():
            perm_rule(sel, rule)
    except AclError as e:
        raise AclError(op, e.reason) from None
    return sel


def perm_rule(sel: Selector, op: str) -> None:
    """A rule of commands, keys or channels (the root's or a selector's)."""
    low = op.lower()
    simple = _SELECTOR_FLAGS.get(low)
    if simple is not None:
        simple(sel)
    elif op[:1] == "~" or op[:1] == "%":
        _key_rule(sel, op)
    elif op[:1] == "&":
        if sel.channels == ["*"]:
            raise AclError(op, _CHANNEL_AFTER_ALL)
        if op[1:] == "*":
            sel.channels = ["*"]
        elif op[1:] not in sel.channels:
            sel.channels = [*sel.channels, op[1:]]
    elif op[:1] in ("+", "-") and len(op) > 1:
        _command_rule(sel, op, op[0] + low[1:])
    else:
        raise AclError(op, "Syntax error")


def _command_rule(sel: Selector, op: str, rule: str) -> None:
    target = rule[1:]
    if target == "@all":
        sel.all_base, sel.rules = rule[0] == "+", []
    elif not _known(target):
        _check_first_arg(op, rule)
        sel.rules = [r for r in sel.rules if r[1:] != target] + [rule]
    else:
        sel.rules = [r for r in sel.rules if r[1:] != target] + [rule]
    replay(sel)


def _check_first_arg(op: str, rule: str) -> None:
    """`+cmd|arg` for a command without subcommands (Redis allows it, deprecated); AclError
    for anything else that names no known command or category."""
    cmd, bar, arg = rule[1:].rpartition("|")
    unknown = AclError(op, UNKNOWN_NAME)
    if rule[0] == "-" or not bar or cmd.startswith("@") or cmd not in aclcats.TABLE:
        raise unknown
    if "|" in cmd:  # `+container|sub|arg`
        raise AclError(op, "Allowing first-arg of a subcommand is not supported")
    if cmd in aclcats.CONTAINERS:  # a container's unknown subcommand
        raise unknown
    if not arg:
        raise AclError(op, "Syntax error")


def _key_rule(sel: Selector, op: str) -> None:
    """`~pattern`, or `%R~`, `%W~`, `%RW~pattern` (no `~`: the empty pattern); a pattern
    given again gains the permissions (Redis merges them)."""
    if sel.allkeys:
        raise AclError(op, _PATTERN_AFTER_ALL)
    if op == "~*":
        sel.allkeys, sel.keys = True, []
        return
    if op[0] == "~":
        perm, pattern = "RW", op[1:]
    else:
        flags, _, pattern = op[1:].partition("~")
        upper = flags.upper()
        if not flags or set(upper) - {"R", "W"} or len(set(upper)) != len(upper):
            raise AclError(op, "Syntax error")
        perm = "".join(c for c in "RW" if c in upper)
    had = next((p for p, pat in sel.keys if pat == pattern), "")
    if had:
        perm = "".join(c for c in "RW" if c in had + perm)
        sel.keys = [(perm if pat == pattern else p, pat) for p, pat in sel.keys]
    else:
        sel.keys = [*sel.keys, (perm, pattern)]


def set_fields(**values: object) -> Callable[[Any], None]:
    def apply(target: Any) -> None:
        for name, value in values.items():
            setattr(target, name, list(value) if isinstance(value, list) else value)
        if "all_base" in values:
            target.rules = []
            replay(target)

    return apply


_SELECTOR_FLAGS: dict[str, Callable[[Selector], None]] = {
    "allkeys": set_fields(allkeys=True, keys=[]),
    "resetkeys": set_fields(allkeys=False, keys=[]),
    "allchannels": set_fields(channels=["*"]),
    "resetchannels": set_fields(channels=[]),
    "allcommands": set_fields(all_base=True),
    "nocommands": set_fields(all_base=False),
}


def merge_selectors(words: list[str]) -> list[str]:
    """Rules as given, with a selector split over several words (`(~x`, `+get)`) joined into
    one (`(~x +get)`); ValueError (Redis's text) if one is never closed."""
    out: list[str] = []
    opened = -1  # where the selector being gathered started
    for i, word in enumerate(words):
        if opened < 0 and word[:1] == "(" and word[-1:] != ")":
            opened = i
            out.append(word)
        elif opened >= 0:
            out[-1] += " " + word
            if word[-1:] == ")":
                opened = -1
        else:
            out.append(word)
    if opened >= 0:
        raise ValueError(f"Unmatched parenthesis in acl selector starting at '{words[opened]}'.")
    return out
