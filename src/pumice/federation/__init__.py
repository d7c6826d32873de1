"""``pumice.federation``: two-level scheduling over several clusters (see docs/federation.md)."""
