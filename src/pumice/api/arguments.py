"""Plugin and action arguments, read as Volcano reads them (``framework/arguments.go``).

Volcano decodes ``volcano-scheduler.conf`` with a YAML decoder, so an argument arrives as the YAML
value's own type, and each plugin reads its keys with ``GetInt``, ``GetFloat64``, ``GetBool`` or
``GetString``. The rules, here as there:

* a key that is absent leaves the plugin's default;
* ``get_int`` takes an integer only (not ``"10"``, not ``1.5``, not ``true``);
* ``get_float`` takes a float or an integer;
* ``get_bool`` takes a boolean, or a string Go's ``strconv.ParseBool`` accepts (``"true"``,
  ``"False"``, ``"1"``, ``"t"``, ...);
* ``get_string`` takes a string only;
* any other value leaves the default. Volcano logs a warning that few people read; pumice logs one
  that names the plugin (or action), the argument and the value, once per configuration.

Range rules (a negative weight, a factor below 1) belong to each plugin, as in Volcano; a plugin
that replaces a value it read says so with :meth:`Arguments.warn`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TypeVar

log = logging.getLogger("pumice.scheduler")

T = TypeVar("T")

#: The strings Go's ``strconv.ParseBool`` accepts.
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class Arguments(Mapping[str, object]):
    """The ``arguments`` of one plugin (or action) of a configuration.

    ``owner`` names it in warnings (``plugin binpack``, ``action preempt``). Warnings are logged
    once per key for the life of the object: a configuration's arguments are parsed once and read
    again by every session.
    """

    def __init__(self, owner: str, values: Mapping[str, object] | None = None) -> None:
        self.owner = owner
        self._values: dict[str, object] = dict(values or {})
        self._warned: set[str] = set()

    # --- Mapping ---------------------------------------------------------------------------------
    def __getitem__(self, key: str) -> object:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Arguments({self.owner!r}, {self._values!r})"

    # --- Volcano's getters ----------------------------------------------------------------------
    def get_int(self, key: str, default: int) -> int:
        """``GetInt``: an integer, else ``default``."""
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        return self._wrong_type(key, value, "an integer", default)

    def get_float(self, key: str, default: float) -> float:
        """``GetFloat64``: a float or an integer, else ``default``."""
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        return self._wrong_type(key, value, "a number", default)

    def get_bool(self, key: str, default: bool) -> bool:
        """``GetBool``: a boolean or a string ``strconv.ParseBool`` accepts, else ``default``."""
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            if value in _TRUE:
                return True
            if value in _FALSE:
                return False
        return self._wrong_type(key, value, "true or false", default)

    def get_string(self, key: str, default: str) -> str:
        """``GetString``: a string, else ``default``."""
        if key not in self._values:
            return default
        value = self._values[key]
        if isinstance(value, str):
            return value
        return self._wrong_type(key, value, "a string", default)

    # --- warnings -------------------------------------------------------------------------------
    def warn(self, key: str, message: str) -> None:
        """Log ``message`` about argument ``key`` (once per key)."""
        if key in self._warned:
            return
        self._warned.add(key)
        log.warning("%s: argument %s: %s", self.owner, key, message)

    def _wrong_type(self, key: str, value: object, wanted: str, default: T) -> T:
        self.warn(key, f"expected {wanted}, got {value!r}; using the default {default!r}")
        return default
