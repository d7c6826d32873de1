"""Job plugin arguments, parsed the way Go's ``flag`` package parses them (``flag.ContinueOnError``).

Volcano builds each job plugin from ``spec.plugins.<name>`` with a ``flag.FlagSet``: ``-x``/``--x``,
``--x=v`` or ``--x v`` (not for booleans), parsing stops at the first argument that is not a flag or after
``--``. An unknown flag or a bad value stops the parse with an error that Volcano only logs; the flags
parsed before it keep their values and the rest keep their defaults. Here the same values come out, and
the error text (Go's own wording) is handed back so that the controller can show it as an event.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Flag", "parse_flags"]

FlagKind = Literal["string", "int", "bool"]

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_GO_OCTAL = re.compile(r"[+-]?0[0-7_]+")
_INT64 = 1 << 63


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag of a plugin: its name (without dashes), its type and its default."""

    name: str
    kind: FlagKind
    default: Any


def _parse_int(text: str) -> int:
    """``strconv.ParseInt(text, 0, 64)``: decimal, ``0x``/``0o``/``0b`` prefixes, a leading ``0`` for octal."""
    if _GO_OCTAL.fullmatch(text):
        sign = -1 if text.startswith("-") else 1
        value = sign * int(text.lstrip("+-")[1:].replace("_", "") or "0", 8)
    else:
        if text.strip() != text or not text:
            raise ValueError(text)
        value = int(text, 0)
    if not -_INT64 <= value < _INT64:
        raise ValueError(text)
    return value


def _convert(flag: Flag, text: str) -> Any:
    if flag.kind == "bool":
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError(text)
    if flag.kind == "int":
        return _parse_int(text)
    return text


def parse_flags(specs: Sequence[Flag], args: Sequence[str]) -> tuple[dict[str, Any], str | None]:
    """The flag values after parsing ``args`` (defaults for the rest), and Go's parse error if there was one."""
    by_name = {f.name: f for f in specs}
    values: dict[str, Any] = {f.name: f.default for f in specs}
    rest = [str(a) for a in args]
    while rest:
        arg = rest[0]
        if len(arg) < 2 or arg[0] != "-":
            break  # the first non-flag argument ends the flags
        dashes = 2 if arg[1] == "-" else 1
        if dashes == 2 and len(arg) == 2:
            break  # "--" terminates the flags
        name = arg[dashes:]
        if not name or name[0] in "-=":
            shown = arg.split("=", 1)[0] + ("=..." if "=" in arg else "")  # a value may be a key: never echoed
            return values, f"bad flag syntax: {shown}"
        rest = rest[1:]
        name, has_value, value = name.partition("=")
        flag = by_name.get(name)
        if flag is None:
            return values, f"flag provided but not defined: -{name}"
        if flag.kind == "bool" and not has_value:
            values[name] = True
            continue
        if not has_value:
            if not rest:
                return values, f"flag needs an argument: -{name}"
            value, rest = rest[0], rest[1:]
        try:
            values[name] = _convert(flag, value)
        except ValueError:
            if flag.kind == "bool":
                return values, f'invalid boolean value "{value}" for -{name}: parse error'
            return values, f'invalid value "{value}" for flag -{name}: parse error'
    return values, None
