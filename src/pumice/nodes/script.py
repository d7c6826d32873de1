"""What a simulated container prints, and when it exits: a small interpreter for ``sh -c`` commands.

Simulated nodes run no images. Most batch manifests' commands are shell one-liners of ``echo``, ``printf``,
``sleep`` and ``exit`` (Volcano's quick-start among them), and those can be followed exactly: each line
printed and the time it would be printed at, the exit code and the time of the exit. ``simulate`` does that
for the words of a container's ``command`` + ``args``:

* ``sh``/``bash``/``ash``/``dash`` with ``-c SCRIPT`` (flags such as ``-e`` honoured), or a bare
  ``echo``/``printf``/``sleep``/``true``/``false`` command;
* lists with ``;``, ``&&``, ``||`` and newlines; ``#`` comments; single and double quotes and backslashes;
  ``$VAR``/``${VAR}`` from the container's ``env`` and the script's own assignments (``export`` too),
  ``$?``, ``$HOSTNAME``, ``$0``...; ``> file``/``>> file`` (the output goes there, not to the log) and
  ``>&2``/``2>&1`` (stderr is in the log too);
* commands ``echo`` (``-n``, ``-e``), ``printf`` (``%s %d %i %f %x %o %c %b %%``), ``sleep`` (seconds or
  ``5m``-style, ``infinity``), ``exit``, ``true``, ``false``, ``:``, ``set -e``/``+e``/``-u``, ``export``,
  ``unset``, ``cd``, ``hostname``, ``date``.

Anything else (loops, pipes, background jobs, command substitution, other programs) is not guessed at: the
run stops being *complete* at that point, and ``problem`` says what was not understood.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ContainerRun", "Line", "simulate"]

_SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh", "ksh"})
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_KEYWORDS = frozenset({"if", "then", "else", "elif", "fi", "while", "until", "for", "do", "done", "case", "esac",
                       "function", "select", "{", "}", "[[", "]]", "!"})
_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "(", ")", "\n")
_REDIRECT = re.compile(r"(\d?)(>>|>&|>|<)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SLEEP_ARG = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)([smhd]?)$")


@dataclass(frozen=True, slots=True)
class Line:
    """One line of output, ``at`` seconds after the container started."""

    at: float
    text: str


@dataclass(frozen=True, slots=True)
class ContainerRun:
    """What a container does: its output lines in order, when it exits (``None``: never, or not known) and
    with which code. ``complete`` is False when part of the command could not be followed (``problem``
    says which, ``stopped_at`` when); the lines are then those printed before that point."""

    lines: tuple[Line, ...]
    exit_at: float | None
    exit_code: int | None
    complete: bool
    problem: str = ""
    stopped_at: float = 0.0


class _Unsupported(Exception):
    pass


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


@dataclass
class _Word:
    text: str
    quoted: bool  # any part quoted (an empty quoted word is still a word)
    assignment: bool = False  # NAME=... with NAME unquoted


@dataclass
class _Redirect:
    fd: str  # "1" (stdout), "2" (stderr), ...
    op: str  # ">", ">>", ">&", "<"
    target: str


@dataclass
class _State:
    env: dict[str, str]
    now: float = 0.0
    status: int = 0
    errexit: bool = False
    nounset: bool = False
    forever: bool = False
    out: list[Line] = field(default_factory=list)
    partial: str = ""
    partial_at: float = 0.0
    start: float = 0.0  # the container's start, for ``date``

    def write(self, text: str) -> None:
        if not text:
            return
        if not self.partial:
            self.partial_at = self.now
        text = self.partial + text
        *done, self.partial = text.split("\n")
        for line in done:
            self.out.append(Line(self.now, line))

    def flush(self) -> None:
        if self.partial:
            self.out.append(Line(self.now, self.partial))
            self.partial = ""


def simulate(container: dict[str, Any], *, env: dict[str, str] | None = None, start: float = 0.0) -> ContainerRun:
    """Follow ``container``'s command (see the module doc). ``env``: variables beyond the container's own
    literal ``env`` values (``HOSTNAME`` and the like); ``start``: the container's start time (for ``date``)."""
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    variables = dict(env or {})
    for item in container.get("env") or []:
        if isinstance(item, dict) and item.get("name") and "valueFrom" not in item:
            variables[str(item["name"])] = str(item.get("value") or "")
    state = _State(env=variables, start=start)
    if not words:
        return ContainerRun((), None, None, False, "the container runs its image's own entrypoint")
    program = words[0].rsplit("/", 1)[-1]
    try:
        try:
            if program in _SHELLS:
                script, positional, flags = _shell_args(words)
                state.errexit = "e" in flags
                state.nounset = "u" in flags
                state.env.setdefault("0", positional[0] if positional else program)
                for i, value in enumerate(positional[1:], start=1):
                    state.env[str(i)] = value
                _run_script(script, state)
            else:
                _command([_Word(w, True) for w in words], state)
        except _Exit as done:
            state.status = done.code
    except _Unsupported as err:
        state.flush()
        return ContainerRun(tuple(state.out), None, None, False, str(err), state.now)
    state.flush()
    if state.forever:
        return ContainerRun(tuple(state.out), None, None, True)
    return ContainerRun(tuple(state.out), state.now, state.status & 0xFF, True)


