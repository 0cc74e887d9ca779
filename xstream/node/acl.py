"""Users and what they may run: Redis's ACL model (src/acl.c), sans I/O.

    Acl                the users by name (always holding `default`), the denial log
      .setuser(name, rules)      ACL SETUSER: all rules apply or none (AclError)
      .authenticate(name, pw)    the User, or None (unknown, off, or a wrong password)
      .check(user, argv)         None, or the Denial to answer (-NOPERM ...)
      .load(text) / .save()      an ACL file, Redis's format: one `user <name> <rules...>` a line
    User               flags (on/off, nopass), SHA-256 hex passwords, command rules, key and
                       channel patterns; `describe()` is ACL LIST's text after the name

Command rules are kept as Redis 7+ does: a base (`+@all` or `-@all`) and the rules given
since, in order; whether a command is allowed is the last rule that names it, its category or
its container (replayed once into a set, `User.allowed`). Categories and keys: aclcats.py.

Passwords are only ever held hashed (`>pass` is stored as sha256(pass).hexdigest(), as Redis);
nothing here logs, and ACL LOG entries name the user, never a password.

The default user is `on nopass ~* &* +@all` until `--requirepass P` (`>P`, no nopass).
Reading and writing the ACL file is the caller's (the server's) I/O; `load` parses a text
into a new set of users, all or nothing, with Redis's `<file>:<line>: ...` errors.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from xstream.engine import glob

from . import aclcats

ALL_KEYS: Final = [("RW", "*")]  # a user's `keys` after `~*` or `allkeys`
WRONGPASS = "invalid username-password pair or user is disabled."
NOAUTH = "Authentication required."
# WARNING: the commands flagged no_auth in server/resp/commandinfo.py (a unit test compares).
# Redis checks no rule for them: any user, even `off` or `-@all` (an anonymous connection is
# the default user), may run them, so AUTH works when the default user may run nothing.
NO_AUTH = frozenset({"auth", "hello", "quit", "reset"})
_PATTERN_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not "
    "have any effect. Try 'resetkeys' to start with an empty list of patterns"
)
_CHANNEL_AFTER_ALL = (
    "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does "
    "not have any effect. Try 'resetchannels' to start with an empty list of channels"
)
_BAD_HASH = (
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters"
)


class AclError(Exception):
    """A rule that does not apply: `modifier` is the rule, `reason` Redis's text for it."""

    def __init__(self, modifier: str, reason: str) -> None:
        super().__init__(f"Error in ACL SETUSER modifier '{modifier}': {reason}")
        self.modifier = modifier
        self.reason = reason


@dataclass(frozen=True)
class Denial:
    """Why `check` refused: reason "command" or "key" (ACL LOG's), the object (the command's
    fullname or the key) and the -NOPERM line's text."""

    reason: str
    object: str
    message: str


