"""Executors that reach beyond this process (``ray``: an actor pool on a Ray cluster)."""