def _shell_args(words: list[str]) -> tuple[str, list[str], str]:
    """``sh -ec SCRIPT ARG0 ARGS...`` -> (SCRIPT, [ARG0, ARGS...], "e")."""
    flags = ""
    i = 1
    while i < len(words) and words[i].startswith("-") and len(words[i]) > 1 and words[i] != "--":
        flags += words[i][1:]
        i += 1
        if "c" in flags:
            break
    if "c" not in flags:
        raise _Unsupported(f"{words[0]} without -c reads its script from a file or stdin")
    if i >= len(words):
        raise _Unsupported(f"{words[0]} -c without a script")
    return words[i], words[i + 1:], flags.replace("c", "")


# --- the shell language ----------------------------------------------------------------------------------


def _tokens(script: str, state: _State) -> list[_Word | _Redirect | str]:
    """Words (expanded), redirections, and operators (plain strings)."""
    out: list[_Word | _Redirect | str] = []
    i, n = 0, len(script)
    while i < n:
        ch = script[i]
        if ch in " \t\r":
            i += 1
            continue
        if ch == "\\" and script.startswith("\\\n", i):
            i += 2
            continue
        if ch == "#":
            while i < n and script[i] != "\n":
                i += 1
            continue
        redirect = _REDIRECT.match(script, i)
        if redirect is not None and (i == 0 or script[i - 1] in " \t;&|\n"):
            fd, op = redirect.group(1) or ("0" if redirect.group(2) == "<" else "1"), redirect.group(2)
            i = redirect.end()
            while i < n and script[i] in " \t":
                i += 1
            target, i = _word(script, i, state)
            if not target.text:
                raise _Unsupported(f"a redirection {op} without a target")
            out.append(_Redirect(fd, op, target.text))
            continue
        op = next((o for o in _OPERATORS if script.startswith(o, i)), None)
        if op is not None:
            out.append(op)
            i += len(op)
            continue
        word, i = _word(script, i, state)
        out.append(word)
    return out


