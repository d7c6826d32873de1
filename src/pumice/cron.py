"""Cron schedules as Volcano's CronJob controller reads them (``robfig/cron/v3`` ``ParseStandard``).

Five fields (minute, hour, day of month, month, day of week) with ``*``, ``?``, lists, ranges, steps and
three-letter names; or a descriptor: ``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/
``@midnight``, ``@hourly``, ``@every <duration>``. A ``TZ=``/``CRON_TZ=`` prefix names the time zone. As in
robfig/cron, when both day fields are restricted a day matches either; when one starts with ``*`` both must.
Written here rather than taken from a library because the accepted syntax is part of the contract: Volcano's
webhook refuses exactly what ``ParseStandard`` refuses (seconds fields, ``L``, ``W``, ``#``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["CronError", "Schedule", "parse_schedule", "parse_time_zone"]

_STAR = 1 << 63  # robfig's starBit: the field was written as * or ?
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, {}), (0, 23, {}), (1, 31, {}), (1, 12, {n: i + 1 for i, n in enumerate(_MONTHS)}),
    (0, 6, {n: i for i, n in enumerate(_DAYS)}),
)
_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class CronError(ValueError):
    """A schedule ``ParseStandard`` would refuse."""


def parse_time_zone(name: str) -> ZoneInfo:
    """An IANA time zone (``CronError`` if unknown); ``""`` and ``UTC`` are UTC."""
    try:
        return ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise CronError(f"unknown time zone {name!r}") from err


def _value(text: str, names: dict[str, int]) -> int:
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        raise CronError(f"failed to parse int from {text}")
    return int(text)


def _field(text: str, low: int, high: int, names: dict[str, int]) -> int:
    bits = 0
    for part in text.split(","):
        range_text, _, step_text = part.partition("/")
        extra = 0
        if range_text in ("*", "?"):
            start, end, extra = low, high, _STAR
        else:
            first, dash, last = range_text.partition("-")
            start = _value(first, names)
            end = _value(last, names) if dash else start
        if step_text:
            step = _value(step_text, {})
            if step == 0:
                raise CronError(f"step of range should be a positive number: {part}")
            if "-" not in range_text and range_text not in ("*", "?"):
                end = high  # "N/step" means N-max/step
            if step > 1:
                extra = 0
        else:
            step = 1
        if start < low:
            raise CronError(f"beginning of range ({start}) below minimum ({low}): {part}")
        if end > high:
            raise CronError(f"end of range ({end}) above maximum ({high}): {part}")
        if start > end:
            raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {part}")
        for v in range(start, end + 1, step):
            bits |= 1 << v
        bits |= extra
    return bits


@dataclass(frozen=True)
class Schedule:
    """A parsed schedule: bit sets per field (``every`` seconds for ``@every``) and its time zone."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    every: float = 0.0
    zone: ZoneInfo | None = None

    def _day_matches(self, t: datetime) -> bool:
        dom = self.dom >> t.day & 1
        dow = self.dow >> ((t.weekday() + 1) % 7) & 1
        if self.dom & _STAR or self.dow & _STAR:
            return bool(dom and dow)
        return bool(dom or dow)

    def next(self, after: datetime) -> datetime | None:
        """The first activation strictly after ``after`` (an aware datetime), or None within five years."""
        if self.every:
            step = max(1.0, float(int(self.every)))  # robfig rounds @every down to whole seconds, at least 1 s
            base = after.replace(microsecond=0)
            return base + timedelta(seconds=step)
        zone = self.zone or UTC
        t = after.astimezone(zone).replace(second=0, microsecond=0) + timedelta(minutes=1)
        limit = t.year + 5
        while t.year <= limit:
            if not self.month >> t.month & 1:
                t = (t.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(day=1)
                continue
            if not self._day_matches(t):
                t = (t + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if not self.hour >> t.hour & 1:
                t = (t + timedelta(hours=1)).replace(minute=0)
                continue
            if not self.minute >> t.minute & 1:
                t = t + timedelta(minutes=1)
                continue
            return t.astimezone(UTC)
        return None


def parse_schedule(spec: str, time_zone: str | None = None) -> Schedule:
    """Parse ``spec`` as ``cron.ParseStandard`` does; ``time_zone`` (a CronJob's ``timeZone``) applies unless
    the spec names its own with ``TZ=``. ``CronError`` says what is wrong."""
    text = spec.strip()
    zone_name = time_zone
    if text.startswith(("TZ=", "CRON_TZ=")):
        head, _, text = text.partition(" ")
        zone_name = head.split("=", 1)[1]
        text = text.strip()
    zone = parse_time_zone(zone_name) if zone_name is not None else None
    if not text:
        raise CronError("empty spec string")
    if text.startswith("@every "):
        rest = text[len("@every "):].strip()
        seconds, pos = 0.0, 0
        for m in _GO_DURATION.finditer(rest):
            if m.start() != pos:
                break
            seconds += float(m.group(1)) * _UNITS[m.group(2)]
            pos = m.end()
        if not rest or pos != len(rest):
            raise CronError(f"failed to parse duration @every {rest}")
        return Schedule(every=seconds, zone=zone)
    if text.startswith("@"):
        if text not in _DESCRIPTORS:
            raise CronError(f"unrecognized descriptor: {text}")
        text = _DESCRIPTORS[text]
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: {text}")
    minute, hour, dom, month, dow = (_field(f, low, high, names)
                                     for f, (low, high, names) in zip(fields, _FIELDS, strict=True))
    return Schedule(minute, hour, dom, month, dow, zone=zone)
