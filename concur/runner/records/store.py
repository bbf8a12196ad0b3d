"""The SQLite index of results (`runs/concur.sqlite`, WAL mode), and how readers see finished jobs.

Results are files first: the index holds one row per finished job (`result.json` with
status "ok" or "failed"), never a partial result, and can be rebuilt from the job
directories at any time. So the index may lag behind the files, and every reader makes up
for it: `finished_jobs` lists the job directories (one stat each, no read), reads the
results the index does not hold yet (or holds from an older file, by their `mtime:size`
stamp), indexes them when it may write, and reports a damaged file in one line instead of
failing or taking it for "no result".

Many drivers may share one runs dir: every connection waits up to `BUSY_TIMEOUT_SECONDS`
for a lock, writes take the write lock up front (`BEGIN IMMEDIATE`, so a transaction never
has to upgrade a stale read snapshot), what SQLite still answers "locked" is retried with a
bounded backoff, and the index file is created complete under a temporary name and linked
into place, so no process ever opens a half-made one. Readers of a runs dir they may not
write open the index read-only (`immutable`, since they cannot create WAL's shared-memory
file there) and change nothing.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from concur.errors import ConcurError, DamagedFileError, MissingSourceError
from concur.fsutil import FILE_MODE, default_permissions, move_aside
from concur.progress import task_progress
from concur.runner.records.jobdir import (
    JOB_FILE,
    RESULT_FILE,
    JobDir,
    JobState,
    file_stamp,
    job_dir_names,
    read_job_file,
    result_stamps,
)
from concur.runner.records.result import COLUMNS, JSON_COLUMNS, OK_STATUS, STAMP_COLUMN, JobResult, score_problem

TABLE = "jobs"
BUSY_TIMEOUT_SECONDS = 30.0  # how long a connection waits for another process's lock before SQLite says "locked"
LOCK_RETRIES = 8  # further tries of an operation SQLite still answered "locked" (a stale snapshot, a journal switch)
FIRST_BACKOFF_SECONDS = 0.05  # the first pause between those tries, doubled each time, with jitter
MAX_BACKOFF_SECONDS = 2.0
BUSY_ERRORS = ("SQLITE_BUSY", "SQLITE_LOCKED")  # sqlite_errorname prefixes: another connection holds a lock
DAMAGE_ERRORS = ("SQLITE_NOTADB", "SQLITE_CORRUPT")  # the file is not an SQLite database, or a broken one
# sqlite_errorname prefix -> the OS error it stands for, most specific first (a shared-memory file it could not grow: no space)
STORAGE_ERRORS = {"SQLITE_FULL": errno.ENOSPC, "SQLITE_IOERR_SHMSIZE": errno.ENOSPC, "SQLITE_IOERR": errno.EIO}
WAL = "wal"
WAL_SUFFIXES = ("-wal", "-shm")  # the files SQLite keeps beside a WAL database
ORDER = "approach, benchmark, hparam_id, seed"
ACTIVE_STATES = (JobState.RUNNING, JobState.INTERRUPTED)  # a job directory without a result that started
PROGRESS_MIN_FILES = 500  # reading this many result files shows a progress bar
_SQL_TYPES = {str: "TEXT", int: "INTEGER", float: "FLOAT"}
REQUIRED_COLUMNS = ("key", "approach", "benchmark", "hparam_id", "seed", "status", "em", "f1")

T = TypeVar("T")


@dataclass(frozen=True)
class Refresh:
    """What a refresh of the index from the job directories found."""

    rows: list[dict[str, Any]]  # every finished job's row, as the files say now
    with_result: frozenset[str]  # keys of the job directories holding a result.json, damaged or not
    damaged: list[DamagedFileError] = field(default_factory=list)  # result.json files that could not be read


class Store:
    """The index: `Store(path)` reads and writes it (creating it when missing); `Store.open_for_reading(path)`
    only reads, also in a runs dir this process may not write. A damaged index raises DamagedFileError."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path, self.read_only = path, read_only
        if read_only and not path.exists():
            raise MissingSourceError(f"no results index at {path}")
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not writable(path):
                raise ConcurError(f"{path} cannot be written by this user; run jobs in a runs dir you may write (--runs-dir)")
            if not path.exists():
                _create(path)
        _refuse_empty(path)
        self.conn = _connect(path, read_only=read_only)
        try:
            columns = _retrying(self._columns)
            _refuse_incomplete(path, columns)
            if not read_only:
                _retrying(self._ensure_wal)
                if set(COLUMNS) - columns:
                    _retrying(self._add_columns)
        except BaseException:
            self.conn.close()
            raise

    @classmethod
    def open_for_reading(cls, path: Path) -> Store:
        """The index read-only: no write, no journal switch, no file created beside it."""
        return cls(path, read_only=True)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, result: JobResult, job_dir: Path) -> None:
        """Index one finished job from its result.json content (replacing the row of an earlier attempt)."""
        self._write([result.index_row(job_dir, file_stamp(job_dir / RESULT_FILE))])

    def sync(self, jobs_dir: Path) -> Refresh:
        """Make the index hold exactly the readable results of the job directories (every one read again);
        damaged results are reported and their rows dropped."""
        return self._update(jobs_dir, full=True)

    def refresh(self, jobs_dir: Path) -> Refresh:
        """The finished jobs as the files say now, reading only the results the index lacks or holds from an
        older file; a writable index takes them in, and loses the rows whose result.json is gone. Without a
        jobs directory at all (an index copied elsewhere to analyse) the index is all there is."""
        if not jobs_dir.is_dir():
            return Refresh(self.rows(), frozenset())
        return self._update(jobs_dir, full=False)

    def _update(self, jobs_dir: Path, *, full: bool) -> Refresh:
        """Read the results that `full` or their stamps call for and, when writable, index them and drop the rows
        without a readable result, in one transaction (a concurrent reader sees the old rows or the new ones).

        The index is read before the job directories are listed, so a row another driver records
        meanwhile is never dropped: its result.json was written before it was recorded.
        """
        indexed = {row["key"]: row for row in self.rows()}
        stamps = result_stamps(jobs_dir)
        stale = stamps if full else {key: stamp for key, stamp in stamps.items() if _outdated(indexed.get(key), stamp)}
        fresh, damaged = read_rows(jobs_dir, stale)
        unreadable = {error.path.parent.name for error in damaged} if full else set()
        drop = [key for key in indexed if key not in stamps or key in unreadable]
        if not self.read_only and (fresh or drop):
            self._write(fresh, drop)
        current = [row for key, row in indexed.items() if key in stamps and key not in stale]
        return Refresh(_view(current + fresh), frozenset(stamps), damaged)

    def get(self, key: str) -> dict[str, Any] | None:
        rows = self.rows("key = ?", [key])
        return rows[0] if rows else None

    def rows(self, where: str | None = None, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
        query = f"SELECT * FROM {TABLE}" + (f" WHERE {where}" if where else "") + f" ORDER BY {ORDER}"
        with _errors_named(self.path):
            cursor = self.conn.execute(query, list(params))
            names = [column[0] for column in cursor.description]
            return [_decoded(dict(zip(names, values))) for values in cursor]

    def quick_check(self) -> str | None:
        """What SQLite's own consistency check finds wrong with the index (every page read), None when nothing."""
        with _errors_named(self.path):
            problems = [row[0] for row in self.conn.execute("PRAGMA quick_check")]
        return None if problems == ["ok"] else "; ".join(problems[:3])

    def _columns(self) -> set[str]:
        with _errors_named(self.path):
            return {row[1] for row in self.conn.execute(f"PRAGMA table_info({TABLE})")}

    def _ensure_wal(self) -> None:
        """WAL lets readers read while a driver writes; an index made by `_create` is in WAL already."""
        with _errors_named(self.path):
            if self.conn.execute("PRAGMA journal_mode").fetchone()[0] != WAL:
                self.conn.execute(f"PRAGMA journal_mode={WAL}")

    def _add_columns(self) -> None:
        """Columns newer code added, for an index an older version made (under the write lock: drivers race)."""
        with self._transaction():
            for name in sorted(set(COLUMNS) - self._columns()):
                self.conn.execute(f"ALTER TABLE {TABLE} ADD COLUMN [{name}] {_SQL_TYPES[COLUMNS[name].kind]}")

    def _write(self, rows: list[dict[str, Any]], drop: Iterable[str] = ()) -> None:
        """Insert or replace `rows` and delete the `drop` keys in one transaction."""
        names = list(COLUMNS)
        insert = f"INSERT OR REPLACE INTO {TABLE} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
        drop = list(drop)

        def write() -> None:
            with self._transaction():
                self.conn.executemany(f"DELETE FROM {TABLE} WHERE key = ?", [(key,) for key in drop])
                self.conn.executemany(insert, [[row.get(name) for name in names] for row in rows])

        _retrying(write)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A write transaction holding the write lock from its start (waiting up to the busy timeout for it)."""
        if self.read_only:
            raise ConcurError(f"{self.path} is open read-only; it cannot be written")
        with _errors_named(self.path):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise


@dataclass(frozen=True)
class Finished:
    """Every finished job as a reader should see it: the index's rows and the results not indexed yet."""

    rows: list[dict[str, Any]]
    damaged: list[DamagedFileError]  # result.json files left out, one per job
    index_problem: DamagedFileError | None  # the index could not be read; the rows come from the job directories
    with_result: frozenset[str]  # keys of the job directories holding a result.json (damaged or not)

    def warnings(self) -> list[str]:
        """One line per damaged file, each naming it and the fix."""
        lines = [str(error) for error in self.damaged]
        if self.index_problem is not None:
            lines.insert(0, f"{self.index_problem}; reading the job directories instead")
        return lines


@dataclass(frozen=True)
class ActiveJob:
    """A job directory without a result whose job started: running, or interrupted (it reruns)."""

    key: str
    state: JobState
    started: dict[str, Any]


def finished_jobs(db_path: Path, jobs_dir: Path) -> Finished:
    """The finished jobs for a reader (status, results, report): the index brought up to date from the job
    directories; without an index, or with a damaged one, the job directories read directly."""
    try:
        store = open_reader(db_path)
        if store is not None:
            with store:
                refresh = store.refresh(jobs_dir)
            return Finished(refresh.rows, refresh.damaged, None, refresh.with_result)
        problem = None
    except DamagedFileError as error:  # only the index raises: refresh reports damaged results instead
        problem = error
    stamps = result_stamps(jobs_dir)
    rows, damaged = read_rows(jobs_dir, stamps)
    return Finished(_view(rows), damaged, problem, frozenset(stamps))


def open_reader(db_path: Path) -> Store | None:
    """The index for a reader: writable when this process may write it (so it takes in what it lacks),
    read-only otherwise; None when there is none (the reader reads the job directories)."""
    if not db_path.exists():
        return None
    return Store(db_path) if writable(db_path) else Store.open_for_reading(db_path)


def active_jobs(jobs_dir: Path, with_result: Iterable[str]) -> tuple[list[ActiveJob], list[DamagedFileError]]:
    """The running and interrupted jobs (directories without a result.json), with what their job.json says;
    a damaged job.json is returned, not raised, so one bad directory does not hide the others."""
    finished = set(with_result)
    active, damaged = [], []
    for key in job_dir_names(jobs_dir):
        if key in finished:
            continue
        job = JobDir(jobs_dir / key)
        try:
            state, started = job.state(), job.started() or {}
        except DamagedFileError as error:
            damaged.append(error)
            continue
        if state in ACTIVE_STATES:
            active.append(ActiveJob(key, state, started))
    return active, damaged


def read_rows(jobs_dir: Path, stamps: dict[str, str]) -> tuple[list[dict[str, Any]], list[DamagedFileError]]:
    """Index rows (JSON columns encoded, as stored) of the results of the `stamps` keys, and the damaged ones
    (a result that vanished since it was listed, e.g. set aside for a rerun, is neither)."""
    rows, damaged = [], []
    with _progress("reading results", len(stamps)) as advance:
        for key, stamp in stamps.items():
            job = JobDir(jobs_dir / key)
            try:
                result = job.result()
            except DamagedFileError as error:
                damaged.append(error)
            else:
                if result is not None:
                    rows.append(result.index_row(job.path, stamp))
            advance()
    return rows, damaged


def writable(db_path: Path) -> bool:
    """Whether this process may write the index (and the WAL files beside it)."""
    return os.access(db_path.parent, os.W_OK) and (not db_path.exists() or os.access(db_path, os.W_OK))


def create_index(path: Path) -> None:
    """A new, empty index at `path` (which must not exist yet), in WAL mode with its table and lookup index, whole in
    the one file: the write-ahead log is folded in (a checkpoint) before it is closed, so the file can be linked under
    another name. A checkpoint a full disk keeps from finishing is an error, never a file that lacks its table."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute(f"PRAGMA journal_mode={WAL}")
        columns = ", ".join(
            f"[{name}] {_SQL_TYPES[column.kind]}" + (" PRIMARY KEY" if name == "key" else "") for name, column in COLUMNS.items()
        )
        connection.execute(f"CREATE TABLE IF NOT EXISTS [{TABLE}] ({columns})")
        connection.execute(f"CREATE INDEX IF NOT EXISTS idx_{TABLE}_cell ON [{TABLE}] ({ORDER})")
        busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        connection.close()  # the last connection of a WAL database folds the WAL in and removes it
    wal = path.with_name(path.name + WAL_SUFFIXES[0])
    if busy or (wal.exists() and wal.stat().st_size > 0):
        raise OSError(errno.EIO, "SQLite could not fold the new index's write-ahead log into it (is the disk full?)", str(path))


def _create(path: Path) -> None:
    """Create the index under a temporary name and hard-link it into place: `link` fails when the name exists,
    so of many drivers starting at once exactly one creates it, and nobody ever opens a half-made index."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        temporary.unlink()  # SQLite makes the file itself
        with _errors_named(path):
            create_index(temporary)
        os.chmod(temporary, default_permissions(FILE_MODE))  # others on the cluster may read the index
        with contextlib.suppress(FileExistsError):  # another driver was first: its index is as good
            os.link(temporary, path)
    finally:
        _remove_with_wal(temporary)


def _remove_with_wal(path: Path) -> None:
    """Remove a temporary index and the WAL files SQLite may have left beside it (a full disk stops it mid-way)."""
    for suffix in ("", *WAL_SUFFIXES):
        path.with_name(path.name + suffix).unlink(missing_ok=True)


def _connect(path: Path, *, read_only: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit) with the busy timeout set as it opens.

    `mode=rw` never creates a file; a reader that may not write the directory opens the index
    `immutable`, since a WAL database otherwise needs to create its shared-memory file.
    """
    if not read_only:
        query = "mode=rw"
    elif os.access(path.parent, os.W_OK):
        query = "mode=ro"
    else:
        query = "mode=ro&immutable=1"
    with _errors_named(path):
        return sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)


def _refuse_empty(path: Path) -> None:
    """A 0-byte index is damage (an index is created complete), not an empty index that hides every result."""
    wal = path.with_name(path.name + WAL_SUFFIXES[0])
    if path.stat().st_size == 0 and not (wal.exists() and wal.stat().st_size > 0):
        raise DamagedFileError(path, "empty file (0 bytes)")


def _refuse_incomplete(path: Path, columns: set[str]) -> None:
    if not columns:
        raise DamagedFileError(path, f"an SQLite database without the {TABLE!r} table")
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
        raise DamagedFileError(path, f"its {TABLE!r} table lacks the columns {', '.join(missing)}")


@contextlib.contextmanager
def _errors_named(path: Path) -> Iterator[None]:
    """SQLite's "file is not a database" or "malformed" as a DamagedFileError naming the index and the fix, and
    its "database or disk is full" or disk I/O error as the OSError it is, naming the index (the CLI adds the free space)."""
    try:
        yield
    except sqlite3.DatabaseError as error:
        name = getattr(error, "sqlite_errorname", "")
        if name.startswith(DAMAGE_ERRORS):
            raise DamagedFileError(path, f"not a usable SQLite database: {error}") from error
        for prefix, number in STORAGE_ERRORS.items():
            if name.startswith(prefix):
                raise OSError(number, f"{os.strerror(number)} (SQLite: {error})", str(path)) from error
        raise


def _retrying(operation: Callable[[], T]) -> T:
    """`operation`, tried again after a growing, jittered pause while SQLite answers "database is locked".

    The busy timeout waits for locks, but SQLite answers at once where waiting cannot help the
    statement itself (a journal-mode switch, a transaction whose snapshot another writer made
    stale); trying the whole operation again does. After `LOCK_RETRIES` tries it is an error.
    """
    delay, attempt = FIRST_BACKOFF_SECONDS, 0
    while True:
        try:
            return operation()
        except sqlite3.OperationalError as error:
            if not getattr(error, "sqlite_errorname", "").startswith(BUSY_ERRORS):
                raise
            attempt += 1
            if attempt > LOCK_RETRIES:
                raise ConcurError(
                    f"the index stayed locked by other processes through {attempt} tries of {BUSY_TIMEOUT_SECONDS:.0f} s each: "
                    f"{error}; retry when the other drivers are less busy"
                ) from error
        time.sleep(delay * (1 + random.random()))
        delay = min(2 * delay, MAX_BACKOFF_SECONDS)


@contextlib.contextmanager
def _progress(label: str, total: int) -> Iterator[Callable[[], None]]:
    """A callable advancing a progress bar for long loops (silent below PROGRESS_MIN_FILES)."""
    if total < PROGRESS_MIN_FILES:
        yield lambda: None
        return
    with task_progress() as bar:
        task = bar.add_task(label, total=total, status="")
        yield lambda: bar.advance(task)


def _outdated(row: dict[str, Any] | None, stamp: str) -> bool:
    """Whether an index row misses a result file or was read from an older one (an older index has no stamps: trusted),
    or holds a score no result may have (indexed before results were checked for it): its file is read again."""
    if row is None or (row.get(STAMP_COLUMN) is not None and row[STAMP_COLUMN] != stamp):
        return True
    return row.get("status") == OK_STATUS and any(score_problem(row.get(name)) for name in ("em", "f1"))


def _view(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows as readers get them: JSON columns decoded (rows just read from files are stored-form), in table order."""
    return sorted(map(_decoded, rows), key=lambda row: (row["approach"], row["benchmark"], row["hparam_id"], row["seed"]))


def _decoded(row: dict[str, Any]) -> dict[str, Any]:
    full = {**dict.fromkeys(COLUMNS), **row}
    return {key: json.loads(value) if key in JSON_COLUMNS and isinstance(value, str) else value for key, value in full.items()}


@dataclass
class Health:
    """What `concur store check` finds in a runs dir: every job directory read, and the index."""

    ok: int = 0
    failed: int = 0
    running: int = 0
    interrupted: int = 0
    damaged: list[DamagedFileError] = field(default_factory=list)  # result.json and job.json files
    unindexed: list[str] = field(default_factory=list)  # keys of readable results the index lacks (or holds from an older file)
    orphans: list[str] = field(default_factory=list)  # keys of index rows without a result.json
    index_problem: DamagedFileError | None = None

    @property
    def clean(self) -> bool:
        return not (self.damaged or self.unindexed or self.orphans or self.index_problem)

    def counts(self) -> dict[str, int]:
        return {
            "finished ok": self.ok,
            "failed": self.failed,
            "running": self.running,
            "interrupted": self.interrupted,
            "damaged files": len(self.damaged) + (self.index_problem is not None),
            "unindexed results": len(self.unindexed),
            "index rows without a result": len(self.orphans),
        }


@dataclass(frozen=True)
class Rebuilt:
    """What `concur store rebuild` did."""

    moved: list[tuple[Path, Path]]  # (damaged file, where it was moved)
    rows: int  # rows of the new index
    index_replaced: bool  # the index was damaged, set aside and replaced


def inspect_runs(db_path: Path, jobs_dir: Path) -> Health:
    """Read the index, then every job directory's result.json and job.json, and compare them.

    The index is read first, so a result recorded meanwhile by a running driver shows as
    unindexed at worst, never as an index row without a result.
    """
    health = Health()
    indexed = _indexed_rows(db_path, health)
    keys = job_dir_names(jobs_dir)
    with _progress("checking job directories", len(keys)) as advance:
        for key in keys:
            _inspect_job(JobDir(jobs_dir / key), indexed, health)
            advance()
    if indexed is not None:
        on_disk = result_stamps(jobs_dir)
        health.orphans = sorted(key for key in indexed if key not in on_disk)
    return health


def rebuild_index(db_path: Path, jobs_dir: Path, aside: Path) -> Rebuilt:
    """Move every damaged file aside into `aside` (never deleting one) and make the index hold
    exactly the readable results, in one transaction; a damaged index is replaced by one built aside.

    A damaged result.json moved aside leaves its job without a result, so it runs again; the
    damaged file is kept for whoever wants to look at it.
    """
    if not writable(db_path) or (jobs_dir.exists() and not os.access(jobs_dir, os.W_OK)):
        raise ConcurError(f"{db_path.parent} cannot be written by this user; rebuild moves files and writes the index")
    moved = [(error.path, move_aside(error.path, aside / error.path.relative_to(jobs_dir))) for error in _damaged_job_files(jobs_dir)]
    try:
        with _checked(Store(db_path)) as store:
            refresh = store.sync(jobs_dir)
        replaced = False
    except DamagedFileError:
        refresh, replaced = _replace_index(db_path, jobs_dir, aside), True
        moved.append((db_path, aside / db_path.name))
    moved += [(error.path, move_aside(error.path, aside / error.path.relative_to(jobs_dir))) for error in refresh.damaged]
    return Rebuilt(moved, len(refresh.rows), replaced)


def _checked(store: Store) -> Store:
    """`store`, after SQLite's own consistency check (every page read: for check and rebuild, not every reader)."""
    try:
        problem = store.quick_check()
    except BaseException:
        store.close()
        raise
    if problem is not None:
        store.close()
        raise DamagedFileError(store.path, f"SQLite's check failed: {problem}")
    return store


def _indexed_rows(db_path: Path, health: Health) -> dict[str, dict[str, Any]] | None:
    """The index's rows by key, read-only; None when there is no usable index (a damaged one noted in `health`)."""
    if not db_path.exists():
        return None
    try:
        with _checked(Store.open_for_reading(db_path)) as store:
            return {row["key"]: row for row in store.rows()}
    except DamagedFileError as error:
        health.index_problem = error
        return None


def _inspect_job(job: JobDir, indexed: dict[str, dict[str, Any]] | None, health: Health) -> None:
    """Count one job directory into `health`: its state, its damaged files, whether the index holds its result."""
    with contextlib.suppress(DamagedFileError):
        _noting_damage(job.started, health)
    try:
        result = _noting_damage(job.result, health)
    except DamagedFileError:
        return
    if result is None:
        state = job.state()
        health.running += state is JobState.RUNNING
        health.interrupted += state is JobState.INTERRUPTED
        return
    if result.ok:
        health.ok += 1
    else:
        health.failed += 1
    stamp = file_stamp(job.result_path)
    if indexed is not None and stamp is not None and _outdated(indexed.get(job.path.name), stamp):
        health.unindexed.append(job.path.name)


def _noting_damage(read: Callable[[], T], health: Health) -> T:
    try:
        return read()
    except DamagedFileError as error:
        health.damaged.append(error)
        raise


def _damaged_job_files(jobs_dir: Path) -> list[DamagedFileError]:
    """The damaged job.json files (a damaged result.json is found when the index is rebuilt from the results)."""
    damaged = []
    keys = job_dir_names(jobs_dir)
    with _progress("reading job.json files", len(keys)) as advance:
        for key in keys:
            try:
                read_job_file(jobs_dir / key / JOB_FILE)
            except DamagedFileError as error:
                damaged.append(error)
            advance()
    return damaged


def _replace_index(db_path: Path, jobs_dir: Path, aside: Path) -> Refresh:
    """Build a new index from the job directories under a temporary name, keep the damaged one in `aside` (a hard
    link, else a copy) and rename the new one over it: a concurrent reader finds the damaged index or the new
    one, never none. The damaged index's WAL files go aside first, so the new index never reads them."""
    fd, name = tempfile.mkstemp(prefix=f".{db_path.name}.", suffix=".rebuild", dir=db_path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        temporary.unlink()
        with _errors_named(db_path):
            create_index(temporary)
        with Store(temporary) as store:
            refresh = store.sync(jobs_dir)
        aside.mkdir(parents=True, exist_ok=True)
        try:
            os.link(db_path, aside / db_path.name)
        except OSError:  # a filesystem without hard links
            shutil.copy2(db_path, aside / db_path.name)
        for suffix in WAL_SUFFIXES:
            sibling = db_path.with_name(db_path.name + suffix)
            if sibling.exists():
                os.replace(sibling, aside / sibling.name)
        os.replace(temporary, db_path)
    finally:
        _remove_with_wal(temporary)
    return refresh
