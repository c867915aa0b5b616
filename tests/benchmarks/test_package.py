"""The benchmarks as a package: every one runs from the repository root, as documented.

Each benchmark is a module run with ``python -m benchmarks.FOLDER.NAME`` from the root;
the reference sides run the same way in ``.venv-golden``, which has no seamline and
none of its dependencies. These tests hold the package to what the docs say of it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest

from benchmarks.common.paths import REFERENCE_SOURCES, ROOT, reference_env

BENCHMARKS = {
    "benchmarks.attention.sweep",
    "benchmarks.attention.vs_torch",
    "benchmarks.memory.lancedb_cache",
    "benchmarks.memory.soak",
    "benchmarks.model.batches",
    "benchmarks.model.bf16_accuracy",
    "benchmarks.model.gelu_cost",
    "benchmarks.model.matmul_rates",
    "benchmarks.model.mixed_precision",
    "benchmarks.model.mpnet_parity",
    "benchmarks.model.step_breakdown",
    "benchmarks.model.step_profile",
    "benchmarks.overhead.check_again",
    "benchmarks.overhead.cli_start",
    "benchmarks.overhead.compile_cost",
    "benchmarks.overhead.first_run",
    "benchmarks.overhead.finite_check",
    "benchmarks.overhead.monitor_cost",
    "benchmarks.overhead.orchestration",
    "benchmarks.overhead.python_share",
    "benchmarks.search.file_scan",
    "benchmarks.search.index_recall",
    "benchmarks.search.warm_query",
    "benchmarks.throughput.embed_throughput",
    "benchmarks.throughput.encode_vs_run",
    "benchmarks.throughput.length_sweep",
    "benchmarks.throughput.precision",
    "benchmarks.throughput.in_flight",
    "benchmarks.throughput.serve_load",
    "benchmarks.throughput.scaling",
    "benchmarks.throughput.whole_run",
}
"""What ``benchmarks/README.md``'s table lists: the benchmarks a user runs."""
REFERENCE_SIDE = {
    "benchmarks.attention._torch_worker",
    "benchmarks.throughput._reference_run",
    "benchmarks.throughput._reference_worker",
    "benchmarks.throughput.length_sweep",
    "benchmarks.throughput.plot_results",
    "benchmarks.throughput._reference_server",
    "benchmarks.throughput._precision_reference",
    "benchmarks.model._mpnet_reference",
}
"""The modules a benchmark starts in the reference interpreter (``.venv-golden``; ``.venv-ref``
for ``_precision_reference``)."""

HELP_OF_EVERY_MODULE = """
import contextlib, importlib, io, json, pkgutil
import benchmarks

answers = {}
for found in pkgutil.walk_packages(benchmarks.__path__, "benchmarks."):
    main = getattr(importlib.import_module(found.name), "main", None)
    if main is None:
        continue
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(["--help"])
        except SystemExit as stop:
            code = stop.code
    answers[found.name] = [code, out.getvalue()]
print(json.dumps(answers))
"""


