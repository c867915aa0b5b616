"""``seamline search`` on an output an attacker edited: one located line and exit code 2, or a
safe answer; never a traceback, a hang, or a file outside the output opened or printed.

Each tampering (:mod:`tests.adapters.tampered_search`) is attempted once per session
with relative paths from a working directory of its own (the ``tampered_inputs``
fixture, whose results docs/reliability.md shows), and once more here with absolute
paths. Before the manifest was validated and the files it names were confined to its
folder, 28 of the 34 that could be run ended in a traceback, a hang, an answer where a
refusal was due, an escape sequence sent to the terminal or a secret printed; the two
others (``/dev/zero`` as the records file) read without end.
"""

from __future__ import annotations

import re

import pytest

from tests.adapters.tampered_search import SCENARIOS
from tests.outcome_tables import comparable, out_of_date, page_block
from tests.tampered_inputs import BOUND_S, NAME, REFUSED, Seen, TamperedInputs, render

KEYS = [t.key for t in SCENARIOS]

LOCATED = {
    "outputs-junk": r"out/emb.manifest.json:\d+:\d+: outputs: Input should be a valid dict",
    "model-no-with": r"out/emb.manifest.json:\d+:\d+: missing required field 'model.with'",
    "wrong-type": r"out/emb.manifest.json:\d+:\d+: outputs.files.records: Input should be a "
    r"valid string \(got 5\)",
    "model-config": r"out/emb.manifest.json:\d+:\d+: model.with.max_length: Input should be a "
    "valid integer",
    "not-json": r"out/emb.manifest.json:\d+:\d+: the manifest is not JSON",
    "newer-format": r"out/emb.manifest.json:\d+:\d+: written by a newer seamline",
    "huge-manifest": r"out/emb.manifest.json: the manifest is larger than 1,048,576 bytes",
    "manifest-fifo": r"out/emb.manifest.json: the manifest is a FIFO",
    "manifest-link": r"out/emb.manifest.json: the manifest is a symbolic link, not a regular",
    "records-absolute": r"outputs.files.records: '/etc/passwd' is a path outside ",
    "records-dotdot": r"outputs.files.records: '../secret.jsonl' climbs out of its folder",
    "records-dev-zero": r"outputs.files.records: '/dev/zero' is a path outside ",
    "records-escape": r"describes another output \(.*out/emb\.errors\.jsonl, .*out/emb\ufffd\]0;"
    r"owned\ufffd\.jsonl\)",
    "model-untrusted": r"out/emb.manifest.json:\d+:\d+: model component 'evil' from "
    "evil-models 6.6.6 is untrusted",
    "model-import-path": r"out/emb.manifest.json:\d+:\d+: 'evil_models:Backdoor' looks like an "
    "import path",
    "records-link": r"outputs.files.records: 'emb.jsonl' leads through a symbolic link outside",
    "records-link-dev-zero": r"'emb.jsonl' leads through a symbolic link outside",
    "records-fifo": r"out/emb.jsonl \(the records file that .*emb.manifest.json names\) is a FIFO",
    "line-not-json": r"out/emb.jsonl:2: not a JSON record",
    "records-cut-at-a-line": r"out/emb.jsonl holds \d+ records, but .*/emb.manifest.json counted",
    "records-value-edited": r"out/emb.jsonl is not the records file that .*/emb.manifest.json "
    r"was published with \(another sha256\)",
    "record-wrong-type": r"out/emb.jsonl:2: a record's span: ",
    "embedding-short": r"out/emb.jsonl:2: a vector of 31 values where the index's model makes 32",
    "embedding-nan": r"out/emb.jsonl:3: not a JSON record \(NaN is not a JSON value\)",
    "huge-line": r"out/emb.jsonl:1: line 1 is longer than 16,777,216 bytes",
    "npy-objects": r"out/emb.npy: a .npy array of object and shape \(3, 2\)",
    "npy-short-index": r"out/emb.index.jsonl: 2 rows for the 3 vectors of .*out/emb.npy",
    "npy-long-index": r"out/emb.index.jsonl: more rows than the 3 vectors of .*out/emb.npy",
    "parquet-garbage": r"out/emb.parquet: not Parquet as the parquet sink writes it",
    "parquet-rows-dropped": r"out/emb.parquet holds 2 records, but .*/emb.manifest.json counted 3",
    "parquet-value-changed": r"out/emb.parquet is not the parquet file that .*/emb.manifest.json "
    r"was published with \(another sha256\)",
    "lance-link": r"outputs.files.table: 'emb.lance' leads through a symbolic link outside",
    "lance-fifo": r"out/emb.lance \(the table that .*\) holds .*, which is a FIFO",
    "lance-version-gone": r"out/emb.lance: .*out/emb.manifest.json was published with version "
    r"41 of the table \(outputs.table_version\), which the table no longer has .* Run the "
    r"pipeline that writes it again",
    "lance-version-huge": r"out/emb.manifest.json:\d+:\d+: outputs.table_version: Input should "
    r"be less than or equal to 9223372036854775807",
    "index-empty": r"'\.' names no output: give the file or table a pipeline's sink published",
    "k-huge": r"-k \(how many results\) is from 1 to 10,000, not 1180591620717411303424",
    "k-zero": r"-k \(how many results\) is from 1 to 10,000, not 0",
    "k-negative": r"-k \(how many results\) is from 1 to 10,000, not -3",
}
"""What each refusal's line says: the file, and the line or field, where one applies."""