def _word(script: str, i: int, state: _State) -> tuple[_Word, int]:
    parts: list[str] = []
    quoted = False
    assignment = False
    n = len(script)
    while i < n:
        ch = script[i]
        if ch in " \t\r\n;&|()<>":
            break
        if ch == "=" and not quoted and not assignment and _NAME.fullmatch("".join(parts)):
            assignment = True
        if ch == "'":
            end = script.find("'", i + 1)
            if end < 0:
                raise _Unsupported("an unterminated ' quote")
            parts.append(script[i + 1:end])
            quoted, i = True, end + 1
        elif ch == '"':
            i += 1
            quoted = True
            while True:
                if i >= n:
                    raise _Unsupported('an unterminated " quote')
                c = script[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and script[i + 1] in '"\\$`\n':
                    parts.append("" if script[i + 1] == "\n" else script[i + 1])
                    i += 2
                elif c == "$":
                    text, i = _dollar(script, i, state)
                    parts.append(text)
                elif c == "`":
                    raise _Unsupported("command substitution (`...`)")
                else:
                    parts.append(c)
                    i += 1
        elif ch == "\\":
            if i + 1 < n:
                parts.append(script[i + 1])
            i += 2
        elif ch == "$":
            text, i = _dollar(script, i, state)
            if text and any(c in text for c in " \t\n"):
                raise _Unsupported("an unquoted variable holding spaces (word splitting)")
            parts.append(text)
        elif ch == "`":
            raise _Unsupported("command substitution (`...`)")
        elif ch in "*?[" and not parts and script[i:i + 2] != "[ ":
            raise _Unsupported(f"a file name pattern ({ch})")
        elif ch == "~" and not parts:
            parts.append(state.env.get("HOME", "/root"))
            i += 1
        else:
            parts.append(ch)
            i += 1
    return _Word("".join(parts), quoted, assignment), i


def _dollar(script: str, i: int, state: _State) -> tuple[str, int]:
    nxt = script[i + 1:i + 2]
    if nxt == "(":
        raise _Unsupported("command substitution or arithmetic ($(...))")
    if nxt == "{":
        end = script.find("}", i + 2)
        if end < 0:
            raise _Unsupported("an unterminated ${")
        name = script[i + 2:end]
        if not (_NAME.fullmatch(name) or name.isdigit()):
            raise _Unsupported(f"the parameter expansion ${{{name}}}")
        return _lookup(name, state), end + 1
    if nxt == "?":
        return str(state.status), i + 2
    if nxt.isdigit():
        return _lookup(nxt, state), i + 2
    if nxt in ("$", "!", "#", "@", "*", "-"):
        raise _Unsupported(f"the special parameter ${nxt}")
    m = _NAME.match(script, i + 1)
    if m is None:
        return "$", i + 1
    return _lookup(m.group(0), state), m.end()


def _lookup(name: str, state: _State) -> str:
    if name in state.env:
        return state.env[name]
    if state.nounset:
        raise _Unsupported(f"${name} is not set (set -u)")
    return ""


def _run_script(script: str, state: _State) -> None:
    # Expansion happens as commands run (``X=1; echo $X``), so the script is tokenized one list at a time.
    rest = script
    while rest.strip():
        cut = _list_end(rest)
        _run_list(rest[:cut], state)
        rest = rest[cut + 1:]


def _list_end(script: str) -> int:
    """Where the first ``;``/newline-terminated list ends (outside quotes), or ``len(script)``."""
    i, n = 0, len(script)
    while i < n:
        ch = script[i]
        if ch == "'":
            end = script.find("'", i + 1)
            i = n if end < 0 else end + 1
            continue
        if ch == '"':
            i += 1
            while i < n and script[i] != '"':
                i += 2 if script[i] == "\\" else 1
            i += 1
            continue
        if ch == "\\":
            i += 2
            continue
        if ch == "#" and (i == 0 or script[i - 1] in " \t\n;"):
            end = script.find("\n", i)
            return n if end < 0 else end
        if ch == "\n" or (ch == ";" and not script.startswith(";;", i)):
            return i
        i += 1
    return n


def _run_list(text: str, state: _State) -> None:
    """``a && b || c``: words are expanded just before their command runs."""
    pieces: list[tuple[str, str]] = []  # (operator before, command text)
    op = ""
    i, start, n = 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "'\"":
            end = text.find(ch, i + 1)
            while ch == '"' and end > 0 and text[end - 1] == "\\":
                end = text.find(ch, end + 1)
            i = n if end < 0 else end + 1
            continue
        if ch == "\\":
            i += 2
            continue
        if text.startswith("&&", i) or text.startswith("||", i):
            pieces.append((op, text[start:i]))
            op = text[i:i + 2]
            i += 2
            start = i
            continue
        i += 1
    pieces.append((op, text[start:]))
    for k, (before, command) in enumerate(pieces):
        if before == "&&" and state.status != 0:
            continue
        if before == "||" and state.status == 0:
            continue
        tokens = _tokens(command, state)
        if not tokens:
            if before:
                raise _Unsupported("a list ending in && or ||")
            continue
        _simple(tokens, state)
        # set -e: only the last command of an && / || list that ran ends the script by failing
        if state.errexit and state.status != 0 and k == len(pieces) - 1:
            raise _Exit(state.status)


def _simple(tokens: list[_Word | _Redirect | str], state: _State) -> None:
    words: list[_Word] = []
    sink: str | None = None  # where standard output goes: None for the log, else a file
    for tok in tokens:
        if isinstance(tok, _Word):
            words.append(tok)
        elif isinstance(tok, _Redirect):
            if tok.fd == "1" and tok.op in (">", ">>"):
                sink = None if tok.target in ("/dev/stdout", "/dev/stderr") else tok.target
            elif tok.fd == "1" and tok.op == ">&" and tok.target in ("1", "2"):
                sink = None  # stdout to stderr: the log has both
            # stderr elsewhere, stdin from a file: the commands followed here neither read nor warn
        else:
            what = {"&": "a background job (&)", "|": "a pipe (|)", "(": "a subshell", ")": "a subshell",
                    ";;": "a case statement"}.get(tok, repr(tok))
            raise _Unsupported(what)
    if sink is not None:
        saved = (list(state.out), state.partial, state.partial_at)
        _command(words, state)
        state.out, state.partial, state.partial_at = saved  # written to a file, not to the log
        return
    _command(words, state)


def _command(words: list[_Word], state: _State) -> None:
    # leading assignments
    while words and words[0].assignment:
        name, _, value = words[0].text.partition("=")
        state.env[name] = value
        words = words[1:]
        state.status = 0
    if not words:
        return
    name, args = words[0].text, [w.text for w in words[1:]]
    if name in _KEYWORDS and not words[0].quoted:
        raise _Unsupported(f"`{name}` (shell control flow)")
    program = name.rsplit("/", 1)[-1]
    handler = _BUILTINS.get(program)
    if handler is None:
        raise _Unsupported(f"the program `{name}`, which the simulated node does not run")
    state.status = handler(args, state)


# --- commands --------------------------------------------------------------------------------------------


def _echo(args: list[str], state: _State) -> int:
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        newline = newline and "n" not in args[0]
        escapes = ("e" in args[0]) or (escapes and "E" not in args[0])
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text, stop = _escapes(text)
        if stop:
            newline = False
    state.write(text + ("\n" if newline else ""))
    return 0


def _escapes(text: str) -> tuple[str, bool]:
    """Backslash escapes of ``echo -e``/``printf``; True when ``\\c`` cut the output short."""
    out: list[str] = []
    i = 0
    table = {"n": "\n", "t": "\t", "\\": "\\", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "e": "\x1b"}
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "c":
                return "".join(out), True
            if nxt in table:
                out.append(table[nxt])
                i += 2
                continue
            if nxt == "0" or nxt.isdigit():
                m = re.match(r"0?([0-7]{1,3})", text[i + 1:])
                if m:
                    out.append(chr(int(m.group(1), 8)))
                    i += 1 + m.end()
                    continue
        out.append(ch)
        i += 1
    return "".join(out), False


_FORMAT = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d+))?([sdifxXocb%])")