def test_every_module_with_a_main_answers_help_from_the_repository_root() -> None:
    # One process for all of them: each imports its dependencies (JAX for some) once.
    done = subprocess.run(
        [sys.executable, "-c", HELP_OF_EVERY_MODULE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.splitlines()[-1])
    assert set(answers) >= BENCHMARKS | REFERENCE_SIDE, sorted(answers)
    for name, (code, out) in answers.items():
        assert code in (0, None), (name, code)
        assert "usage:" in out, (name, out)


@pytest.mark.parametrize("module", ["benchmarks.throughput.whole_run", "benchmarks.memory.soak"])
def test_python_dash_m_from_the_root_as_documented(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", module, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "usage:" in done.stdout


REFERENCE_IMPORTS = """
import importlib, pkgutil, sys
import seamline.adapters.measure as measure

kit = pkgutil.iter_modules(measure.__path__, measure.__name__ + ".")
for name in [*sys.argv[1:], *(found.name for found in kit)]:
    importlib.import_module(name)
ours = {"__main__", "benchmarks", "seamline"}
tops = {name.split(".")[0] for name in sys.modules}
print(sorted(tops - ours - set(sys.stdlib_module_names)))
"""


def test_the_reference_side_needs_only_the_standard_library_and_the_checkout() -> None:
    # `python -S`: no site-packages, so no seamline installed and none of its dependencies,
    # as in .venv-golden; the environment the benchmarks give a reference side.
    env = {**os.environ, **reference_env()}
    assert env["PYTHONPATH"].split(os.pathsep) == [str(p) for p in REFERENCE_SOURCES]
    done = subprocess.run(
        [sys.executable, "-S", "-c", REFERENCE_IMPORTS, *sorted(REFERENCE_SIDE)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]", done.stdout


# -- what the documentation names -----------------------------------------------------------

SOURCES = ("contracts", "core", "components", "adapters", "kernels", "examples", "benchmarks")
DOCUMENTS = sorted(
    {
        ROOT / "README.md",
        ROOT / "Makefile",
        ROOT / "benchmarks" / "README.md",
        ROOT / "benchmarks" / "device_check.sh",
        *(ROOT / "docs").glob("*.md"),
        *(path for folder in SOURCES for path in (ROOT / folder).rglob("*.py")),
        *(ROOT / "examples").rglob("*.yaml"),
    }
)
PATH = re.compile(r"(?<!\w/)(?<![\w.-])benchmarks/[\w./-]*\w")
MODULE = re.compile(r"(?<![\w./])benchmarks(?:\.\w+)+")
README_LINK = re.compile(r"benchmarks/README\.md#([\w-]+)")


def named_paths(text: str) -> set[str]:
    return {match for match in PATH.findall(text) if "." in match.rsplit("/", 1)[-1]}


def named_modules(text: str) -> set[str]:
    return set(MODULE.findall(text))


def is_module(name: str) -> bool:
    """A module of the package, or a name in one (``benchmarks.common.workers.serve``)."""
    try:
        if find_spec(name) is not None:
            return True
    except ModuleNotFoundError:  # a name in a module: find_spec looked for a package
        pass
    parent = find_spec(name.rpartition(".")[0])
    return parent is not None and parent.submodule_search_locations is None


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_file_and_module_the_docs_name_exists() -> None:
    missing = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        where = document.relative_to(ROOT)
        missing += [f"{where}: {p}" for p in named_paths(text) if not (ROOT / p).exists()]
        missing += [f"{where}: {m}" for m in named_modules(text) if not is_module(m)]
    assert not missing, "\n".join(sorted(missing))


def test_every_link_into_the_benchmarks_readme_finds_its_heading() -> None:
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    anchors = {slug(line.lstrip("#")) for line in readme.splitlines() if line.startswith("#")}
    links = {
        (document.relative_to(ROOT).as_posix(), anchor)
        for document in DOCUMENTS
        for anchor in README_LINK.findall(document.read_text(encoding="utf-8"))
    }
    assert links, "the docs link into benchmarks/README.md"
    assert not {link for link in links if link[1] not in anchors}


def test_the_readme_lists_every_benchmark() -> None:
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    table = {m for m in named_modules(readme) if re.search(rf"^\| `{re.escape(m)}`", readme, re.M)}
    assert table == BENCHMARKS


def test_the_checks_above_see_a_stale_name() -> None:
    # The old flat layout, as the docs named it before issue 24: every one is caught.
    assert named_paths("run `benchmarks/whole_run.py` (see benchmarks/results/x.json).") == {
        "benchmarks/whole_run.py",
        "benchmarks/results/x.json",
    }
    assert named_modules("python -m benchmarks.whole_run --help") == {"benchmarks.whole_run"}
    assert not is_module("benchmarks.whole_run")
    assert is_module("benchmarks.throughput.whole_run")
    assert is_module("benchmarks.common.workers.serve")
    assert (
        slug("`overhead/orchestration.py`: what it costs")
        == "overheadorchestrationpy-what-it-costs"
    )


def test_no_test_reaches_the_benchmarks_through_sys_path() -> None:
    # They import the package (pytest puts the root on sys.path: `pythonpath` in pyproject).
    tests = Path(__file__).resolve().parents[1]
    edits = [
        path.relative_to(ROOT).as_posix()
        for path in tests.rglob("*.py")
        if re.search(r"sys\.path\.(insert|append)\(.*benchmarks", path.read_text(encoding="utf-8"))
    ]
    assert edits == []
