"""How a case id names its file: ``<file>::<id>``, the file's path from a root that does not move with the shell.

The root is the repository the file is in: the nearest folder above it that holds ``.git`` (a folder, or the file a
linked worktree or a submodule has). A file in no repository (a case folder copied elsewhere, an unpacked archive)
is named from the directory given on the command line that it was found under, or, for a file named itself, from
its folder. The same run made from the checkout, from its parent or from a subfolder thus gives the same ids, which
the waivers, ``--shard``, ``--resume`` and ``dmlconf diff`` match on; run from the repository's root they are the
paths relative to the working directory, as they always were. The path is the one the file was reached by (a
symbolic link is named, not followed) and is written with ``/`` on every system.
"""

from __future__ import annotations

import os

REPOSITORY_MARKER = ".git"


def repository_root(path: str) -> str | None:
    """The nearest folder above ``path`` (absolute, links not followed) that holds ``.git``; None outside any."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if os.path.lexists(os.path.join(folder, REPOSITORY_MARKER)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def file_id(path: str, given: str | None = None) -> str:
    """``path`` as case ids name it: from its repository's root; outside any, from ``given`` (the directory named on
    the command line that ``path`` was found under), else from ``path``'s own folder. Always with ``/``."""
    absolute = os.path.abspath(path)
    root = repository_root(absolute) or given or os.path.dirname(absolute)
    try:
        relative = os.path.relpath(absolute, os.path.abspath(root))
    except ValueError:  # Windows: another drive than ``given``
        relative = os.path.basename(absolute)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):  # not under ``given`` after all
        relative = os.path.basename(absolute)
    return relative.replace(os.sep, "/")
