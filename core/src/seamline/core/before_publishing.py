"""What must hold before a run's output is published; otherwise nothing is.

Publishing replaces what the output held (a sink in ``overwrite`` mode, the default) or
changes it (``sync`` deletes the rows of documents the run no longer saw). So two runs
are stopped before that point, and the output keeps what it held:

- a run whose counts do not reconcile (an item the loader yielded is unaccounted for):
  something is wrong in the host or a component (``ContractViolation``, exit 1);
- a run that read documents, set every one of them aside as failed and embedded none.
  Documents that fail one by one are set aside and the run goes on; when *all* of them
  fail, a setting almost always does not fit the input (a field name misspelt in the
  loader's ``with:``, the wrong encoding), and publishing would replace a good output
  with an empty one (``UserError``, exit 2, naming the first document's reason).
"""

from __future__ import annotations

from seamline.contracts import ContractViolation, DocumentError, RunCounts, UserError
from seamline.contracts.untrusted import cut, visible

REASON_CHARACTERS = 300
"""How much of the first document's reason the refusal quotes."""


def check_reconciles(before: RunCounts | None, counts: RunCounts) -> None:
    """Every item read must be accounted for, or nothing is published.

    What the output would hold (what was committed before this part, and this part's
    work) must reconcile: read = written + dead-lettered + skipped by rule. It does
    unless something is wrong in the host or a component; the run then stops
    (``ContractViolation``, exit 1), and the sink keeps its last commit.
    """
    held = counts if before is None else before + counts
    if not held.reconciles:
        raise ContractViolation(
            f"the run's counts do not reconcile ({held.reconciliation()}): some item the "
            "loader yielded is not accounted for, so the output was not published"
        )


def check_something_embedded(held: RunCounts | None, first: DocumentError | None) -> None:
    """Refuse to publish an output of documents that all failed (``UserError``).

    ``held`` is what the output would hold (None when that is unknown: an older
    checkpoint did not record it, a shard finished by an earlier run); ``first`` the
    first document set aside as failed, when the caller knows it (a sharded run's
    driver reads it from the shards' reports; not when the failures were all committed
    by an earlier attempt).
    """
    if held is None or held.documents > 0 or held.failed_documents == 0:
        return
    if held.read == 1:
        what = "the one document read was set aside as failed, and nothing was embedded"
    elif held.skipped_documents == 0:
        what = f"all {held.read:,} documents read were set aside as failed, and none was embedded"
    else:
        what = (
            f"all {held.read:,} documents read were set aside ({held.failed_documents:,} "
            f"failed, {held.skipped_documents:,} skipped by rule), and none was embedded"
        )
    if first is not None:
        reason = cut(visible(first.reason), REASON_CHARACTERS)
        what += f" (the first, {cut(visible(first.id), 100)!r}: {reason})"
    else:
        what += (
            " (the log monitor names each one's reason as it is set aside: "
            "--set 'monitors=[{use: log}]')"
        )
    raise UserError(
        f"{what}; nothing was published, so the output keeps what it held before this run. "
        "When every document fails alike, a setting does not fit the input (a field or "
        "column name in the loader's 'with:', its encoding): fix it and run again"
    )
