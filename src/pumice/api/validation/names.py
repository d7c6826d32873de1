"""Kubernetes' string formats (``k8s.io/apimachinery/pkg/util/validation``): DNS names, qualified names, label
values, and the messages that say what is wrong with a string.

Each ``is_*`` function answers the list of problems (empty when the value is valid), worded as Kubernetes
words them, so that kubectl users read what they would read from a real cluster. Answers are cached: a
cluster repeats the same few names, label keys and values many times.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

__all__ = [
    "NameCheck",
    "is_c_identifier",
    "is_config_map_key",
    "is_dns1035_label",
    "is_dns1123_label",
    "is_dns1123_subdomain",
    "is_env_var_name",
    "is_label_value",
    "is_port_name",
    "is_qualified_name",
    "max_len_error",
    "name_is_dns1035_label",
    "name_is_dns_label",
    "name_is_dns_subdomain",
    "path_segment_name",
    "regex_error",
]

#: ``(name, prefix) -> problems``: how a kind's names are checked (``prefix``: a ``generateName``).
NameCheck = Callable[[str, bool], tuple[str, ...]]

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_ENV_VAR_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"

_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1035_LABEL = re.compile(f"^{_DNS1035_LABEL_FMT}$")
_QUALIFIED_NAME = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")
_ENV_VAR = re.compile(f"^{_ENV_VAR_FMT}$")
_CONFIG_MAP_KEY = re.compile(f"^{_CONFIG_MAP_KEY_FMT}$")
_C_IDENTIFIER = re.compile(f"^{_C_IDENTIFIER_FMT}$")
_PORT_NAME_CHARSET = re.compile("^[-a-z0-9]+$")
_ONE_LETTER = re.compile("[a-z]")

_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
                      "must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                          "'.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                      "alphabetic character, and end with an alphanumeric character")
_QUALIFIED_NAME_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
                       "alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                    "and must start and end with an alphanumeric character")
_ENV_VAR_MSG = ("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
                "and must not start with a digit")
_CONFIG_MAP_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_C_IDENTIFIER_MSG = ("a valid C identifier must start with alphabetic character or '_', followed by a string of "
                     "alphanumeric characters or '_'")

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``: the message, examples of valid values, and the regular expression."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def _format(value: str, most: int | None, pattern: re.Pattern[str], message: str, fmt: str,
            *examples: str) -> tuple[str, ...]:
    """The problems of ``value`` as one of Kubernetes' string formats: too long, not matching the format."""
    problems = []
    if most is not None and len(value) > most:
        problems.append(max_len_error(most))
    if not pattern.match(value):
        problems.append(regex_error(message, fmt, *examples))
    return tuple(problems)


def _dots(value: str) -> tuple[str, ...]:
    """``.`` and ``..`` are no file names: no key of a volume's files may be (or start with) them."""
    if value == ".":
        return ("must not be '.'",)
    if value == "..":
        return ("must not be '..'",)
    return ("must not start with '..'",) if value.startswith("..") else ()


@lru_cache(maxsize=8192)
def is_dns1123_label(value: str) -> tuple[str, ...]:
    return _format(value, DNS1123_LABEL_MAX, _DNS1123_LABEL, _DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name",
                   "123-abc")


@lru_cache(maxsize=8192)
def is_dns1123_subdomain(value: str) -> tuple[str, ...]:
    return _format(value, DNS1123_SUBDOMAIN_MAX, _DNS1123_SUBDOMAIN, _DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT,
                   "example.com")


@lru_cache(maxsize=1024)
def is_dns1035_label(value: str) -> tuple[str, ...]:
    return _format(value, DNS1123_LABEL_MAX, _DNS1035_LABEL, _DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name",
                   "abc-123")


@lru_cache(maxsize=8192)
def is_qualified_name(value: str) -> tuple[str, ...]:
    """A label key, an annotation key, a finalizer: an optional DNS subdomain prefix and ``/``, then a name."""
    problems: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems.extend("prefix part " + p for p in is_dns1123_subdomain(prefix))
    else:
        return ("a qualified name " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                  "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",)
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX:
        problems.append("name part " + max_len_error(QUALIFIED_NAME_MAX))
    if not _QUALIFIED_NAME.match(name):
        problems.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name",
                                                   "123-abc"))
    return tuple(problems)


@lru_cache(maxsize=8192)
def is_label_value(value: str) -> tuple[str, ...]:
    return _format(value, LABEL_VALUE_MAX, _LABEL_VALUE, _LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value",
                   "12345")


@lru_cache(maxsize=1024)
def is_env_var_name(value: str) -> tuple[str, ...]:
    return _format(value, None, _ENV_VAR, _ENV_VAR_MSG, _ENV_VAR_FMT, "my.env-name", "MY_ENV.NAME",
                   "MyEnvName1") + _dots(value)


@lru_cache(maxsize=1024)
def is_config_map_key(value: str) -> tuple[str, ...]:
    return _format(value, DNS1123_SUBDOMAIN_MAX, _CONFIG_MAP_KEY, _CONFIG_MAP_KEY_MSG, _CONFIG_MAP_KEY_FMT,
                   "key.name", "KEY_NAME", "key-name") + _dots(value)


def is_c_identifier(value: str) -> tuple[str, ...]:
    return _format(value, None, _C_IDENTIFIER, _C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")


@lru_cache(maxsize=256)
def is_port_name(value: str) -> tuple[str, ...]:
    problems = []
    if len(value) > 15:
        problems.append(max_len_error(15))
    if not _PORT_NAME_CHARSET.match(value):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _ONE_LETTER.search(value):
        problems.append("must contain at least one letter (a-z)")
    if "--" in value:
        problems.append("must not contain consecutive hyphens")
    if value and (value[0] == "-" or value[-1] == "-"):
        problems.append("must not begin or end with a hyphen")
    return tuple(problems)


def _mask_trailing_dash(name: str) -> str:
    """A ``generateName`` may end with ``-`` (a suffix follows): checked as if it ended with ``a``."""
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def name_is_dns_subdomain(name: str, prefix: bool) -> tuple[str, ...]:
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool) -> tuple[str, ...]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> tuple[str, ...]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def path_segment_name(name: str, prefix: bool) -> tuple[str, ...]:
    """``path.ValidatePathSegmentName``: any name that can be one segment of a URL path."""
    if not prefix and name in (".", ".."):
        return (f"may not be '{name}'",)
    problems = []
    for bad in ("/", "%"):
        if bad in name:
            problems.append(f"may not contain '{bad}'")
    return tuple(problems)
