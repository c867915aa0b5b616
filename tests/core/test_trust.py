"""require_conformance: only components with a passing record for the versions installed now."""

from __future__ import annotations

import importlib
import os
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

import pytest
import structlog

from seamline.contracts import AttentionChosen, UnsupportedError
from seamline.contracts.conformance import (
    CheckResult,
    ConformanceRecord,
    Environment,
    current_environment,
)
from seamline.core.code_digest import _digest_of, component_digest
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.trust import (
    STORE_VARIABLE,
    attribute,
    load_records,
    save,
    trust_problem,
    untrusted_candidates,
)
from seamline.core.trust.records import MAX_RECORD_BYTES
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry

TEXTS = ["one two", "three four five"]


@pytest.fixture(autouse=True)
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    MemorySink.reset()
    RecordingMonitor.events.clear()
    directory = tmp_path / "records"
    monkeypatch.setenv(STORE_VARIABLE, str(directory))
    return directory


def registered_contract(name: str) -> str:
    """The contract version the registry lists the attention with (what a record pins)."""
    return toy_registry().get("attention", name).contract_version or ""


def record(
    name: str,
    *,
    outcome: str = "passed",
    environment: Environment | None = None,
    config: dict[str, Any] | None = None,
    contract: str | None = None,
) -> ConformanceRecord:
    (component,) = candidates(name)
    unattributed = ConformanceRecord(
        kind="attention",
        name=name,
        component_class=f"{type(component).__module__}:{type(component).__qualname__}",
        distribution=None,
        distribution_version=None,
        contract_version=contract or registered_contract(name),
        config=config if config is not None else component.config.model_dump(mode="json"),
        environment=environment or current_environment(),
        created="2026-11-29T00:00:00+00:00",
        results=(CheckResult(check="feature_case[plain-f32]", outcome=outcome),),  # type: ignore[arg-type]
    )
    # As `seamline check` does: the registry says which distribution (and version) made it.
    return attribute(unattributed, toy_registry())


def run(attention: str) -> list[AttentionChosen]:
    registry = toy_registry()
    text = (
        "pipeline: trust\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        "monitors: [{use: recording}]\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4]}\n"
    )
    Orchestrator(parse_pipeline(text, "t.yaml", registry), registry).run()
    return [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]


def candidates(*names: str) -> list[Any]:
    registry = toy_registry()
    return [registry.create("attention", name) for name in names]


def untrusted(*names: str, required: bool = True) -> dict[str, str]:
    registry = toy_registry()
    implementations = candidates(*names)
    infos = {c.name: registry.info_of(c) for c in implementations}
    return untrusted_candidates(implementations, infos, required)


def test_not_required_means_no_check() -> None:
    assert untrusted("native", "off-by-ten", required=False) == {}


def test_without_records_nothing_is_trusted_and_the_fix_is_named() -> None:
    problems = untrusted("native")
    assert problems == {
        "native": "no conformance record; run 'seamline check attention:native --record'"
    }


def test_only_the_candidate_with_a_passing_record_serves(store: Path) -> None:
    save(record("native"), store)
    chosen = run("{use: [off-by-ten, native], require_conformance: true}")
    assert [e.chosen for e in chosen] == ["native"]
    (reason,) = chosen[0].rejected["off-by-ten"]
    assert reason.startswith("conformance required: no conformance record")


def test_a_jax_upgrade_withdraws_trust(store: Path) -> None:
    now = current_environment()
    older = now.model_copy(update={"jax": "0.0.1", "jaxlib": "0.0.1"})
    save(record("native", environment=older), store)
    problem = untrusted("native")["native"]
    assert f"jax 0.0.1 (now: {now.jax})" in problem
    assert f"jaxlib 0.0.1 (now: {now.jaxlib})" in problem
    with pytest.raises(UnsupportedError, match="conformance required"):
        run("{use: native, require_conformance: true}")


