"""Whole-file writes, without jax: a file is written completely or not at all.

Where it sits: runtime/ (stdlib only, so the compiler's commands that never start jax, such as
`scenec import`, use it too); runtime/io.py writes compiled models with it, the trainers their
checkpoints, the CLI its outputs.
"""

from __future__ import annotations

import os
import pathlib
import tempfile


def atomic_write_bytes(path, data: bytes) -> None:
    """Write a whole file or nothing: a temporary file beside it, then a rename. The file gets the
    permissions a plain open() would give (mkstemp's are owner-only)."""
    path = pathlib.Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
