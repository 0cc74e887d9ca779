"""Users and what they may run: Redis's ACL model (src/acl.c), sans I/O.

    Acl                the users by name (always holding `default`), the denial log
      .setuser(name, rules)      ACL SETUSER: all rules apply or none (AclError)
      .authenticate(name, pw)    the User, or None (unknown, off, or a wrong password)
      .check(user, argv)         None, or the Denial to answer (-NOPERM ...)
      .load(text) / .save()      an ACL file, Redis's format: one `user <name> <rules...>` a line
    User               flags (on/off, nopass), SHA-256 hex passwords, command rules, key and
                       channel patterns; `describe()` is ACL LIST's text after the name

A user's permissions are selectors (aclrules.py): its own rules (the root: a User is a
Selector) and any `(...)` ones; a command runs if one selector allows it and all its keys,
else the refusal that got furthest answers (a key's over the command's). AUTH, HELLO, QUIT
and RESET are always allowed (Redis's CMD_NO_AUTH). Categories and keys: aclcats.py.

Passwords are only ever held hashed (`>pass` is stored as sha256(pass).hexdigest(), as Redis);
nothing here logs, and ACL LOG entries name the user, never a password.

The default user is `on nopass ~* &* +@all` until `--requirepass P` (`>P`, no nopass).
Reading and writing the ACL file is the caller's (the server's) I/O; `load` parses a text
into a new set of users, all or nothing, with every error Redis's ACL LOAD reports. Names and
rules are bytes to Redis: here they are str whose non-UTF-8 bytes are surrogate escapes, as
the edges decode an argument (`file_text` / `file_bytes` for the file), so any byte a client
may give ACL SETUSER survives ACL SAVE and LOAD unchanged.

On a node the users are replicated state (users.py): a change is computed here without
being installed (`prepare`, `doomed`, `load`), then logged as a users record and applied
from it; `User.tokens()` is the form a record and a snapshot carry.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass, field

from . import aclcats
from .aclrules import (
    UNKNOWN_NAME,
    AclError,
    Selector,
    merge_selectors,
    perm_rule,
    replay,
    selector,
    set_fields,
)

WRONGPASS = "invalid username-password pair or user is disabled."
NOAUTH = "Authentication required."
_BAD_HASH = (
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal "
    "characters"
)


@dataclass(frozen=True)
class Denial:
    """Why `check` refused: reason "command" or "key" (ACL LOG's), the object (the command's
    fullname or the key) and the -NOPERM line's text."""

    reason: str
    object: str
    message: str


@dataclass
class User(Selector):
    name: str
    enabled: bool = False  # on/off; a new user is off
    nopass: bool = False  # any password (or none) authenticates
    sanitize: bool = True  # sanitize-payload (RESTORE); skip-sanitize-payload: False
    # SHA-256 hex, in order added; kept out of repr so that no log line or traceback shows them
    passwords: list[str] = field(default_factory=list, repr=False)
    selectors: list[Selector] = field(default_factory=list)  # `(...)`, in order added

    def copy(self) -> User:
        root = self.perms()
        return User(self.name, enabled=self.enabled, nopass=self.nopass, sanitize=self.sanitize,
                    passwords=list(self.passwords), all_base=root.all_base, rules=root.rules,
                    allkeys=root.allkeys, keys=root.keys, channels=root.channels,
                    allowed=root.allowed,
                    firstargs=root.firstargs,
                    selectors=[s.perms() for s in self.selectors])  # fmt: skip

    # --- ACL LIST / GETUSER ------------------------------------------------------------------

    def flags(self) -> list[str]:
        out = ["on" if self.enabled else "off"]
        if self.nopass:
            out.append("nopass")
        out.append("sanitize-payload" if self.sanitize else "skip-sanitize-payload")
        return out

    def tokens(self) -> list[str]:
        """The rules that rebuild this user from `reset`, one a word (a pattern may hold a
        blank; a selector is one word, `(...)`): ACL LIST's description, split, and what a
        users record carries (users.py)."""
        selectors = ["(" + " ".join(s.perm_tokens()) + ")" for s in self.selectors]
        return [*self.flags(), *("#" + h for h in self.passwords), *self.perm_tokens(),
                *selectors]  # fmt: skip

    def describe(self) -> str:
        """ACL LIST's description (and the ACL file's line) after `user <name> `."""
        return " ".join(self.tokens())

    # --- checks --------------------------------------------------------------------------------

    def password_ok(self, password: bytes) -> bool:
        if self.nopass:
            return True
        digest = hashlib.sha256(password).hexdigest()
        return any(hmac.compare_digest(digest, h) for h in self.passwords)


# --- applying one rule ---------------------------------------------------------------------------