@dataclass
class User:
    name: str
    enabled: bool = False  # on/off; a new user is off
    nopass: bool = False  # any password (or none) authenticates
    sanitize: bool = True  # sanitize-payload (RESTORE); skip-sanitize-payload: False
    passwords: list[str] = field(default_factory=list)  # SHA-256 hex, in order added
    all_base: bool = False  # the command rules start from +@all (True) or -@all
    rules: list[str] = field(default_factory=list)  # command rules after the base, in order
    keys: list[tuple[str, str]] = field(default_factory=list)  # (perm "RW"|"R"|"W", pattern)
    channels: list[str] = field(default_factory=list)  # &patterns; ["*"]: allchannels
    allowed: frozenset[str] = frozenset()  # command fullnames the rules allow (derived)

    def copy(self) -> User:
        return User(self.name, self.enabled, self.nopass, self.sanitize, list(self.passwords),
                    self.all_base, list(self.rules), list(self.keys), list(self.channels),
                    self.allowed)  # fmt: skip

    # --- ACL LIST / GETUSER ------------------------------------------------------------------

    def flags(self) -> list[str]:
        out = ["on" if self.enabled else "off"]
        if self.nopass:
            out.append("nopass")
        out.append("sanitize-payload" if self.sanitize else "skip-sanitize-payload")
        return out

    def command_text(self) -> str:
        return " ".join(["+@all" if self.all_base else "-@all", *self.rules])

    def key_text(self) -> str:
        return " ".join(("~" if p == "RW" else f"%{p}~") + pat for p, pat in self.keys)

    def channel_text(self) -> str:
        return " ".join("&" + c for c in self.channels) if self.channels else "resetchannels"

    def describe(self) -> str:
        """ACL LIST's description (and the ACL file's line) after `user <name> `."""
        parts = [*self.flags(), *("#" + h for h in self.passwords)]
        if self.keys:
            parts.append(self.key_text())
        parts += [self.channel_text(), self.command_text()]
        return " ".join(parts)

    # --- checks --------------------------------------------------------------------------------

    def password_ok(self, password: bytes) -> bool:
        if self.nopass:
            return True
        digest = hashlib.sha256(password).hexdigest()
        return any(hmac.compare_digest(digest, h) for h in self.passwords)

    def may_run(self, fullname: str) -> bool:
        return fullname in self.allowed  # `+xgroup` put every xgroup|sub in it

    def key_ok(self, key: bytes, need: str) -> bool:
        return any(
            set(need) <= set(perm) and glob.match(pat.encode("utf-8", "surrogateescape"), key)
            for perm, pat in self.keys
        )


def _replay(user: User) -> frozenset[str]:
    """The set of command fullnames the base and rules allow."""
    allowed = set(aclcats.TABLE) if user.all_base else set()
    for rule in user.rules:
        names = _names(rule[1:])
        if rule[0] == "+":
            allowed |= names
        else:
            allowed -= names
    return frozenset(allowed)


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


def apply_rule(user: User, op: str) -> None:
    """Apply one ACL SETUSER rule to `user` in place; AclError (and `user` unspecified) when
    it does not apply. Rules are case-insensitive, passwords and patterns are not."""
    low = op.lower()
    simple = _SIMPLE.get(low)
    if simple is not None:
        simple(user)
    elif op[:1] in (">", "<", "#", "!"):
        _password_rule(user, op)
    elif op[:1] == "~" or op[:1] == "%":
        _key_rule(user, op)
    elif op[:1] == "&":
        if user.channels == ["*"]:
            raise AclError(op, _CHANNEL_AFTER_ALL)
        user.channels = ["*"] if op[1:] == "*" else [*user.channels, op[1:]]
    elif op[:1] in ("+", "-") and len(op) > 1:
        _command_rule(user, op[0] + low[1:])
    else:
        raise AclError(op, "Syntax error")


def _command_rule(user: User, rule: str) -> None:
    target = rule[1:]
    if target == "@all":
        user.all_base, user.rules = rule[0] == "+", []
    elif not _known(target):
        if "|" in target and target.partition("|")[0] in aclcats.TABLE:
            raise AclError(rule, "Allowing first-arg of a subcommand is not supported")
        raise AclError(rule, "Unknown command or category name in ACL")
    else:
        user.rules = [r for r in user.rules if r[1:] != target] + [rule]
    user.allowed = _replay(user)


def _password_rule(user: User, op: str) -> None:
    kind, value = op[0], op[1:]
    if kind in (">", "<"):
        digest = hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()
    else:
        digest = value
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise AclError(op, _BAD_HASH)
    if kind in (">", "#"):
        if digest not in user.passwords:
            user.passwords.append(digest)
        user.nopass = False
    elif digest in user.passwords:
        user.passwords.remove(digest)
    else:
        raise AclError(op, "The password you are trying to remove from the user does not exist")