@pytest.fixture(scope="module")
def tampered_absolute(tmp_path_factory: pytest.TempPathFactory) -> TamperedInputs:
    """The same tamperings, with every path given absolute."""
    return TamperedInputs(tmp_path_factory.mktemp("tampered-absolute"), absolute=True)


def assert_held(seen: Seen) -> None:
    assert seen.exit_code == seen.tampering.exit_code, seen.output
    assert "Traceback" not in seen.output, seen.output
    assert seen.opened == (), f"opened {seen.opened} outside the output"
    assert seen.printed == (), "printed a secret from outside the output"
    assert seen.seconds < BOUND_S
    if seen.tampering.exit_code == REFUSED:
        assert len(seen.lines) == 1, seen.output
        assert seen.lines[0].startswith("error: ")
        assert re.search(LOCATED[seen.tampering.key], seen.lines[0]), seen.lines[0]


@pytest.mark.parametrize("key", KEYS)
def test_a_tampered_output_is_refused_in_one_located_line(
    tampered_inputs: TamperedInputs, key: str
) -> None:
    assert_held(tampered_inputs[key])


@pytest.mark.parametrize("key", KEYS)
def test_the_same_with_absolute_paths(tampered_absolute: TamperedInputs, key: str) -> None:
    assert_held(tampered_absolute[key])


def test_an_answer_shows_stored_text_as_written_and_never_a_named_file(
    tampered_inputs: TamperedInputs,
) -> None:
    for key in ("corpus-root", "metadata-path"):
        assert "(no text stored)" in tampered_inputs[key].output
    assert "[/] [bold]not markup[/bold]" in tampered_inputs["markup"].output
    assert "\ufffd[2J" in tampered_inputs["markup"].output  # ESC shown, not sent
    for seen in tampered_inputs.all():
        assert "\x1b" not in seen.output, seen.tampering.key


def test_every_refusal_has_its_expected_line() -> None:
    refused = {t.key for t in SCENARIOS if t.exit_code == REFUSED}
    assert refused == set(LOCATED)


def test_the_docs_table_is_what_these_tamperings_did(tampered_inputs: TamperedInputs) -> None:
    """docs/reliability.md shows what the code does: ``python -m tests.outcomes`` regenerates it."""
    rendered = render(tampered_inputs.all())
    assert comparable(page_block(NAME)) == comparable(rendered), out_of_date(NAME)
