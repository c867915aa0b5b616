"""Discovery through real entry points, with fixture distributions put on sys.path.

Each fixture under ``tests/fixtures/plugins/`` is an installed-looking
distribution (a ``*.dist-info`` with ``entry_points.txt``) and its module: one
fails to import, two register the same name, one breaks the component rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts import (
    ComponentLoadError,
    ComponentNotFoundError,
    ContractVersionError,
    DuplicateComponentError,
)
from seamline.core.config.user import user_trust
from seamline.core.registry import Registry, refusal_reason
from tests.core.toy import ListLoader

PLUGINS = Path(__file__).parents[1] / "fixtures" / "plugins"


@pytest.fixture
def with_fixture_plugins(monkeypatch: pytest.MonkeyPatch) -> Registry:
    for distribution in sorted(PLUGINS.iterdir()):
        monkeypatch.syspath_prepend(str(distribution))
    return Registry.discover(user_trust())


def test_first_party_components_are_registered(registry: Registry) -> None:
    assert "native" in registry.names("attention")
    assert "bert-encoder" in registry.names("model")
    assert {"text-files", "jsonl"} <= set(registry.names("loader"))
    assert {"jsonl", "npy"} <= set(registry.names("sink"))
    assert "log" in registry.names("monitor")
    native = registry.get("attention", "native")
    assert native.distribution == "seamline-components"
    assert native.contract_version == "1.2"


def test_broken_plugin_is_isolated_and_listed(with_fixture_plugins: Registry) -> None:
    registry = with_fixture_plugins
    broken = next(i for i in registry.entries("attention") if i.name == "exploding")
    assert broken.status == "broken"
    assert broken.distribution == "seamline-fixture-broken"
    assert broken.version == "0.1.0"
    assert "a_dependency_that_is_not_installed" in broken.reason
    # Every other component stays usable.
    assert registry.get("attention", "native").usable
    with pytest.raises(ComponentLoadError, match="broken: import failed"):
        registry.get("attention", "exploding")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("exiting", "it called sys.exit('seamline_fixture_broken_exit: missing config, exiting')"),
        ("asserting", "an assertion failed while it was imported: seamline_fixture_broken_assert"),
        # pytest.importorskip at import raises Skipped, another BaseException stevedore
        # lets through: a traceback from every command.
        ("skipping", "it raised Skipped while imported: could not import"),
    ],
)
def test_a_plugin_that_stops_the_process_at_import_is_only_broken(
    with_fixture_plugins: Registry, name: str, said: str
) -> None:
    # sys.exit() at import ended `seamline validate` of pipelines that never named it, and
    # raised SystemExit out of Pipeline.from_yaml; stevedore lets an AssertionError through.
    stopped = next(i for i in with_fixture_plugins.entries("attention") if i.name == name)
    assert stopped.status == "broken"
    assert said in stopped.reason
    assert with_fixture_plugins.get("attention", "native").usable


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("hyphen", "seamline-fixture-broken:ExplodingAttention"),
        ("junk", "seamline_fixture_broken:ExplodingAttention extra junk"),
    ],
)
def test_a_malformed_entry_point_value_is_only_broken_and_says_where_to_fix_it(
    with_fixture_plugins: Registry, name: str, value: str
) -> None:
    # importlib.metadata raised AttributeError ('NoneType' ... 'group') from inside
    # stevedore's failure callback: a traceback from every seamline command.
    entry = next(i for i in with_fixture_plugins.entries("attention") if i.name == name)
    assert entry.status == "broken"
    assert f"the entry point's value {value!r} is not 'module:attribute'" in entry.reason
    assert '[project.entry-points."seamline.attention"]' in entry.reason
    assert with_fixture_plugins.get("attention", "native").usable


def test_what_a_plugin_writes_to_descriptor_1_at_import_goes_to_stderr(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # redirect_stdout moved print() only: os.write(1, ...) (or a C library) went into the
    # middle of --format json on stdout.
    for distribution in sorted(PLUGINS.iterdir()):
        monkeypatch.syspath_prepend(str(distribution))
    registry = Registry.discover(user_trust())
    out, err = capfd.readouterr()
    assert out == ""
    assert "seamline_fixture_broken_loud wrote to descriptor 1" in err
    assert "seamline_fixture_broken_loud printed" in err
    print("after discovery")  # descriptor 1 and sys.stdout are themselves again
    assert capfd.readouterr().out == "after discovery\n"
    assert registry.get("attention", "native").usable


def test_an_entry_point_in_a_group_seamline_does_not_read_is_named_when_asked_for(
    with_fixture_plugins: Registry,
) -> None:
    # `[project.entry-points."seamline.monitors"]` (a plural): `use: counting` said only
    # "no monitor component named 'counting'". Its module is never imported.
    with pytest.raises(ComponentNotFoundError) as refused:
        with_fixture_plugins.get("monitor", "counting")
    assert (
        "(seamline-fixture-stray registers 'counting' in the entry-point group "
        "'seamline.monitors', which seamline does not read: register it in 'seamline.monitor')"
    ) in str(refused.value)


def test_an_entry_point_naming_a_missing_module_says_where_to_fix_it(
    with_fixture_plugins: Registry,
) -> None:
    typo = next(i for i in with_fixture_plugins.entries("attention") if i.name == "typo")
    assert typo.status == "broken"
    with pytest.raises(ComponentLoadError) as caught:
        with_fixture_plugins.get("attention", "typo")
    message = str(caught.value)
    assert "No module named 'seamline_fixture_broken_typo'" in message
    assert "'seamline_fixture_broken_typo:ExplodingAttention'" in message  # the target
    assert '[project.entry-points."seamline.attention"]' in message  # where to fix it
    assert "seamline-fixture-broken's pyproject.toml" in message


def test_a_missing_dependency_names_the_target_but_not_the_table(
    with_fixture_plugins: Registry,
) -> None:
    broken = next(i for i in with_fixture_plugins.entries("attention") if i.name == "exploding")
    assert "'seamline_fixture_broken:ExplodingAttention'" in broken.reason
    assert "project.entry-points" not in broken.reason  # the entry point is right


def test_duplicate_names_are_an_error_naming_both(with_fixture_plugins: Registry) -> None:
    with pytest.raises(DuplicateComponentError) as caught:
        with_fixture_plugins.get("attention", "twin")
    message = str(caught.value)
    assert "seamline-fixture-twin-a 1.0.0" in message
    assert "seamline-fixture-twin-b 2.0.0" in message
    assert "twin" not in with_fixture_plugins.names("attention")


def test_duplicate_names_neither_trusted_say_so_not_conflict(
    with_fixture_plugins: Registry,
) -> None:
    # With an allowlist that names neither, it said "registered by ... and ...; uninstall
    # one", where trusting the one meant settles it.
    from seamline.contracts import ComponentLoadError
    from seamline.core.trust.policy import Allowlist, TrustPolicy

    only_ours = Allowlist(
        frozenset({"seamline-components"}), "p.yaml:9:8", ("seamline-components",)
    )
    narrowed = with_fixture_plugins.narrowed(TrustPolicy((only_ours,)))
    with pytest.raises(ComponentLoadError) as caught:
        narrowed.get("attention", "twin")
    message = str(caught.value)
    assert "seamline-fixture-twin-a 1.0.0" in message
    assert "seamline-fixture-twin-b 2.0.0" in message
    assert ", none of them trusted: " in message
    assert "trust the one you mean" in message


def test_major_contract_mismatch_is_refused(with_fixture_plugins: Registry) -> None:
    info = next(i for i in with_fixture_plugins.entries("attention") if i.name == "future")
    assert info.status == "refused"
    assert "major versions differ" in info.reason
    with pytest.raises(ContractVersionError, match=r"contract 2\.0 but this seamline hosts 1\.2"):
        with_fixture_plugins.get("attention", "future")


def test_rule_breakers_are_refused_with_reasons(with_fixture_plugins: Registry) -> None:
    entries = {(i.kind, i.name): i for i in with_fixture_plugins.entries()}
    assert entries["attention", "misnamed"].status == "refused"
    assert "registered as 'misnamed'" in entries["attention", "misnamed"].reason
    assert "make the entry point's name and the class's name the same" in (
        entries["attention", "misnamed"].reason
    )
    assert entries["sink", "notacomponent"].status == "refused"
    assert "does not name a seamline component class" in entries["sink", "notacomponent"].reason


def test_asking_for_the_name_a_refused_class_declares_says_where_it_went(
    with_fixture_plugins: Registry,
) -> None:
    """A user who asks for the class's own name was told only that nothing had it."""
    alias = next(i for i in with_fixture_plugins.entries("attention") if i.name == "alias")
    assert alias.status == "refused"
    with pytest.raises(ComponentNotFoundError) as caught:
        with_fixture_plugins.get("attention", "renamed")
    assert (
        "no attention component named 'renamed' (a class declaring that name is registered "
        "as 'alias' by seamline-fixture-future 0.1.0, and refused: declares name 'renamed'"
    ) in str(caught.value)
    assert "make the entry point's name and the class's name the same" in str(caught.value)
    with pytest.raises(ComponentNotFoundError) as empty:  # no entry declares the empty name
        with_fixture_plugins.get("attention", "")
    assert "a class declaring that name" not in str(empty.value)


