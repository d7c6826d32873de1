"""The ``pumice`` command."""
