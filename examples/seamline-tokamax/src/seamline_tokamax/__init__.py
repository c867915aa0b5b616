"""seamline-tokamax: tokamax's attention as a seamline ``Attention``, registered as ``tokamax``.

A third-party seamline component: it depends on ``seamline-contracts`` and tokamax
alone and lives in a top-level module of its own. Importing this package does not
import tokamax (that takes seconds); the first traced attention call does.
"""

from seamline_tokamax.attention import Implementation, TokamaxAttention, TokamaxConfig

__all__ = ["Implementation", "TokamaxAttention", "TokamaxConfig"]