def apply_rule(user: User, op: str) -> None:
    """Apply one ACL SETUSER rule to `user` in place; AclError (and `user` unspecified) when
    it does not apply. Rules are case-insensitive, passwords and patterns are not."""
    low = op.lower()
    simple = _USER_FLAGS.get(low)
    if simple is not None:
        simple(user)
    elif low == "reset":
        _reset(user)
    elif low == "clearselectors":
        user.selectors = []
    elif op[:1] in (">", "<", "#", "!"):
        _password_rule(user, op)
    elif op[:1] == "(" and op[-1:] == ")":
        user.selectors = [*user.selectors, selector(op)]
    else:
        perm_rule(user, op)


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


def _reset(user: User) -> None:
    fresh = User(user.name)
    replay(fresh)
    user.__dict__.update(fresh.__dict__)


_USER_FLAGS: dict[str, Callable[[User], None]] = {
    "on": set_fields(enabled=True),
    "off": set_fields(enabled=False),
    "nopass": set_fields(nopass=True, passwords=[]),
    "resetpass": set_fields(nopass=False, passwords=[]),
    "sanitize-payload": set_fields(sanitize=True),
    "skip-sanitize-payload": set_fields(sanitize=False),
}
# --- the users -----------------------------------------------------------------------------------


def default_user(requirepass: str = "") -> User:
    """`user default on nopass ~* &* +@all`, or with `>requirepass` instead of nopass."""
    user = User("default", enabled=True, nopass=True, all_base=True, allkeys=True,
                channels=["*"])  # fmt: skip
    replay(user)
    if requirepass:
        apply_rule(user, ">" + requirepass)
    return user


def file_text(data: bytes) -> str:
    """An ACL file's bytes as `load` reads them (any byte kept, as Redis reads bytes)."""
    return data.decode("utf-8", "surrogateescape")


def file_bytes(text: str) -> bytes:
    """`save`'s text as the file's bytes: `file_text`'s inverse."""
    return text.encode("utf-8", "surrogateescape")


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
        # The users came from the node's data (a snapshot, a users record, a full sync:
        # users.py), not from its own --requirepass/--aclfile; False: its config's (or the
        # built-in default).
        self.from_data = False

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

    def prepare(self, name: str, rules: list[str]) -> User:
        """ACL SETUSER's outcome, not installed: the user (created if new: off, -@all,
        nothing else) with every rule applied to a copy. AclError or ValueError (Redis's
        text) if one does not apply; nothing here changes either way."""
        if not valid_username(name):
            raise ValueError("Usernames can't contain spaces or null characters")
        current = self.users.get(name)
        user = current.copy() if current is not None else User(name)
        for rule in merge_selectors(rules):
            apply_rule(user, rule)
        return user

    def setuser(self, name: str, rules: list[str]) -> None:
        """ACL SETUSER on this Acl alone (a node's replicated change is users.py's)."""
        self.users[name] = self.prepare(name, rules)

    def doomed(self, names: list[str]) -> list[str]:
        """ACL DELUSER's victims: the named users that exist, once each, in order;
        ValueError (Redis's text) if `default` is named. Nothing is removed here."""
        if "default" in names:
            raise ValueError("The 'default' user cannot be removed")
        return [n for n in dict.fromkeys(names) if n in self.users]

    def deluser(self, names: list[str]) -> int:
        """ACL DELUSER on this Acl alone; how many users were removed."""
        victims = self.doomed(names)
        for name in victims:
            del self.users[name]
        return len(victims)

    def listing(self) -> list[str]:
        """ACL LIST: `user <name> <description>`, by name."""
        return [f"user {u.name} {u.describe()}" for _, u in sorted(self.users.items())]

    def save(self) -> str:
        """The ACL file's text: ACL LIST's lines."""
        return "".join(line + "\n" for line in self.listing())

    def load(self, text: str, filename: str = "acl") -> dict[str, User]:
        """The users an ACL file's text defines (`default` as before unless the file has it).
        Nothing is changed here: the caller installs the result (`self.users = ...`).

        Every line is read as Redis's ACLLoadFromFile reads it, and a bad file raises one
        ValueError holding every error it found, in file order and Redis's words (each ends
        with ". "): a line that is not `user <name> ...`, a name with a blank in it, a name
        given twice, an unclosed `(`, every unknown command or category, and a line's first
        other bad rule (later ones may only follow from it, so Redis prints one)."""
        users: dict[str, User] = {}
        errors: list[str] = []
        named: set[str] = set()  # a name counts as defined even on a line with errors
        for number, raw in enumerate(text.split("\n"), 1):
            line = raw.strip(" \t\r\n")
            if not line or line[0] == "#":
                continue
            user = _load_line(line.split(" "), f"{filename}:{number}", number, named, errors)
            if user is not None and not errors:
                users[user.name] = user
        if errors:
            raise ValueError("".join(errors))
        if "default" not in users:  # kept as it is (Redis would make a fresh one)
            users["default"] = self.default.copy()
        return users

    # --- checks and the log ------------------------------------------------------------------

    def check(self, user: User, argv: list[bytes]) -> Denial | None:
        """Whether `user` may run argv: None, or the denial (its -NOPERM text). One selector
        (the user's own rules, or a `(...)`) must allow the command and all its keys; else
        the denial that got furthest (a key's over the command's; the later key's)."""
        if user.allkeys and user.all_base and not user.rules:
            return None  # `~* +@all` and no rule after it: anything (the default user)
        name = aclcats.fullname(argv) if argv else ""
        if name not in aclcats.TABLE or name in NO_AUTH:
            return None  # unknown: the command's own error answers it; AUTH ...: always
        if user.allkeys and user.may_run(name, argv):
            return None  # the loop's first turn, without building its tuple (most users)
        keys: list[tuple[bytes, str]] | None = None  # found once a selector needs them
        found: tuple[tuple[int, int], Denial] | None = None
        for sel in (user, *user.selectors):
            if sel.allkeys and sel.may_run(name, argv):
                return None  # `~*`: every key is ok
            keys = aclcats.keys_of(name, argv) if keys is None else keys
            denied = _refusal(sel, user.name, name, argv, keys)
            if denied is None:
                return None
            if found is None or denied[0] > found[0]:
                found = denied
        assert found is not None
        return found[1]

    def note(self, denial: Denial, username: str, context: str, client_info: str,
             now_ms: int) -> None:  # fmt: skip
        """Record a denial in ACL LOG: a repeat of a similar entry within 60 s is counted in
        it, which becomes the newest (as Redis's ACLLogMatchEntry)."""
        for i, entry in enumerate(self.log):
            same = (entry.reason, entry.context, entry.object, entry.username) == (
                denial.reason, context, denial.object, username)  # fmt: skip
            if same and now_ms - entry.updated_ms < 60_000:
                entry.count += 1
                entry.updated_ms = now_ms
                entry.client_info = client_info
                self.log.insert(0, self.log.pop(i))
                return
        entry = LogEntry(1, denial.reason, context, denial.object, username, now_ms, now_ms,
                         client_info, self._entries)  # fmt: skip
        self._entries += 1
        self.log.insert(0, entry)
        del self.log[self.log_max_len :]


