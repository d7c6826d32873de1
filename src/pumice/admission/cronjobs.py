"""Volcano's CronJob webhook (``pkg/webhooks/admission/cronjobs/validate``) and the CRD's defaults.

Defaults (CRD markers): ``concurrencyPolicy: Allow``, ``suspend: false``, ``successfulJobsHistoryLimit: 3``,
``failedJobsHistoryLimit: 1``. Validation on create and update: a schedule ``cron.ParseStandard`` accepts and
that does not name a time zone itself, a known ``timeZone`` (not ``Local``), and a name short enough for the
``-<minutes>`` suffix of the jobs it creates (52 characters).
"""

from __future__ import annotations

import re
from typing import Any

from pumice.cron import CronError, parse_schedule, parse_time_zone
from pumice.store import Denied

__all__ = ["default_cronjob", "validate_cronjob"]

Obj = dict[str, Any]
_TZ_PART = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_MAX_NAME = 63 - 11
_POLICIES = ("Allow", "Forbid", "Replace")


def default_cronjob(obj: Obj) -> None:
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, dict):
        return  # not an object: the schema refuses it, nothing to default
    spec = dict(spec or {})
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    obj["spec"] = spec


def validate_cronjob(obj: Obj) -> None:
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        raise Denied("validatecronjob.volcano.sh", "spec: Invalid value: must be an object")
    name = str((obj.get("metadata") or {}).get("name") or "")
    problems: list[str] = []
    if not isinstance(spec.get("jobTemplate"), dict):
        problems.append("spec.jobTemplate: Required value")
    schedule = spec.get("schedule")
    if not schedule:
        problems.append("schedule is required, but got empty")
    elif "TZ" in str(schedule):
        problems.append("schedule should not contain TZ or CRON_TZ, TZ should only be set in the timeZone field")
    else:
        try:
            parse_schedule(str(schedule))
        except CronError:
            problems.append("schedule is not a valid cron expression")
    zone = spec.get("timeZone")
    if zone is not None:
        if not zone:
            problems.append("timeZone must be nil or non-empty string, got empty string")
        else:
            if any(p in (".", "..") or p.startswith("-") or not _TZ_PART.match(p) for p in str(zone).split("/")):
                problems.append("unknown timeZone")
            if str(zone).lower() == "local":
                problems.append("timeZone can't be Local, and must be defined in https://www.iana.org/time-zones")
            else:
                try:
                    parse_time_zone(str(zone))
                except CronError:
                    problems.append("invalid timeZone")
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy not in _POLICIES:  # the CRD's enum
        problems.append(f'spec.concurrencyPolicy: Unsupported value: "{policy}": supported values: "Allow", '
                        '"Forbid", "Replace"')
    for field in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:  # the CRD's minimum
            problems.append(f"spec.{field}: Invalid value: {value}: should be greater than or equal to 0")
    if len(name) > _MAX_NAME:
        problems.append(f"cronJob name must be no more than {_MAX_NAME} characters to accommodate job name suffix "
                        "(max 63 total)")
    elif not _QUALIFIED_NAME.match(name):
        problems.append(f'invalid cronJob name "{name}"')
    if problems:
        raise Denied("validatecronjob.volcano.sh", "; ".join(problems))
