"""Loaders: where documents come from (``text-files``, ``jsonl``).

Each is registered under the ``seamline.loader`` entry-point group exactly as a
third party's loader would be; nothing imports these modules by name.
"""