def test_a_failing_record_does_not_count(store: Path) -> None:
    save(record("native", outcome="failed"), store)
    problem = untrusted("native")["native"]
    assert "fails (1 failed; failed: feature_case[plain-f32]);" in problem  # the checks that failed
    # Running the check again was the only fix named, and cannot help: the record is right.
    assert problem.endswith(
        "running the check again cannot change that: fix the component (then "
        "'seamline check attention:native --record' again), or remove it from `use:`"
    )


def test_a_record_for_another_configuration_does_not_count(store: Path) -> None:
    save(record("native", config={"something": "else"}), store)
    problem = untrusted("native")["native"]
    assert "another configuration" in problem


def test_a_record_for_another_contract_version_does_not_count(store: Path) -> None:
    # A record earned against an older contract cleared a component that now declares a
    # newer one, whose suite has checks the record never ran.
    save(record("native", contract="0.9"), store)
    problem = untrusted("native")["native"]
    assert f"contract 0.9 (the component's now: {registered_contract('native')})" in problem
    save(record("native"), store)
    assert untrusted("native") == {}


def test_all_skipped_proves_nothing(store: Path) -> None:
    save(record("native", outcome="skipped"), store)
    assert "native" in untrusted("native")


def test_damaged_records_are_ignored(store: Path) -> None:
    store.mkdir(parents=True)
    (store / "attention-native-broken.json").write_text("{not json", encoding="utf-8")
    save(record("native"), store)
    assert untrusted("native") == {}