def _key_rule(user: User, op: str) -> None:
    if op[0] == "~":
        perm, pattern = "RW", op[1:]
    else:
        flags, tilde, pattern = op[1:].partition("~")
        if not tilde or not flags or set(flags.upper()) - {"R", "W"}:
            raise AclError(op, "Syntax error")
        perm = "".join(c for c in "RW" if c in flags.upper())
    if ("RW", "*") in user.keys:
        raise AclError(op, _PATTERN_AFTER_ALL)
    if pattern == "*" and perm == "RW":
        user.keys = [("RW", "*")]
    elif (perm, pattern) not in user.keys:
        user.keys.append((perm, pattern))


def _set(**values: object) -> Callable[[User], None]:
    def apply(user: User) -> None:
        for name, value in values.items():
            setattr(user, name, list(value) if isinstance(value, list) else value)
        if "all_base" in values:
            user.rules = []
            user.allowed = _replay(user)

    return apply


def _reset(user: User) -> None:
    fresh = User(user.name)
    fresh.allowed = _replay(fresh)
    user.__dict__.update(fresh.__dict__)


_SIMPLE: dict[str, Callable[[User], None]] = {
    "on": _set(enabled=True),
    "off": _set(enabled=False),
    "nopass": _set(nopass=True, passwords=[]),
    "resetpass": _set(nopass=False, passwords=[]),
    "allkeys": _set(keys=[("RW", "*")]),
    "resetkeys": _set(keys=[]),
    "allchannels": _set(channels=["*"]),
    "resetchannels": _set(channels=[]),
    "allcommands": _set(all_base=True),
    "nocommands": _set(all_base=False),
    "sanitize-payload": _set(sanitize=True),
    "skip-sanitize-payload": _set(sanitize=False),
    "reset": _reset,
}


# --- the users -----------------------------------------------------------------------------------


def default_user(requirepass: str = "") -> User:
    """`user default on nopass ~* &* +@all`, or with `>requirepass` instead of nopass."""
    user = User("default", enabled=True, nopass=True, all_base=True, keys=[("RW", "*")],
                channels=["*"])  # fmt: skip
    user.allowed = _replay(user)
    if requirepass:
        apply_rule(user, ">" + requirepass)
    return user


def valid_username(name: str) -> bool:
    """Redis's ACLStringHasSpaces, inverted: no blanks, no NUL."""
    return bool(name) and not any(c in " \t\r\n\v\f\0" for c in name)


@dataclass
class LogEntry:
    """One ACL LOG entry: repeated denials of the same kind update it (count, last time)."""

    count: int
    reason: str  # "command", "key" or "auth"
    context: str  # "toplevel", "multi"
    object: str  # the command's fullname, the key, or "AUTH"
    username: str
    created_ms: int
    updated_ms: int
    client_info: str
    entry_id: int


