"""The loader seam: where documents come from."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from typing import ClassVar, TypeVar

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import Loaded, Shard
from seamline.contracts.versions import Kind

LoaderConfigT = TypeVar("LoaderConfigT", bound=ComponentConfig)


class Loader(Component[LoaderConfigT], abc.ABC):
    """Yields documents in a stable order.

    The same input gives the same ids in the same order on every run. Shards are
    disjoint and together complete. ``after`` is a cursor from an earlier
    :class:`Loaded`; reading resumes with the item right after it. A document
    that cannot be read is yielded as a ``DocumentError``, never raised.
    """

    kind: ClassVar[Kind] = "loader"

    @abc.abstractmethod
    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        """Yield the shard's items in order, starting after the cursor ``after``."""
