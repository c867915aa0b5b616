"""The ``seamline`` command."""
