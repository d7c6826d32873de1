"""Actions of a scheduling cycle (listed in :mod:`pumice.scheduler.registry`)."""
