"""Hostile pipeline files are refused with their place, in bounded time and memory.

Each of these once ended in a traceback or ran without bound: alias expansion
("billion laughs"), nesting thousands deep (PyYAML's composer recursed until
``RecursionError``), a 5,000-digit integer in the file or through ``--set``
(Python's int conversion limit), hundreds of thousands of values, a file of many
megabytes, a FIFO in place of a file (the read blocked). And a value filled from an
environment variable was echoed in the validation error; it may be a secret.

Each case is read once per session (:mod:`tests.core.hostile_pipelines`, the
``hostile_pipelines`` fixture), by the library and by ``seamline validate``; these
tests assert on what it did, and docs/reliability.md shows the table of it.
"""

from __future__ import annotations

import pytest

from seamline.contracts import ConfigError
from seamline.core.config import bounds, parse_pipeline
from seamline.core.config.located import parse_located
from seamline.core.registry import Registry
from tests.core.hostile_pipelines import (
    BOUND_S,
    CASES,
    NAME,
    SECRET,
    VALID,
    HostilePipelines,
    Outcome,
    render,
)
from tests.outcome_tables import comparable, out_of_date, page_block


def refused(outcomes: HostilePipelines, key: str) -> Outcome:
    """The case's outcome, which must be a ``ConfigError`` from the library."""
    outcome = outcomes[key]
    assert isinstance(outcome.error, ConfigError), (key, outcome.error)
    return outcome


def test_alias_expansion_is_refused_where_it_explodes(hostile_pipelines: HostilePipelines) -> None:
    outcome = refused(hostile_pipelines, "aliases")
    assert "expands to more than 100,000 values" in outcome.message
    assert f"{outcome.path}:" in outcome.message
    assert outcome.seconds < 10  # unbounded, it would build 10^10 values


def test_a_few_aliases_are_still_fine(registry: Registry) -> None:
    text = VALID + "monitors: [{use: log, with: &every {every: 7}}, {use: log, with: *every}]\n"
    resolved = parse_pipeline(text, "p.yaml", registry, environ={})
    assert [m.config.every for m in resolved.monitors] == [7, 7]  # type: ignore[attr-defined]


def test_deep_nesting_is_refused_at_the_level_that_is_too_deep(
    hostile_pipelines: HostilePipelines,
) -> None:
    message = refused(hostile_pipelines, "nesting").message
    assert f"more than {bounds.MAX_DEPTH} deep" in message
    column = len("extra: ") + bounds.MAX_DEPTH  # the top mapping is the first level
    assert f"hostile.yaml:5:{column}" in message


def test_a_huge_integer_is_refused_in_the_file(hostile_pipelines: HostilePipelines) -> None:
    message = refused(hostile_pipelines, "integer").message
    assert "an integer of 5,000 digits" in message
    assert "hostile.yaml:3:" in message


def test_a_huge_integer_is_refused_through_set(hostile_pipelines: HostilePipelines) -> None:
    message = refused(hostile_pipelines, "integer-set").message
    assert "an integer of 5,000 digits" in message
    assert "--set model.with.max_length=999" in message


def test_hundreds_of_thousands_of_values_are_refused(hostile_pipelines: HostilePipelines) -> None:
    assert len(CASES["values"].text or "") < bounds.MAX_BYTES
    message = refused(hostile_pipelines, "values").message
    assert "holds more than 100,000 values" in message


def test_an_alias_inside_the_node_it_names_is_refused_at_the_alias(
    hostile_pipelines: HostilePipelines,
) -> None:
    """PyYAML registers an anchor before composing its children: the nodes form a cycle,
    which building the values followed until ``RecursionError`` (a traceback, exit 1)."""
    message = refused(hostile_pipelines, "alias-cycle").message
    column = len("extra: &x [") + 1
    assert f"hostile.yaml:{len(VALID.splitlines()) + 1}:{column}: the alias *x" in message
    assert "may not refer to a node that contains it" in message


def test_an_alias_inside_the_node_it_names_is_refused_through_set(
    hostile_pipelines: HostilePipelines,
) -> None:
    message = refused(hostile_pipelines, "alias-cycle-set").message
    assert "--set run.buckets=&x [*x]: the alias *x" in message
    assert message.endswith("remove the alias (at column 5 of the value)")


def test_an_alias_may_name_an_earlier_node_or_a_redefined_anchor() -> None:
    located = parse_located("a: &x [1]\nb: &y [*x, *x]\nc: {d: *y}\n", "f.yaml")
    assert located.data == {"a": [1], "b": [[1], [1]], "c": {"d": [[1], [1]]}}


def test_a_file_of_many_megabytes_is_refused_before_it_is_parsed(
    hostile_pipelines: HostilePipelines,
) -> None:
    message = refused(hostile_pipelines, "megabytes").message
    assert "larger than 1,048,576 bytes, the limit for pipeline files" in message
    # The file is read one byte past the limit, no further: that count is not its size.
    assert "1,048,577" not in message


def test_a_fifo_is_refused_without_blocking(hostile_pipelines: HostilePipelines) -> None:
    assert "is not a regular file" in refused(hostile_pipelines, "fifo").message


def test_a_file_that_is_not_utf8_is_placed_at_its_first_foreign_byte(
    hostile_pipelines: HostilePipelines,
) -> None:
    outcome = refused(hostile_pipelines, "latin-1")
    line = len(VALID.splitlines()) + 1
    assert f"hostile.yaml:{line}:6: byte 0xe9 is not UTF-8 text" in outcome.message
    assert "save it as UTF-8" in outcome.message


def test_a_secret_from_the_environment_is_named_not_echoed(
    hostile_pipelines: HostilePipelines,
) -> None:
    outcome = refused(hostile_pipelines, "secret")
    assert SECRET not in outcome.message
    assert "${TOKEN}" in outcome.message
    assert "hostile.yaml:3:" in outcome.message
    assert SECRET not in outcome.output  # nor by the CLI


def test_an_override_of_an_interpolated_value_is_echoed_again(registry: Registry) -> None:
    text = VALID.replace("max_length: 128", 'max_length: "${TOKEN}"')
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(
            text, "p.yaml", registry, ["model.with.max_length=abc"], environ={"TOKEN": "1"}
        )
    assert "(got 'abc')" in str(caught.value)


@pytest.mark.parametrize("key", list(CASES))
def test_the_cli_says_it_in_one_line_and_exits_2(
    hostile_pipelines: HostilePipelines, key: str
) -> None:
    outcome = refused(hostile_pipelines, key)
    assert outcome.exit_code == 2, outcome.output
    assert "Traceback" not in outcome.output
    assert "error:" in outcome.output
    assert outcome.lines == [f"error: {outcome.message}"]  # what the library says, in one line
    assert outcome.cli_seconds < BOUND_S


def test_the_docs_table_is_what_these_files_did(hostile_pipelines: HostilePipelines) -> None:
    """docs/reliability.md shows what the code does: ``python -m tests.outcomes`` regenerates it."""
    rendered = render(hostile_pipelines.all())
    assert comparable(page_block(NAME)) == comparable(rendered), out_of_date(NAME)
