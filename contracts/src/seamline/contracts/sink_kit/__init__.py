"""A kit for sink authors: the write lifecycle of a sink that publishes its output whole.

A sink that keeps its promises (nothing visible before the run ends, every record
exactly once across a crash, one run per destination, a checkpoint nobody can turn
against it, parts of a sharded run published together) does a great deal that is
the same for every output format. It lives here once, for seamline's own sinks and a
third party's alike (part of ``seamline-contracts``: pydantic and numpy, nothing
else)::

    from seamline.contracts.readback import LineReader
    from seamline.contracts.sink_kit import OutputConfig, PublishingSink, record_fields

    class TsvReader(LineReader):
        def parse(self, line, where): ...  # a checked row, and the vector's values

    class TsvSink(PublishingSink[OutputConfig]):
        name = "tsv"
        contract_version = "1.4"
        Config = OutputConfig
        reader = TsvReader

        def write_rows(self, records, files):
            ...  # each record, as one line, into files["records"]

(whole, tested, in the example package ``seamline-example-csv``: ``seamline_example_csv/tsv.py``).

The names here are the kit's public face:

- :class:`PublishingSink`, the template: it owns the destination's lock, the
  checkpoint, the partial files, the errors file, publication and staged parts; a sink
  fills in :meth:`~PublishingSink.write_rows` and, for rows kept outside byte streams,
  a few more hooks;
- :class:`OutputConfig`, the fields every such sink has (``path``, ``errors_path``),
  made absolute once and checked to be distinct files; :data:`OutputPath` for a
  sink's further paths;
- :class:`SinkState` and :class:`NoState`: what a sink adds to its checkpoint, as a
  strict schema (the checkpoint is read back as untrusted input);
- :class:`AtomicFile` and :class:`AtomicGroup`: files published by renaming them
  into place, one after another; :func:`fsync_directory` to make a rename durable;
  :func:`write_bytes_atomically` to replace a small file (a record, a cache entry) in a
  folder others may write, never through a link planted at a temporary name;
  :func:`planted_inside` to find a link (or a FIFO) planted in a folder a library is
  about to write; :func:`stops_deferred` to hold a Ctrl-C, SIGTERM or SIGHUP back
  until a publication's last step (a sink that publishes in steps of its own);
- :data:`RunId`: a staged run's id, as a state that records one must check it;
  :func:`checkpoint_path`: where the kit keeps an output's checkpoint (a reader that
  finds no manifest can tell an interrupted first run from no run at all);
- :func:`made_by_another` (and :func:`model_changes`): whether an output was made as
  this run makes its vectors (model, precision, versions), the rule of ``--resume``,
  for a sink that adds to an output it published earlier (the lancedb sink's merges);
- what a sink takes from a record: :func:`checked_vector`, :func:`record_fields`,
  :func:`record_metadata`.

Reading an output back is the other half: a sink names its
:class:`~seamline.contracts.readback.OutputReader` (``reader = ...``), which
``seamline search`` and :func:`~seamline.contracts.readback.read_records` use.
Everything else in this package (``_atomic``, ``_checkpoint``, ``_lock``, ``_parts``,
``_paths``) is private to the kit and may change without notice.
"""

from seamline.contracts.formats import CHECKPOINT_FORMAT
from seamline.contracts.sink_kit._atomic import (
    AtomicFile,
    AtomicGroup,
    fsync_directory,
    planted_inside,
    write_bytes_atomically,
)
from seamline.contracts.sink_kit._checkpoint import NoState, SinkState, checkpoint_path
from seamline.contracts.sink_kit._config import OutputConfig
from seamline.contracts.sink_kit._deferred import stops_deferred
from seamline.contracts.sink_kit._made_by import Maker, made_by_another, model_changes
from seamline.contracts.sink_kit._parts import RunId
from seamline.contracts.sink_kit._paths import OutputPath, blocked_folder, located
from seamline.contracts.sink_kit._records import checked_vector, record_fields, record_metadata
from seamline.contracts.sink_kit._staged import publish_staged, refuse_blocked_parts
from seamline.contracts.sink_kit._template import PublishingSink

__all__ = [
    "CHECKPOINT_FORMAT",
    "AtomicFile",
    "AtomicGroup",
    "Maker",
    "NoState",
    "OutputConfig",
    "OutputPath",
    "PublishingSink",
    "RunId",
    "SinkState",
    "blocked_folder",
    "checked_vector",
    "checkpoint_path",
    "fsync_directory",
    "located",
    "made_by_another",
    "model_changes",
    "planted_inside",
    "publish_staged",
    "record_fields",
    "record_metadata",
    "refuse_blocked_parts",
    "stops_deferred",
    "write_bytes_atomically",
]
