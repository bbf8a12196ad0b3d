"""Operating-system errors told in one line: which path, what went wrong, and for a full disk how much is free.

A study writes to shared disks for days; a full disk, a quota or a failing network filesystem
is the machine's problem, not concur's, and the user fixes it there. So every layer that meets
one (a worker, the index, data preparation) lets it reach the command line with the path it
concerns, and the one line printed says where and how much space is left there.
"""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

# OS errors that are about the machine, not the program: one line naming the path is the whole story.
ENVIRONMENT_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.ENOENT, errno.EISDIR, errno.EIO, errno.ENOTDIR}
)
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
# Errors of the disk itself: no job is at fault, so none is recorded as failed, and the free space is told.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})
UNITS = ("B", "kB", "MB", "GB", "TB")


def is_environment_error(error: OSError) -> bool:
    """An OS error the user fixes on the machine (permissions, a full disk, a missing path) rather than a bug."""
    return error.filename is not None or error.errno in ENVIRONMENT_ERRNOS


def is_storage_error(error: BaseException) -> bool:
    """A full disk, an exceeded quota or an I/O error: what no rerun fixes until the disk is."""
    return isinstance(error, OSError) and error.errno in STORAGE_ERRNOS


def with_path(error: OSError, path: Path | str) -> OSError:
    """`error` naming `path` when it names no file itself (a write through an open handle names none)."""
    if error.filename is not None:
        return error
    return OSError(error.errno, error.strerror or str(error), str(path))


def os_error_message(error: OSError) -> str:
    """One line for an OS error: what could not be done, to which path, why, and the free space when the disk is at fault."""
    paths = " -> ".join(str(name) for name in (error.filename, error.filename2) if name is not None)
    verb = "cannot write" if error.errno in WRITE_ERRNOS else "cannot access"
    line = f"{verb} {paths or 'a file'}: {error.strerror or error}"
    if is_storage_error(error) and error.filename is not None:
        line += f"; {free_space(Path(str(error.filename)))}: free some space (or fix the disk), then run the same command again"
    return line


def free_space(path: Path) -> str:
    """`12.3 MB free on /mnt/runs`: the space left on the filesystem holding `path` (its nearest existing folder)."""
    place = path
    while not place.is_dir() and place != place.parent:
        place = place.parent
    try:
        free = shutil.disk_usage(place).free
    except OSError:
        return f"free space on {place} unknown"
    return f"{size(free)} free on {place}"


def size(count: float) -> str:
    """A byte count for people: 0 B, 512 B, 1.5 kB, 12.3 MB (powers of 1000)."""
    unit = 0
    while count >= 1000 and unit < len(UNITS) - 1:
        count, unit = count / 1000, unit + 1
    return f"{count:.0f} B" if unit == 0 else f"{count:.1f} {UNITS[unit]}"
