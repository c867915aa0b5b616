"""What a stopped ``Pipeline.run`` leaves, said on the ``KeyboardInterrupt`` it raises again.

``seamline run`` says it in its one line (``interrupted: nothing was published; what the
sink last committed is kept: run again with --resume``). A caller of the library got a
bare ``KeyboardInterrupt`` under a hundred lines of JAX's frames, and a cell run again
without ``resume=True`` started over without a word, discarding the committed work. The
stop now carries a note (PEP 678: Python and IPython print it under the traceback) that
says the same, in the library's words: what was kept, and ``run(resume=True)``.

How far the run got is told by the attributes the worker set on the stop
(:func:`seamline.contracts.errors.stop_commits`), as the command reads them.
"""

from __future__ import annotations

from seamline.contracts.errors import COMMITTED_DOCUMENTS, stop_commits

LIBRARY_RESUME = "run(resume=True)"
"""How a caller of the library goes on from a commit (``--resume`` on the command line)."""


def stop_note(stop: KeyboardInterrupt, *, begun: bool = True, published: bool = False) -> str:
    """The note for ``stop``: what the run it stopped left, and what a run again does.

    ``begun``: the executor had been called (before, the model was being pinned or its
    precision negotiated, and the output was not touched). ``published``: the stop came
    after the output was published (while the run closed its components): it is
    complete, and a resume would find nothing to go on from.
    """
    if not begun:
        return (
            "nothing was published; the run had not begun, so its output (and any "
            "checkpoint an interrupted run left) is as it was"
        )
    if published:
        return (
            "the output was published before the stop: it is complete, and there is "
            f"nothing to resume ({LIBRARY_RESUME} would start from the beginning)"
        )
    commits = stop_commits(stop)
    if commits == "none":
        return (
            "nothing was published; nothing was committed either, so a run again starts "
            "from the beginning"
        )
    if commits == "unknown":
        return (
            "nothing was published; the stop came while the first commit was being made, "
            f"so it may not have been: {LIBRARY_RESUME} goes on from it if it was (from the "
            "beginning if not)"
        )
    documents = getattr(stop, COMMITTED_DOCUMENTS, None)
    held = f" ({documents:,} documents)" if isinstance(documents, int) else ""
    return (
        f"nothing was published; what the sink last committed{held} is kept: {LIBRARY_RESUME} "
        "goes on from it (a run without it starts over, discarding it)"
    )


def add_stop_note(stop: KeyboardInterrupt, *, begun: bool = True, published: bool = False) -> None:
    """Add :func:`stop_note` to ``stop``, once (a stop raised again keeps its first note)."""
    note = stop_note(stop, begun=begun, published=published)
    if note not in getattr(stop, "__notes__", ()):
        stop.add_note(note)
