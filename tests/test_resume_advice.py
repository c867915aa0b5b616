"""Every message the library raises or logs names resuming and starting over in both spellings.

A refusal raised by a sink or the core reaches the ``seamline`` command's user and a caller
of ``Pipeline.run`` alike. A notebook whose resume was refused was told "Run again with
--restart (or without --resume) to start over", flags the library has no way to take; some
messages said ``--resume (resume=False)``, one ``--resume (run(resume=True) from Python)``.
They now say it with the shared words of :mod:`seamline.contracts.errors` (``RESUME``,
``RESTART``, ``WITHOUT_RESUME``). This test reads the source of the packages a library
caller runs (not the command line's adapters, whose lines only the command prints) and
refuses a string that spells a flag by hand.
"""

from __future__ import annotations

import ast
from pathlib import Path

from seamline.contracts.errors import RESTART, RESUME, WITHOUT_RESUME

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("contracts/src", "core/src", "components/src")
FLAGS = ("--resume", "--restart")

ERRORS = "contracts/src/seamline/contracts/errors.py"
ALLOWED = {
    # The shared words themselves.
    (ERRORS, RESUME),
    (ERRORS, RESTART),
    (ERRORS, WITHOUT_RESUME),
    # exhaustion_remedy(resuming=True): asked for only by the command line's own line, which
    # goes on "then run again with --resume".
    (ERRORS, "they need --restart, which starts over)"),
    (ERRORS, "it needs --restart, which starts over)"),
    # run.checkpoint_every's description (the pipeline schema's), which names the command.
    ("core/src/seamline/core/config/spec.py", "so `seamline run --resume` can continue"),
}
"""(file, part of the string) of the strings allowed to spell a flag alone."""


def literal_strings(tree: ast.Module) -> list[str]:
    """The text of every string that is not a docstring: a constant, or the literal parts of
    an f-string (which a placeholder such as ``{RESTART}`` fills)."""
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    inside_fstrings = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            found.append(
                "".join(
                    part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
                )
            )
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings | inside_fstrings
        ):
            found.append(node.value)
    return found


def test_no_message_spells_a_flag_by_hand() -> None:
    spelled = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            for text in literal_strings(ast.parse(path.read_text(encoding="utf-8"))):
                allowed = any(file == name and part in text for file, part in ALLOWED)
                if any(flag in text for flag in FLAGS) and not allowed:
                    spelled.append(f"{name}: {text!r}")
    assert spelled == [], ADVICE + "\n".join(spelled)


ADVICE = (
    "a message spells --resume or --restart by hand; put RESUME, RESTART or WITHOUT_RESUME "
    "from seamline.contracts.errors in its place (f'... {RESTART} ...'): the same message "
    "reaches a Python caller of Pipeline.run, who has no flags, and those words say both "
    "spellings. A string only the command line prints belongs in seamline.adapters, or, "
    "if it must stay here, in this test's ALLOWED:\n"
)
"""What the failure says to do, not only what is wrong."""


def test_the_advice_says_where_the_words_are_and_why() -> None:
    assert "from seamline.contracts.errors" in ADVICE
    assert "a Python caller of Pipeline.run" in ADVICE


def test_the_shared_words_give_both_spellings() -> None:
    assert RESUME == "--resume (run(resume=True) from Python)"
    assert RESTART == "--restart (run(restart=True) from Python)"
    assert WITHOUT_RESUME == "without --resume (resume=False from Python)"