def test_a_fifo_or_an_oversized_file_in_the_store_is_skipped_not_waited_on(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store is read by every run that requires conformance: a FIFO named like a record
    # used to block it forever (a plain read waits for a writer), and a file of any size
    # was read whole. Relative, from a working directory of the test's own, too.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(STORE_VARIABLE, "records")
    store.mkdir(parents=True)
    passing = record("native")
    os.mkfifo(store / "attention-native-fifo.json")
    padded = passing.model_dump_json().encode() + b" " * MAX_RECORD_BYTES  # valid, too big
    (store / "attention-native-huge.json").write_bytes(padded)
    found: list[list[ConformanceRecord]] = []
    reader = threading.Thread(target=lambda: found.append(load_records()), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert found, "reading the record store waited on a FIFO"
    assert found[0] == []  # neither counts: the oversized one is valid but over the bound
    save(passing, store)
    assert load_records() == [passing]
    assert untrusted("native") == {}


def test_a_record_of_another_distribution_or_class_does_not_count(store: Path) -> None:
    # The key names the component by name and version only: a record earned by
    # acme-seamline-pool 0.1.0 cleared acme-impostor 0.1.0's class registered under the same
    # name (it returned zeros, and the run exited 0); an edited record did as much.
    passing = record("native")
    assert passing.distribution == "tests"
    save(passing.model_copy(update={"distribution": "acme-evil"}), store)  # same key: replaces
    problem = untrusted("native")["native"]
    target = toy_registry().get("attention", "native").target
    assert f"of acme-evil, not the installed {target} of tests 0" in problem
    assert problem.endswith("run 'seamline check attention:native --record'")
    save(passing.model_copy(update={"component_class": "acme_evil.bad:NanAttn"}), store)
    assert "for acme_evil.bad:NanAttn of tests, not" in untrusted("native")["native"]
    save(passing, store)
    assert untrusted("native") == {}


def test_a_record_vouches_only_for_the_code_it_tested(store: Path) -> None:
    passing = record("native")
    assert passing.code_digest == component_digest("seamline.components.attention.native")
    save(passing.model_copy(update={"code_digest": "0" * 16}), store)
    problem = untrusted("native")["native"]
    assert problem == (
        "its code (package seamline.components) changed since its conformance record was made; "
        "run 'seamline check attention:native --record'"
    )
    # A record made before records pinned the code: refused, with the same fix.
    save(passing.model_copy(update={"code_digest": None}), store)
    problem = untrusted("native")["native"]
    assert problem.startswith("its conformance record does not pin the component's code")
    assert problem.endswith("run 'seamline check attention:native --record'")


PINNED = """\
from tests.core.toy import NativeAttention


class PinnedAttention(NativeAttention):
    name = "pinned"

    def __call__(self, q, k, v, **kwargs):
        return super().__call__(q, k, v, **kwargs)
"""


def test_an_edit_of_the_component_s_package_withdraws_its_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editable install keeps its version across edits: a record earned before
    ``__call__`` was changed to return zeros cleared the changed code."""
    package = tmp_path / "code" / "acme_pinned"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "helpers.py").write_text("SCALE = 1.0\n", encoding="utf-8")
    (package / "attention.py").write_text(PINNED, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "code"))
    from acme_pinned.attention import PinnedAttention  # type: ignore[import-not-found]

    info = ComponentInfo(
        "attention", "pinned", "acme_pinned.attention:PinnedAttention", "acme-pinned", "0.1.0",
        "ok", "", PinnedAttention, "1.0",
    )  # fmt: skip
    component = PinnedAttention(PinnedAttention.Config())
    made = ConformanceRecord(
        kind="attention",
        name="pinned",
        component_class="acme_pinned.attention:PinnedAttention",
        distribution=None,
        distribution_version=None,
        contract_version="1.0",
        config={},
        environment=current_environment(),
        created="2026-11-29T00:00:00+00:00",
        results=(CheckResult(check="feature_case[plain-f32]", outcome="passed"),),
    )
    passing = attribute(made, Registry([info]))
    environment = current_environment()
    assert trust_problem(component, info, environment, [passing]) is None
    # Another module of the package changes (a new process reads the files again).
    (package / "helpers.py").write_text("SCALE = 0.0\n", encoding="utf-8")
    _digest_of.cache_clear()
    problem = trust_problem(component, info, environment, [passing])
    assert problem is not None
    assert problem.startswith("its code (package acme_pinned) changed since its conformance")


def test_a_rebuilt_extension_or_data_file_of_the_package_withdraws_its_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest read ``.py`` files only: cpu-flash's kernel rebuilt from an edited
    ``.inc`` (a new ``.so``) kept its record, and a run wrote vectors 0.6 % off."""
    package = tmp_path / "code" / "acme_kernel"
    (package / "__pycache__").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    files = {
        "_kernel.cpython-311-x86_64-linux-gnu.so": b"\x7fELF one",
        "kernel_isa.inc": b"// one",
        "kernel.cc": b"// one",
        "data/table.bin": b"\x00\x01",
    }
    for name, content in files.items():
        (package / name).parent.mkdir(exist_ok=True)
        (package / name).write_bytes(content)
    monkeypatch.syspath_prepend(str(tmp_path / "code"))

    def digest() -> str:
        _digest_of.cache_clear()  # as a new process reads the files again
        return component_digest("acme_kernel")

    before = digest()
    assert before
    (package / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"bytecode")
    (package / "stale.pyc").write_bytes(b"bytecode")
    assert digest() == before  # bytecode Python writes as it imports changes nothing
    for name, content in files.items():
        (package / name).write_bytes(content + b" edited")
        assert digest() != before, name
        (package / name).write_bytes(content)
        assert digest() == before


def test_an_editors_leftovers_in_the_package_change_nothing_an_unreadable_file_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Vim's swap file (written when a file is only viewed), an emacs backup or a
    ``.DS_Store`` in a package changed its digest: every record of the package was
    withdrawn, and a run resumed over unchanged code was refused (only ``--restart``, the
    committed work thrown away). A file that cannot be read made the whole digest "",
    which turned resume's comparison of the code off."""
    package = tmp_path / "code" / "acme_edited"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "kernel.py").write_text("SCALE = 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path / "code"))

    def digest() -> str:
        _digest_of.cache_clear()
        return component_digest("acme_edited")

    before = digest()
    leftovers = [".kernel.py.swp", "kernel.py~", ".DS_Store", "kernel.py.orig", ".hidden/x.py"]
    for name in leftovers:
        (package / name).parent.mkdir(exist_ok=True)
        (package / name).write_bytes(b"an editor's")
    assert digest() == before
    (package / "table.bin").write_bytes(b"data")
    readable = digest()
    opened = Path.open

    def shut(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == "table.bin":  # as a file another user's mode shuts (root reads all)
            raise PermissionError(13, "Permission denied", str(self))
        return opened(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", shut)
    assert digest() not in ("", before, readable)


def test_a_package_imported_from_a_zipped_wheel_is_pinned_by_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package imported from a zip on ``sys.path`` got the digest of no files at all
    (e3b0c44298fc1c14, the same for every zipped package), so a rebuilt wheel kept its
    record; a module of its own in a zip crashed the digest."""
    wheel = tmp_path / "acme_zipped-0.1.0-py3-none-any.whl"

    def build(scale: str) -> None:
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr("acme_zipped/__init__.py", "")
            archive.writestr("acme_zipped/attention.py", f"SCALE = {scale}\n")
            archive.writestr("acme_zipped/__pycache__/attention.cpython-311.pyc", scale)
            archive.writestr("acme_lone.py", f"SCALE = {scale}\n")
        _digest_of.cache_clear()  # as a new process reads the files again

    build("1.0")
    monkeypatch.syspath_prepend(str(wheel))
    first = component_digest("acme_zipped.attention")
    assert first not in ("", "e3b0c44298fc1c14")
    lone = component_digest("acme_lone")
    assert lone
    build("0.0")
    assert component_digest("acme_zipped.attention") != first
    assert component_digest("acme_lone") != lone
    # The same files unzipped: the same digest (a wheel installed or zipped is one code).
    unzipped = tmp_path / "unzipped"
    zipfile.ZipFile(wheel).extractall(unzipped)
    build("1.0")
    zipped = (component_digest("acme_zipped.attention"), component_digest("acme_lone"))
    monkeypatch.setattr("sys.path", [str(unzipped), *sys.path])
    for name in [n for n in sys.modules if n.startswith(("acme_zipped", "acme_lone"))]:
        monkeypatch.delitem(sys.modules, name)
    (unzipped / "acme_zipped" / "attention.py").write_text("SCALE = 1.0\n", encoding="utf-8")
    (unzipped / "acme_lone.py").write_text("SCALE = 1.0\n", encoding="utf-8")
    _digest_of.cache_clear()
    importlib.invalidate_caches()
    assert (component_digest("acme_zipped.attention"), component_digest("acme_lone")) == zipped


def test_a_record_without_results_or_of_another_format_proves_nothing(store: Path) -> None:
    save(record("native").model_copy(update={"results": ()}), store)
    problem = untrusted("native")["native"]
    assert "fails (no results)" in problem  # it said "fails ()"
    newer = record("native").model_copy(update={"format": 2})
    save(newer, store)
    assert load_records() == []  # format 2 was read as format 1, and cleared the component
    assert "native" in untrusted("native")


def test_records_another_user_could_have_written_are_ignored(store: Path) -> None:
    """A record decides what a pipeline trusts: a folder of mode 777 holding another user's
    record was read as the user's own (the compile cache refuses the same folder)."""
    passing = record("native")
    path = save(passing, store)
    store.chmod(0o777)
    with structlog.testing.capture_logs() as logs:
        assert load_records() == []
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert "their folder is not private" in warning["event"]
    assert "every user can write it (mode 777)" in warning["why"]
    assert "native" in untrusted("native")
    store.chmod(0o755)
    assert load_records() == [passing]
    if hasattr(os, "getuid") and os.getuid() == 0:  # root can give the record away
        os.chown(path, 12345, -1)
        with structlog.testing.capture_logs() as logs:
            assert load_records() == []
        (warning,) = [e for e in logs if e["log_level"] == "warning"]
        assert warning["reason"] == "it is owned by another user (uid 12345)"