class Acl:
    """The users of one node, and its ACL LOG (newest first, at most `log_max_len`)."""

    def __init__(self, requirepass: str = "", log_max_len: int = 128) -> None:
        self.users: dict[str, User] = {"default": default_user(requirepass)}
        self.log: list[LogEntry] = []
        self.log_max_len = log_max_len
        self._entries = 0  # entries ever added: the next entry_id
        self.file = ""  # --aclfile: ACL LOAD and SAVE's file (the edge reads it); "": none

    @property
    def default(self) -> User:
        return self.users["default"]

    def requires_auth(self) -> bool:
        """Whether a new connection is not yet authenticated (the default user is off or has
        no nopass): Redis then refuses all but AUTH, HELLO, QUIT and RESET with NOAUTH."""
        return not (self.default.enabled and self.default.nopass)

    def authenticate(self, name: str, password: bytes) -> User | None:
        user = self.users.get(name)
        if user is None or not user.enabled or not user.password_ok(password):
            return None
        return user

    def setuser(self, name: str, rules: list[str]) -> None:
        """ACL SETUSER: create the user if new (off, -@all, nothing else), then apply every
        rule to a copy; the copy replaces the user only if all applied."""
        if not valid_username(name):
            raise ValueError("Usernames can't contain spaces or null characters")
        current = self.users.get(name)
        user = current.copy() if current is not None else User(name)
        for rule in rules:
            apply_rule(user, rule)
        self.users[name] = user

    def deluser(self, names: list[str]) -> int:
        if "default" in names:
            raise ValueError("The 'default' user cannot be removed")
        return sum(self.users.pop(n, None) is not None for n in dict.fromkeys(names))

    def listing(self) -> list[str]:
        """ACL LIST: `user <name> <description>`, by name."""
        return [f"user {u.name} {u.describe()}" for _, u in sorted(self.users.items())]

    def save(self) -> str:
        """The ACL file's text: ACL LIST's lines."""
        return "".join(line + "\n" for line in self.listing())

    def load(self, text: str, filename: str = "acl") -> dict[str, User]:
        """The users an ACL file's text defines (`default` as before unless the file has it);
        ValueError with Redis's `<file>:<line>: ...` text at the first bad line. Nothing is
        changed here: the caller installs the result (`self.users = ...`)."""
        users: dict[str, User] = {}
        for number, raw in enumerate(text.splitlines(), 1):
            words = raw.split()
            if not words:
                continue
            where = f"{filename}:{number}"
            if words[0] != "user" or len(words) < 2:
                raise ValueError(f"{where} should start with user keyword followed by the "
                                 "username. ")  # fmt: skip
            name = words[1]
            if not valid_username(name):
                raise ValueError(f"{where}: username '{name}' contains invalid characters. ")
            if name in users:
                raise ValueError(f"{where}: Duplicate user '{name}' found. ")
            user = User(name)
            for rule in words[2:]:
                try:
                    apply_rule(user, rule)
                except AclError as e:
                    raise ValueError(f"{where}: Error in applying operation '{rule}': "
                                     f"{e.reason}. ") from None  # fmt: skip
            users[name] = user
        if "default" not in users:  # kept as it is (Redis would make a fresh one)
            users["default"] = self.default.copy()
        return users

    # --- checks and the log ------------------------------------------------------------------

    def check(self, user: User, argv: list[bytes]) -> Denial | None:
        """Whether `user` may run argv: None, or the denial (its -NOPERM text)."""
        name = aclcats.fullname(argv) if argv else ""
        if name not in aclcats.TABLE:
            return None  # unknown: the command's own error answers it
        if name in NO_AUTH:
            return None
        if not user.may_run(name):
            text = f"User {user.name} has no permissions to run the '{name}' command"
            return Denial("command", name, text)
        if user.keys == ALL_KEYS:  # `~*` (allkeys) is alone when present: every key is ok
            return None
        for key, need in aclcats.keys_of(name, argv):
            if not user.key_ok(key, need):
                obj = key.decode("utf-8", "replace")
                return Denial("key", obj, "No permissions to access a key")
        return None

    def note(self, denial: Denial, username: str, context: str, client_info: str,
             now_ms: int) -> None:  # fmt: skip
        """Record a denial in ACL LOG (a repeat of the newest similar entry within 60 s is
        counted in it, as Redis's ACLLogMatchEntry)."""
        for entry in self.log:
            same = (entry.reason, entry.context, entry.object, entry.username) == (
                denial.reason, context, denial.object, username)  # fmt: skip
            if same and now_ms - entry.updated_ms < 60_000:
                entry.count += 1
                entry.updated_ms = now_ms
                entry.client_info = client_info
                return
        entry = LogEntry(1, denial.reason, context, denial.object, username, now_ms, now_ms,
                         client_info, self._entries)  # fmt: skip
        self._entries += 1
        self.log.insert(0, entry)
        del self.log[self.log_max_len :]


def auth_denial() -> Denial:
    """ACL LOG's entry for a failed AUTH (object "AUTH", reason "auth")."""
    return Denial("auth", "AUTH", WRONGPASS)
