"""One error hierarchy for everything that can go wrong at a seam.

Every error seamline raises on purpose derives from :class:`SeamlineError`, so an
embedding application can catch one type. :class:`UserError` marks the errors a
user can fix (bad config, unknown component, unsupported choice); the command
line turns those into a message and exit code 2 instead of a traceback.
"""

from __future__ import annotations

from typing import Literal


class SeamlineError(Exception):
    """Base class of every error seamline raises deliberately."""


class UserError(SeamlineError):
    """An error the user can fix: the message says what is wrong and how to fix it.

    ``setting``, where a component raises it while it is built, names the setting of its
    ``with:`` block the error is about (``WeightsError(..., setting="weights")``): the
    host then places the error at that setting's value, where the user fixes it, rather
    than at the component's ``use:``. None (the default) leaves it at ``use:``.
    """

    setting: str | None = None

    def __init__(self, *args: object, setting: str | None = None) -> None:
        super().__init__(*args)
        if setting is not None:
            self.setting = setting


class ConfigError(UserError):
    """A pipeline file or override is invalid.

    ``location`` is ``file:line:column`` (1-based) of the offending node, or the
    command-line override that introduced the value.
    """

    def __init__(
        self, message: str, location: str | None = None, *, setting: str | None = None
    ) -> None:
        self.location = location
        self.detail = message
        super().__init__(f"{location}: {message}" if location else message, setting=setting)

    @property
    def problems(self) -> tuple[ConfigError, ...]:
        """Each located problem, in the order of the file: this error alone, or, for a file
        found to have several, each of them (their ``location`` and ``detail``).

        Defined here, on what an application catches, so that a caller listing the
        problems of any ``ConfigError`` is type-checked: the attribute existed on the
        subclass a pipeline raises only, and ``mypy --strict`` refused it. A property,
        not ``(self,)`` stored: an error holding itself is a reference cycle.
        """
        return (self,)


class ComponentNotFoundError(UserError):
    """No registered component of that kind has that name."""


class ComponentLoadError(UserError):
    """A component's entry point exists but could not be imported or is malformed."""


class DuplicateComponentError(UserError):
    """Two distributions register the same name for the same kind."""


class ContractVersionError(UserError):
    """A component implements a contract version this seamline cannot host."""


class UnsupportedError(UserError):
    """A component was asked for something its ``supports()`` refuses."""

    def __init__(self, message: str, reasons: tuple[str, ...] = ()) -> None:
        self.reasons = reasons
        super().__init__(message)


class ContractViolation(SeamlineError):
    """A component broke its contract at run time (wrong shape, dtype or type).

    This is a bug in the component, not in the user's input, so it is not a
    :class:`UserError`.
    """


RESUME = "--resume (run(resume=True) from Python)"
"""How a message names resuming: a refusal or a stop raised in the library reaches the
``seamline`` command's user and a caller of ``Pipeline.run`` alike, and the library has
no ``--resume`` (a notebook was told to "run again with --resume"). Every message that
says to resume says it with this, in both spellings."""
RESTART = "--restart (run(restart=True) from Python)"
"""How a message names starting over past a checkpoint that cannot be resumed (both
spellings, as :data:`RESUME`): a caller of ``Pipeline.run`` was told "run again with
--restart (or without --resume)", neither of which it has."""
WITHOUT_RESUME = "without --resume (resume=False from Python)"
"""How a message names a plain run, where a resume is refused or pointless (as :data:`RESUME`)."""


class ResumeRefused(UserError):
    """A resume would continue an output the run no longer matches, so it was refused.

    A sink raises it from ``recover`` when its checkpoint was made by another model,
    pipeline or input (the message names which). Nothing has been written yet, so a
    caller may start over instead (``seamline run --resume --restart``,
    ``run(resume=True, restart=True)``).
    """


class WeightsError(UserError):
    """Model weights are missing, unreadable or fail their integrity check."""


