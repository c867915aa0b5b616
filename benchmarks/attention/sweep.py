"""Every installed attention implementation over sequence lengths, side by side.

The benchmark lives in the package (``seamline.adapters.bench_attention``) so that
``seamline bench attention`` runs it from any installation; this script is the
same thing for a checkout: ``.venv/bin/python -m benchmarks.attention.sweep --help``.
"""

from __future__ import annotations

from seamline.adapters.bench_attention import main

if __name__ == "__main__":
    raise SystemExit(main())
