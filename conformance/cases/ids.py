"""How a case id names its file: ``<file>::<id>``, the file's path from a root that does not move with the shell.

The root is the nearest folder above the file that holds ``.git`` (a folder, or the file a linked worktree or a
submodule has) or ``.dmlconf-root``, the marker this harness commits at its own root: so its cases keep their
``cases/...`` ids in a copy without ``.git`` (an unpacked archive, a CI artifact) and when it is vendored in another
repository (``third_party/dmlconf/cases/...`` is ``cases/...``, the nearer root winning). A file under neither (a case
folder copied elsewhere) is named from the directory given on the command line that it was found under, or, for a file
named itself, from its folder. The same run made from the checkout, from its parent or from a subfolder thus gives the
same ids, which the waivers, ``--shard``, ``--resume`` and ``dmlconf diff`` match on; run from the repository's root
they are the paths relative to the working directory, as they always were. The path is the one the file was reached by
(a symbolic link is named, not followed) and is written with ``/`` on every system.
"""

from __future__ import annotations

import os

# What makes a folder the root: a repository's, or the one the harness ships (a copy of it may have no .git, or
# sit inside a driver team's repository).
ROOT_MARKERS = (".git", ".dmlconf-root")


def repository_root(path: str) -> str | None:
    """The nearest folder above ``path`` (absolute, links not followed) that holds ``.git`` or ``.dmlconf-root``;
    None outside any."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        if any(os.path.lexists(os.path.join(folder, marker)) for marker in ROOT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def file_id(path: str, given: str | None = None) -> str:
    """``path`` as case ids name it: from its root (repository_root); under none, from ``given`` (the directory named
    on the command line that ``path`` was found under), else from ``path``'s own folder. Always with ``/``."""
    absolute = os.path.abspath(path)
    root = repository_root(absolute) or given or os.path.dirname(absolute)
    try:
        relative = os.path.relpath(absolute, os.path.abspath(root))
    except ValueError:  # Windows: another drive than ``given``
        relative = os.path.basename(absolute)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):  # not under ``given`` after all
        relative = os.path.basename(absolute)
    return relative.replace(os.sep, "/")