def _printf(args: list[str], state: _State) -> int:
    if not args:
        raise _Unsupported("printf without a format")
    fmt, values = args[0], args[1:]
    while True:
        used = 0
        out: list[str] = []
        pos = 0
        for m in _FORMAT.finditer(fmt):
            text, stop = _escapes(fmt[pos:m.start()])
            out.append(text)
            if stop:
                state.write("".join(out))
                return 0
            pos = m.end()
            flags, width, precision, conv = m.groups()
            if conv == "%":
                out.append("%")
                continue
            value = values[used] if used < len(values) else ""
            used += 1
            spec = f"%{flags}{width}{'.' + precision if precision else ''}"
            try:
                if conv in "di":
                    out.append((spec + "d") % int(value or 0))
                elif conv in "xXo":
                    out.append((spec + conv) % int(value or 0))
                elif conv == "f":
                    out.append((spec + "f") % float(value or 0))
                elif conv == "c":
                    out.append((spec + "s") % value[:1])
                elif conv == "b":
                    out.append((spec + "s") % _escapes(value)[0])
                else:
                    out.append((spec + "s") % value)
            except ValueError:
                raise _Unsupported(f"printf {fmt!r} with the argument {value!r}") from None
        if "%" in fmt[pos:].replace("%%", ""):
            raise _Unsupported(f"the printf format {fmt!r}")
        text, stop = _escapes(fmt[pos:])
        out.append(text)
        state.write("".join(out))
        if stop or used == 0 or used >= len(values):
            return 0
        values = values[used:]


