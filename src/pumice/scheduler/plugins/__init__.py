"""Scheduling policies (listed in :mod:`pumice.scheduler.registry`)."""