class ResourceExhausted(SeamlineError):
    """The machine ran out of memory, open files or room on disk: not the input's fault,
    nor a kernel's.

    A kernel that failed for want of memory was demoted as if it could not serve the
    shape, and so was every other one, each failing the same way: the run ended with
    "no attention candidate can serve" and exit code 2, as though the pipeline were
    wrong, and nothing said the checkpoint was kept. ``resource`` is what ran out
    (:data:`MEMORY`, :data:`OPEN_FILES`, :data:`FILE_SIZE`, :data:`DISK_SPACE` or
    :data:`DISK_QUOTA`), ``where`` what was under way, ``detail`` the error as it was
    raised, ``step`` the component's call it left (``load``, ``prepare``; "" when none
    was under way), by which the remedy is chosen; plain values, so that it crosses
    process boundaries intact.
    """

    def __init__(self, resource: str, where: str, detail: str, step: str = "") -> None:
        self.resource = resource
        self.where = where
        self.detail = detail
        self.step = step
        super().__init__(f"ran out of {resource} {where} ({detail})")

    @property
    def remedy(self) -> str:
        """What to do about it, before running again."""
        return exhaustion_remedy(self.resource, step=self.step)

    def __reduce__(self) -> tuple[type[ResourceExhausted], tuple[str, str, str, str]]:
        return (type(self), (self.resource, self.where, self.detail, self.step))


MEMORY = "memory"
OPEN_FILES = "open files"
FILE_SIZE = "room under the file-size limit"
"""EFBIG: a file reached the largest size the process (``ulimit -f``) or the file system
allows."""
DISK_SPACE = "disk space"
DISK_QUOTA = "disk quota"

_REMEDIES = {
    OPEN_FILES: "raise the limit on open files (ulimit -n)",
    FILE_SIZE: (
        "raise the limit on a file's size (ulimit -f), or write the output to a file "
        "system that takes larger files"
    ),
    DISK_SPACE: (
        "free space on the disk being written to, or write the output to one with more room"
    ),
    DISK_QUOTA: "free space within your disk quota (or have it raised)",
}
"""What to do when something other than memory ran out: the same whatever the step."""
LOADING = frozenset({"load"})
"""A model's call that reads its weights: they are held whole, whatever the batches."""
READING = frozenset({"read", "prepare"})
"""The calls that hold a whole document (a loader's read, a model's tokenizing): what
bounds them is the loader's ``max_bytes``, not the batches."""
BATCHED = frozenset({"", "apply", "collate", "call", "write"})
"""The calls whose memory grows with the batch ("": no component's call, the attention
compiled, run or timed on a batch's shape)."""


def exhaustion_remedy(resource: str, *, resuming: bool = False, step: str = "") -> str:
    """What to do when ``resource`` ran out, before running again: "fix that" says no
    more than that something broke.

    ``step``: the component's call that ran out (``load``, ``prepare``, ``apply``; ""
    for none). Memory is advised for by it: smaller batches were advised for a model
    that ran out loading its weights, where batches play no part. ``resuming``: the
    advice goes on "then run again with --resume". A resumed run keeps its batch and
    loader settings (``run.batch_size``, ``run.batch_tokens`` and the loader's section
    are checked against the checkpoint), so changing them is said to need ``--restart``
    there: advised plainly, they were refused by the very ``--resume`` the line went on
    to advise."""
    if resource != MEMORY:
        return _REMEDIES.get(resource, f"make more {resource} available")
    if step in LOADING:
        return (
            "give the run more memory (loading the model holds all its weights at once, so "
            "it needs at least their size on disk)"
        )
    if step in READING:
        if resuming:
            return (
                "give the run more memory (a lower loader.with.max_bytes, which sets the "
                "largest documents aside, cannot be resumed: it needs --restart, which "
                "starts over)"
            )
        return (
            "give the run more memory, or a lower loader.with.max_bytes (the largest "
            "document is read and tokenized whole)"
        )
    if step not in BATCHED:
        return "give the run more memory"
    if resuming:
        return (
            "give the run more memory (smaller batches, a lower run.batch_size or "
            "run.batch_tokens, cannot be resumed: they need --restart, which starts over)"
        )
    return (
        "give the run more memory, or smaller batches (a lower run.batch_size or run.batch_tokens)"
    )


