"""The docs are tests: pytest collects README.md's and docs/*.md's console blocks.

See tests/docs/collect.py for what a block must do to pass, and how a page marks a
block that is illustrative only.
"""

from pathlib import Path

from tests.docs.collect import documentation_tests

pytest_collect_file = documentation_tests(Path(__file__).parent).pytest()
