"""Room for ``--max-connections``: the process's limit on open files, raised at start.

Each connection holds an open file (its socket), and ``--max-connections`` (1,024 by
default) is the same number as the soft limit on open files most containers and shells
give (``ulimit -n``: 1,024). Past that limit uvicorn's event loop (uvloop, on libuv)
cannot accept a connection: libuv accepts it and closes it at once, so clients got a
connection reset, never the documented 503, and the server logged nothing. Under
``ulimit -n 64``, 101 of 150 concurrent clients were reset; the compile cache could not
read its entries either.

So, as nginx, Go and the JVM do, the server raises its soft limit toward the hard limit
(which an unprivileged process may do) when the soft one is below what
``--max-connections`` needs, and when the hard limit is lower still it says so once,
naming both numbers and the fix, and serves (as nginx does): a server that refused to
start under the common hard limit of 1,024 would refuse its own defaults.
"""

from __future__ import annotations

import resource

from seamline.contracts.logs import get_logger

log = get_logger("seamline.adapters.serve")

OWN_FILES = 128
"""Files the server holds besides its connections. Measured (``/proc/PID/fd``): 16 once
listening (standard streams, the event loop's epoll and pipes, the listening socket),
26 once ``/v1/search`` opened a LanceDB index, and 53 to 63 more than the connections
open under 100 to 300 concurrent searches (the index's files, read in threads; a
compile cache entry while it is read). About twice that."""


def files_needed(max_connections: int) -> int:
    """Open files a server of ``max_connections`` may hold at once."""
    return max_connections + OWN_FILES


def make_room_for(max_connections: int) -> None:
    """Raise the soft limit on open files to what ``max_connections`` needs, up to the
    hard limit; warn once, naming both numbers and the fix, if it is still short."""
    needed = files_needed(max_connections)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):  # not known here: nothing to raise
        return
    if _enough(soft, needed):
        return
    target = needed if _enough(hard, needed) else hard
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):  # a system that refuses (macOS caps it at OPEN_MAX)
        target = soft
    if target > soft:
        log.info("raised the limit on open files", was=soft, now=target, needed=needed)
    if target < needed:
        log.warning(_short(target, needed, max_connections), open_files=target, needed=needed)


def _enough(limit: int, needed: int) -> bool:
    return limit == resource.RLIM_INFINITY or limit >= needed


def _short(limit: int, needed: int, max_connections: int) -> str:
    """The warning: what fails past the limit, and the two ways out."""
    fits = limit - OWN_FILES
    lower = (
        f", or lower --max-connections to {fits:,}"
        if fits >= 1
        else " (no --max-connections fits under it)"
    )
    return (
        f"the limit on open files ({limit:,}) is below the {needed:,} that --max-connections "
        f"{max_connections:,} needs (a file per connection, and up to {OWN_FILES} of the "
        "server's own): past it, connections are closed without an answer instead of being "
        f"answered 503. Raise the limit (`ulimit -n {needed}` in the shell that starts the "
        f"server, or the container's nofile limit){lower}"
    )
