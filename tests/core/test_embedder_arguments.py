"""What ``Embedder`` says to a caller who passes it the wrong thing, and after ``close()``.

python.md promises that a keyword that is not a valid pipeline section is a
``ConfigError`` placed by its key path, and that a bad argument to ``encode`` is refused
before any work with a message saying what it must be. The toy model keeps these fast.
"""

from __future__ import annotations

from typing import Any

import pytest

from seamline.contracts import ConfigError
from seamline.core.embedder import Embedder
from tests.core.toy import toy_registry


def toy_embedder(**keywords: Any) -> Embedder:
    keywords.setdefault("model", {"use": "toy"})
    return Embedder(attention="native", registry=toy_registry(), **keywords)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"model": "bert-encoder"}, r"\['model'\]: model is a str, not a mapping"),
        ({"model": None}, r"\['model'\]: model is empty \(null\), not a mapping"),
        ({"model": [1, 2]}, r"\['model'\]: model is a list, not a mapping"),
        ({"run": "x"}, r"\['run'\]: run is a str, not a mapping"),
        ({"run": [("batch_size", 8)]}, r"\['run'\]: run is a list, not a mapping"),
        ({"trust": "x"}, r"\['trust'\]: trust is a str, not a mapping"),
    ],
)
def test_a_keyword_that_is_not_a_mapping_is_a_config_error_placed_by_its_key(
    keywords: dict[str, Any], message: str
) -> None:
    # dict("bert-encoder") raised "ValueError: dictionary update sequence element #0 ...".
    with pytest.raises(ConfigError, match=r"^Embedder\(\.\.\.\)" + message) as caught:
        toy_embedder(**keywords)
    assert "give it as a mapping" in str(caught.value)