NOTHING_COMMITTED = "seamline_nothing_committed"
"""Attribute set (True) on a ``KeyboardInterrupt`` that stopped a run before its output
held any commit: what the stop says then is that a run again starts from the beginning,
not that ``--resume`` goes on from a commit there is none of."""
FIRST_COMMIT_UNDER_WAY = "seamline_first_commit_under_way"
"""Attribute set (True) on a ``KeyboardInterrupt`` that stopped a run inside its first commit.

Whether that commit reached the disk the sink contract cannot say (a stop while the files
are flushed leaves none; one just after the checkpoint's rename leaves it). It was told as
"what the sink last committed is kept", of a run that often had committed nothing: the
stop now says what ``--resume`` does either way, true whichever it was."""


NOTHING_TO_RESUME = "{output} is complete; there is nothing to resume"
"""What a resume of a published output finds (``seamline run``'s stop after publishing,
``run(resume=True)`` of a finished run say it alike): no commit, its output complete."""
COMMITTED_DOCUMENTS = "seamline_committed_documents"
"""Attribute set (an int) on a ``KeyboardInterrupt`` that stopped a whole run after a
commit: the documents that commit holds, which a resume goes on from. Not set when the
count is not known (a checkpoint too old to say, a stop inside a later commit)."""


StopCommits = Literal["none", "unknown", "kept"]
"""What a stopped run's output holds, as :func:`stop_commits` reads it off the stop."""


def stop_commits(stop: BaseException) -> StopCommits:
    """What the output of the run ``stop`` ended holds, from the attributes the worker set.

    ``"none"``: no commit (a run again starts from the beginning); ``"unknown"``: the stop
    came inside the first commit, which may or may not have reached the disk; ``"kept"``:
    the last commit is there for a resume. The library's note on a stop
    (:mod:`seamline.core.stop_notes`) and the command's line (``seamline run``) each say it
    in their own words, ``run(resume=True)`` or ``--resume``; the decision is this one.
    """
    if getattr(stop, NOTHING_COMMITTED, False):
        return "none"
    if getattr(stop, FIRST_COMMIT_UNDER_WAY, False):
        return "unknown"
    return "kept"


class ShardFailed(SeamlineError):
    """A shard of a run could not complete, so the run stopped and published nothing.

    Carries which shard, which component (``model 'bert-encoder' (apply, from
    seamline-components 0.1.0)``: the call and the distribution it came from, or ``the
    pipeline`` when no component's call was under way), the reason, and whether the
    shard's output holds a commit that ``--resume`` continues from (``committed``: one
    the shard made, or the one it resumed from; None when the worker cannot tell), as
    plain values so that it crosses process boundaries (an executor's workers) intact.
    The message tells the user what a run again will do, so it must not promise a
    commit that was never made.
    """

    def __init__(
        self, index: int, count: int, component: str, reason: str, committed: bool | None = None
    ) -> None:
        self.index = index
        self.count = count
        self.component = component
        self.reason = reason
        self.committed = committed
        if count == 1:  # the whole run, as it always was: no shards to speak of
            failed = f"the run failed in {component}: {reason}; nothing was published"
        else:
            failed = (
                f"shard {index} of {count} failed in {component}: {reason}; nothing was published"
            )
        super().__init__(f"{failed}{_what_a_run_again_does(index, count, committed)}")

    def __reduce__(self) -> tuple[type[ShardFailed], tuple[int, int, str, str, bool | None]]:
        return (type(self), (self.index, self.count, self.component, self.reason, self.committed))


def _what_a_run_again_does(index: int, count: int, committed: bool | None) -> str:
    """The end of :class:`ShardFailed`'s message: what is kept, and what a run again does."""
    if count == 1:
        if committed is False:
            return (
                " and nothing was committed, so a run again starts from the beginning (fix the "
                "cause, then run again; resuming is not needed)"
            )
        if committed is None:
            return (
                " and what the sink last committed, if anything, is kept (fix the cause, then "
                f"run again with {RESUME} to continue from the last commit, if there is one)"
            )
        return (
            " and what the sink last committed is kept (fix the cause, then run again with "
            f"{RESUME} to continue from that commit)"
        )
    if committed is False:
        return (
            f" and shard {index} committed nothing (fix the cause and run again with {RESUME}: "
            f"shard {index} starts from its beginning, the other shards continue from their "
            "last commits)"
        )
    return f" (fix the cause and run again with {RESUME} to continue from the shards' last commits)"