# WARNING: the commands flagged no_auth in server/resp/commandinfo.py (a unit test compares).
# Redis checks no rule for them: any user, even `off` or `-@all` (an anonymous connection is
# the default user), may run them, so AUTH works when the default user may run nothing.
NO_AUTH = frozenset({"auth", "hello", "quit", "reset"})


def _load_line(
    words: list[str], where: str, number: int, named: set[str], errors: list[str]
) -> User | None:
    """One ACL file line's user, or None with its errors appended (Redis's texts: the
    username error opens with a quote, the unclosed `(` one ends with no blank, as Redis)."""
    if words[0] != "user" or len(words) < 2:
        errors.append(f"{where} should start with user keyword followed by the username. ")
        return None
    name = words[1]
    if not valid_username(name):
        errors.append(f"'{where}: username '{name}' contains invalid characters. ")
        return None
    if name in named:
        errors.append(f"WARNING: Duplicate user '{name}' found on line {number}. ")
        return None
    named.add(name)
    try:
        rules = merge_selectors([w for w in words[2:] if w])
    except ValueError:
        errors.append(f"{where}: Unmatched parenthesis in selector definition.")
        return None
    user = User(name)
    other_error = False
    for rule in (r.strip("\t\r\n") for r in rules):
        if not rule:  # Redis: an empty rule does nothing
            continue
        try:
            apply_rule(user, rule)
        except AclError as e:
            if e.reason == UNKNOWN_NAME:
                errors.append(f"{where}: Error in applying operation '{rule}': {e.reason}. ")
            elif not other_error:
                errors.append(f"{where}: {e.reason}. ")
                other_error = True
    return user


def _refusal(
    sel: Selector, username: str, name: str, argv: list[bytes], keys: list[tuple[bytes, str]]
) -> tuple[tuple[int, int], Denial] | None:
    """None if `sel` allows argv; else how far it got (command 1, key 2 with the key's
    index) and the denial."""
    if not sel.may_run(name, argv):
        text = f"User {username} has no permissions to run the '{name}' command"
        return (1, 0), Denial("command", name, text)
    for i, (key, need) in enumerate(keys):
        if not sel.key_ok(key, need):
            obj = key.decode("utf-8", "replace")
            return (2, i), Denial("key", obj, "No permissions to access a key")
    return None


def dryrun_text(denial: Denial, username: str) -> str:
    """ACL DRYRUN's reply for a denial: Redis's verbose text, naming the key."""
    if denial.reason == "key":
        return f"User {username} has no permissions to access the '{denial.object}' key"
    return denial.message


def auth_denial() -> Denial:
    """ACL LOG's entry for a failed AUTH (object "AUTH", reason "auth")."""
    return Denial("auth", "AUTH", WRONGPASS)
