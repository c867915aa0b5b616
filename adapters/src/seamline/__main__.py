"""``python -m seamline``: the ``seamline`` command, for an environment whose scripts are
not on ``PATH`` (or to be sure which interpreter runs it)."""

from seamline.adapters.cli.main import main

main()