def _sleep(args: list[str], state: _State) -> int:
    if not args:
        raise _Unsupported("sleep without a duration")
    total = 0.0
    for arg in args:
        if arg in ("infinity", "inf"):
            state.forever = True
            raise _Exit(0)
        m = _SLEEP_ARG.match(arg)
        if m is None:
            raise _Unsupported(f"sleep {arg}")
        total += float(m.group(1)) * _UNITS[m.group(2) or "s"]
    state.now += total
    return 0


def _exit(args: list[str], state: _State) -> int:
    if not args:
        raise _Exit(state.status)
    try:
        raise _Exit(int(args[0]))
    except ValueError:
        raise _Unsupported(f"exit {args[0]}") from None


def _set(args: list[str], state: _State) -> int:
    for arg in args:
        if arg in ("-o", "pipefail") or arg == "+o":
            continue
        if not re.fullmatch(r"[-+][eu]+", arg):
            raise _Unsupported(f"set {arg}")
        on = arg[0] == "-"
        if "e" in arg:
            state.errexit = on
        if "u" in arg:
            state.nounset = on
    return 0


def _export(args: list[str], state: _State) -> int:
    for arg in args:
        name, eq, value = arg.partition("=")
        if not _NAME.fullmatch(name):
            raise _Unsupported(f"export {arg}")
        if eq:
            state.env[name] = value
    return 0


def _unset(args: list[str], state: _State) -> int:
    for arg in args:
        state.env.pop(arg, None)
    return 0


def _hostname(args: list[str], state: _State) -> int:
    if args:
        raise _Unsupported("hostname with arguments")
    state.write(state.env.get("HOSTNAME", "") + "\n")
    return 0


def _date(args: list[str], state: _State) -> int:
    if args:
        raise _Unsupported("date with arguments")
    from datetime import UTC, datetime

    at = datetime.fromtimestamp(math.floor(state.start + state.now), UTC)
    state.write(at.strftime("%a %b ") + f"{at.day:2d}" + at.strftime(" %H:%M:%S UTC %Y") + "\n")
    return 0


_BUILTINS = {
    "echo": _echo,
    "printf": _printf,
    "sleep": _sleep,
    "exit": _exit,
    "true": lambda args, state: 0,
    ":": lambda args, state: 0,
    "false": lambda args, state: 1,
    "set": _set,
    "export": _export,
    "unset": _unset,
    "cd": lambda args, state: 0,
    "hostname": _hostname,
    "date": _date,
}
