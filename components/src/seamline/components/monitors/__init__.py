"""Monitors: observers of a run (``log``). They never configure logging themselves."""
