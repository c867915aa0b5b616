"""Does memory stay flat over long runs: ``soak`` (200,000 documents through one
``seamline run``, its RSS every batch, nothing lost) and ``lancedb_cache`` (the
``lancedb`` sink over 1,000 commits, its cache bound against none).
"""
