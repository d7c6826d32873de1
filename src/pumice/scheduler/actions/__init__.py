"""Actions of a scheduling cycle. Importing this package registers every built-in action."""

from pumice.scheduler.actions import allocate, backfill, enqueue, preempt, reclaim  # noqa: F401