def test_asking_for_a_component_registered_in_another_kind_s_group_says_where_it_went(
    with_fixture_plugins: Registry,
) -> None:
    # `seamline components` listed it as refused in the sink table, while the pipeline
    # asking for the attention heard only "no attention component named 'misplaced'".
    (misplaced,) = [i for i in with_fixture_plugins.entries("sink") if i.name == "misplaced"]
    assert misplaced.reason == "is an attention component registered as a sink"
    with pytest.raises(ComponentNotFoundError) as caught:
        with_fixture_plugins.get("attention", "misplaced")
    assert (
        "(seamline-fixture-future registers 'misplaced', an attention, in the entry-point group "
        "'seamline.sink': register it in 'seamline.attention')"
    ) in str(caught.value)


def test_unknown_name_suggests_the_closest(registry: Registry) -> None:
    with pytest.raises(ComponentNotFoundError, match=r"did you mean 'native'\?"):
        registry.get("attention", "nativ")


def test_components_command_lists_broken_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    for distribution in sorted(PLUGINS.iterdir()):
        monkeypatch.syspath_prepend(str(distribution))
    result = CliRunner().invoke(app, ["components", "--kind", "attention"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    lines = {line.split("│")[2].strip(): line for line in result.output.splitlines() if "│" in line}
    assert "broken" in lines["exploding"]
    assert "conflict" in lines["twin"]
    assert "refused" in lines["future"]
    assert "2.0" in lines["future"]  # the declared version shows even when refused
    assert "ok" in lines["native"]


def test_a_contract_version_that_is_not_a_string_is_named_as_such() -> None:
    """``contract_version = 1.0`` is declared, as the wrong type: "does not declare" misled."""
    numeric = type("Numeric", (ListLoader,), {"contract_version": 1.0})
    assert refusal_reason("loader", "list", numeric) == (
        "declares 'contract_version' as the float 1.0; it must be a string, such as \"1.0\""
    )
    undeclared = type("Undeclared", (ListLoader,), {"contract_version": None})
    assert refusal_reason("loader", "list", undeclared) == (
        "does not declare 'contract_version' (every component must)"
    )
    assert refusal_reason("loader", "list", ListLoader) is None


def test_a_plugin_that_prints_when_imported_does_not_break_json_on_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A debug print in a plugin's module went into the middle of ``--format json``."""
    import json

    info = tmp_path / "seamline_fixture_chatty-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: seamline-fixture-chatty\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[seamline.loader]\nchatty = seamline_fixture_chatty:ChattyLoader\n", encoding="utf-8"
    )
    (tmp_path / "seamline_fixture_chatty.py").write_text(
        "print('seamline_fixture_chatty imported (debug)')\n"
        "from tests.core.toy import ListLoader\n\n"
        "class ChattyLoader(ListLoader):\n    name = 'chatty'\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    result = CliRunner().invoke(app, ["components", "--kind", "loader", "--format", "json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)  # one JSON document: nothing else on stdout
    assert "chatty" in json.dumps(listed)
    assert "imported (debug)" in result.stderr


LOGGING_PLUGIN = """\
import logging, sys

import structlog

logging.basicConfig(level=logging.DEBUG, stream=sys.stdout, force=True)
structlog.configure(
    processors=[structlog.processors.KeyValueRenderer()],
    logger_factory=structlog.PrintLoggerFactory(),
)
from tests.core.toy import ListLoader


class LoudLoader(ListLoader):
    name = "loud"
"""


def test_a_plugin_that_configures_logging_when_imported_leaves_the_command_s_logging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``structlog.configure`` (or ``logging.basicConfig``) in a plugin's module replaced
    the command's logging: ``seamline explain --format json`` began with a key=value line
    on stdout, and ``run --log-format json`` wrote its warnings to stdout."""
    import logging
    import sys

    import structlog

    info = tmp_path / "seamline_fixture_loud-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: seamline-fixture-loud\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[seamline.loader]\nloud = seamline_fixture_loud:LoudLoader\n", encoding="utf-8"
    )
    (tmp_path / "seamline_fixture_loud.py").write_text(LOGGING_PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "seamline_fixture_loud", raising=False)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with structlog.testing.capture_logs() as logs:
        before = structlog.get_config()
        registry = Registry.discover(user_trust())
        assert structlog.get_config() == before
    assert (root.handlers, root.level) == (handlers, level)
    assert registry.get("loader", "loud").usable  # the plugin itself is not refused
    (said,) = [e for e in logs if e["event"] == "plugin_changed_logging"]
    assert said["log_level"] == "warning"
    assert said["distribution"] == "seamline-fixture-loud"
    assert said["changed"] == ["structlog.configure", "the root logger"]
    assert "ask its author to configure logging only where an application starts" in said["note"]


def test_a_component_built_without_its_config_is_a_contract_violation_naming_it() -> None:
    """A loader whose ``__init__`` forgot ``super().__init__(config)`` failed later, in the
    sink's start (which reads the loader's config for the manifest), blaming the sink."""
    from seamline.contracts import ContractViolation
    from seamline.core import ComponentInfo

    class NoSuper(ListLoader):
        name = "no-super"

        def __init__(self, config: object) -> None:  # no super().__init__(config)
            self.texts = ["a"]

    registry = Registry(
        [ComponentInfo("loader", "no-super", "t:NoSuper", "acme", "0.1", "ok", "", NoSuper, "1.0")]
    )
    with pytest.raises(
        ContractViolation, match=r"loader 'no-super' \(from acme 0.1\) has no config"
    ):
        registry.create("loader", "no-super", {"texts": ["a"]})


def test_two_registrations_under_one_distribution_name_are_a_conflict() -> None:
    """A folder on PYTHONPATH declaring itself ``seamline-components`` and registering
    ``npy`` was listed ``ok`` beside the real ``npy``: conflicts compared names only."""
    from seamline.core.registry import ComponentInfo
    from seamline.core.trust.policy import EVERYONE
    from tests.core.toy import MemorySink

    real = ComponentInfo(
        "sink", "memory", "tests.core.toy:MemorySink", "seamline-components", "0.1.0", "ok",
        "", MemorySink, "1.0",
    )  # fmt: skip
    impostor = ComponentInfo(
        "sink", "memory", "acme_fake:MemorySink", "seamline-components", "9.9.9", "ok", "",
        MemorySink, "1.0",
    )  # fmt: skip
    marked = Registry([real, impostor]).narrowed(EVERYONE).entries("sink")
    assert [info.status for info in marked] == ["conflict", "conflict"]
    assert marked[0].reason == (
        "name also registered by seamline-components 9.9.9 (acme_fake:MemorySink), another "
        "distribution of the same name"
    )
    alone = Registry([real]).narrowed(EVERYONE).entries("sink")
    assert [info.status for info in alone] == ["ok"]


def test_an_attention_registered_as_auto_is_refused() -> None:
    """``use: auto`` means choosing among the installed attentions: a third party's class
    registered as ``auto`` was listed ``ok``, and a pipeline's provenance named it as its
    attention (``attention auto (acme-auto 0.1.0)``)."""
    from tests.core.toy import NativeAttention

    auto = type("AutoAttention", (NativeAttention,), {"name": "auto"})
    assert refusal_reason("attention", "auto", auto) == (
        "is registered as 'auto', which a pipeline's 'attention: {use: auto}' reserves for "
        "choosing among the installed implementations; rename the entry point and the "
        "class's name"
    )
