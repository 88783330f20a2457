"""The on-disk cache (sqlite): compiled kernels and other values that are slow to recompute.

One database file, shared by every process of the user: `CACHEDB` names it (default `<cache_dir()>/cache.db`);
`CACHELEVEL=0` turns the cache off. The cache is an optimisation only: a locked, unreadable or corrupted database
is worked around (waited for briefly, or moved aside and recreated) with a warning, and never makes a caller fail.

Every value lives in one table whose rows are keyed by (namespace, version, device, key): several code versions and
devices coexist (two virtualenvs, a CPU job beside a WEBGPU job), nothing is dropped by another process's start-up, and
a table that vanished is created again. Old rows go by age and size, least recently used first (CACHEDB_MAX_BYTES,
CACHEDB_MAX_DAYS), as compilers' caches do.

Nothing read from the file can run code: values are raw bytes (a program) or JSON, keys are the sha256 of a canonical
JSON text of plain data (str, int, float, bool, None, bytes, tuples/lists of them), and every row carries the sha256 of
its identity (table, version, device, key) and value, checked on read: a damaged row, or a value copied from another
row, is dropped and recomputed. The sha256 is not a MAC: native code is only trusted because the file is this user's
alone, so a file owned by someone else or writable by group or others is not read. The file is marked as ours by
sqlite's application_id header field; a file that is not ours (`CACHEDB=notes.txt`, or the default path symlinked into
another application's database) is never written, renamed or recovered. A cache in a directory this process cannot write
(a read-only mount) is opened read-only and still read.

Concurrency: any number of processes and threads may use one file at once (WAL mode; a thread holds `_st.lock` per
operation). sqlite's locks are POSIX advisory locks, held per process and per file, so three rules keep every process
locked while it uses the file (a process without its lock can have its WAL checkpointed and deleted under it by another
process that thinks it is the last user: lost writes, then "database disk image is malformed"):
- a connection is closed explicitly when it is left (CACHEDB changed, reset): never left open for the garbage collector
  (Python's sqlite connections sit in a reference cycle), since the file is read with open()/close() before it is opened
  again, and closing any descriptor of a file drops all of this process's locks on it;
- no connection crosses fork(): it is closed before the fork (a fork waits for another thread's operation to end) and
  the parent reopens; a child that still inherits one (the wait ran out, or a fork that skips Python's hooks) never
  closes it and leaves that file alone, since its sqlite would share the inherited connection's lock state and run
  without a lock of its own;
- a damaged file is moved aside only when a fresh connection confirms the damage (quick_check) and no other process has
  it open (an exclusive lock on sqlite's lock bytes): renaming a file in use lets its users write into the new file's WAL.
"""
from __future__ import annotations
import os, re, sys, json, time, stat, types, atexit, ctypes, hashlib, sqlite3, functools, threading, warnings, urllib.parse
from typing import Any, Union
from tinygrad.helpers import CACHELEVEL, CACHEDB_MAX_BYTES, CACHEDB_MAX_DAYS, cache_dir, engine_before_fork

SCHEMA = 4            # bump when the stored format changes: older tables are never read (v1 rows were pickles) and go at eviction
TABLE = f"entries_v{SCHEMA}"
MAGIC = 0x74696E79    # 'tiny': sqlite's application_id (header offset 68) of every database this module created
_BUSY_MS = 1500       # wait this long for another process's write transaction, then run this entry uncached
_CONTENDED_MS = 50    # after one such give-up, wait only this long until a write succeeds again (no stall per kernel)
_LOCKED_GIVEUPS = 3   # after this many give-ups in a row the lock is a long one (a stopped process's transaction): no wait at all
_ATIME_RES = 600.0    # a row's last use is recorded to this many seconds: reads do not each become a write
_CHECK_EVERY = 256    # stores between two exact measures of the cache's size (another process may have grown it)
_FORK_WAIT_S = 3.0    # a fork waits this long for another thread's cache operation to end (it waits at most _BUSY_MS)
_LOCK_BYTES = (0x40000000, 512)   # sqlite's pending, reserved and shared lock bytes: every open connection locks a part

Key = Any             # plain data: str, int, float, bool, None, bytes, and tuples/lists of them
Value = Union[bytes, None, bool, int, float, str, list, dict]   # bytes are stored raw; the rest as JSON (tuples read back as lists)

class _State:
  def __init__(self) -> None:
    self.conn: sqlite3.Connection | None = None
    self.path: str | None = None
    self.pid = -1                 # a connection must not cross fork(): reopen in the child
    self.ready = False            # the table exists on this connection (set again after "no such table")
    self.readonly = False         # opened read-only (the directory is not writable): no stores, no recorded uses
    self.broken: str | None = None  # why the cache is off for the rest of this process (a file that is not ours, or not safe)
    self.busy_ms = _BUSY_MS
    self.giveups = 0              # entries run uncached in a row because another process held the lock
    self.warned: set[str] = set()   # warnings already given by this process (each kind once)
    self.inherited: list[tuple[str, sqlite3.Connection]] = []  # (path, connection) inherited across fork: never used or closed
    self.forking = False            # _before_fork holds the lock
    self.touched: dict[tuple[str, str, str, str], float] = {}  # rows read since the last write: their use is recorded then
    self.total: int | None = None   # bytes of values in the cache, as last measured plus what this process stored since
    self.stores = 0
    self.lock = threading.RLock()
_st = _State()

def _drop_conn() -> None:
  # close this process's connection now (a dropped sqlite3.Connection stays open, with its locks, until a gc pass)
  if _st.conn is not None and _st.pid == os.getpid():
    try: _st.conn.close()
    except sqlite3.Error: pass
  _st.conn, _st.pid, _st.ready = None, -1, False   # (the total stays: a fork reopens the same file, no measure again)

def _inherit(conn: sqlite3.Connection) -> None:
  # the parent's connection in a child: closing it could checkpoint, delete the WAL or roll back under the parent, so it
  # is never closed, not even by the interpreter's exit (one reference more than anything will release)
  ctypes.pythonapi.Py_IncRef(ctypes.py_object(conn))
  _st.inherited.append((_st.path or "", conn))

def _before_fork() -> None:
  # no connection crosses fork (see the module's docstring); a thread forking from inside an operation keeps its own
  mine = getattr(_st.lock, "_is_owned")()
  engine_before_fork()   # the engine's lock first, as a realize takes them (this hook runs before the engine's own)
  _st.forking = _st.lock.acquire(timeout=_FORK_WAIT_S)
  if _st.forking and not mine: _drop_conn()

def _after_fork_in_parent() -> None:
  if _st.forking:
    _st.forking = False
    _st.lock.release()

def _after_fork_in_child() -> None:
  # the lock may be held (by the forking thread, or another thread that does not exist here): start afresh
  _st.lock, _st.forking = threading.RLock(), False
  if _st.conn is not None: _inherit(_st.conn)
  _st.conn, _st.pid, _st.ready, _st.total = None, -1, False, None
  _st.touched.clear()
if hasattr(os, "register_at_fork"):
  os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


# ---- code versions: the hash of the code that made a cached value (progcache keys programs by it, Compiler binaries too) ----
class Uncacheable(Exception):
  """A value the exact encoder does not know, or code with no source folder: the kernel is rendered every time instead."""

def code_hash(*modules: str) -> str:
  # the .py files of the packages that generate programs: any edit (or another version installed) is another key
  return hashlib.sha256(b"\0".join(package_hash(t).encode() for t in sorted({m.split(".")[0] for m in modules}))).hexdigest()

@functools.cache
def package_hash(name: str) -> str:
  # (each package's files are read once per process, whichever keys name it)
  top = sys.modules.get(name)
  file = (getattr(top, "__file__", None) or "") if top is not None else ""
  if not (root := os.path.dirname(file)): raise Uncacheable(f"no source folder for {name}")
  h = hashlib.sha256()
  if not hasattr(top, "__path__"):   # a module, not a package (a script's own classes): its file, not its whole folder
    with open(file, "rb") as fh: h.update(os.path.basename(file).encode() + b"\0" + fh.read() + b"\0")
    return h.hexdigest()
  for d, dirs, files in sorted(os.walk(root)):
    dirs[:] = sorted(x for x in dirs if x != "__pycache__")
    for f in sorted(x for x in files if x.endswith(".py")):
      with open(os.path.join(d, f), "rb") as fh: h.update(os.path.relpath(os.path.join(d, f), root).encode() + b"\0" + fh.read() + b"\0")
  return h.hexdigest()

def compiler_version(cls: type) -> str:
  """The hash of the code of compiler class `cls` (the packages of it and its bases, but the core's): part of the compile
  cache's key, so a plugin upgrade that changes a compiler's options or passes never reuses the old one's binaries.
  "" where a class has no source file (the cache then relies on the compiler's cachekey and version alone)."""
  try: return code_hash(*(m for m in class_modules(cls) if m.split(".")[0] != "tinygrad"))
  except (Uncacheable, OSError): return ""

_class_mods: dict[type, tuple[str, ...]] = {}
def class_modules(cls: type) -> tuple[str, ...]:
  # the modules of `cls` and its bases (a third party's renderer that subclasses another plugin's, for a compiler it adds to
  # that plugin's device: an upgrade of the base's package changes its programs too), but the standard library's
  if (ret := _class_mods.get(cls)) is None:
    ret = _class_mods[cls] = tuple(m for c in cls.__mro__ if (m := c.__module__).split(".")[0] not in sys.stdlib_module_names)
  return ret

def _now() -> float: return time.time()

def default_path() -> str: return os.path.join(cache_dir(), "cache.db")
def cache_path() -> str:
  """Where the cache database lives: `CACHEDB`, else `<cache_dir()>/cache.db`."""
  return os.environ.get("CACHEDB") or default_path()

def cache_info() -> dict[str, Any]:
  """Location and size of the cache (for `python -m tinygrad doctor`); never opens the database."""
  p = cache_path()
  size = sum(os.path.getsize(f) for f in (p, p+"-wal", p+"-shm") if os.path.exists(f))
  return {"path": p, "exists": os.path.exists(p), "bytes": size, "enabled": CACHELEVEL.value != 0, "broken": _st.broken,
          "max_bytes": CACHEDB_MAX_BYTES.value, "max_days": CACHEDB_MAX_DAYS.value}

def _close() -> None:
  with _st.lock:
    _drop_conn()
    _st.path, _st.broken, _st.readonly, _st.total = None, None, False, None

def reset() -> None:
  """Close the connection and forget this process's cache state; the next access reopens `cache_path()` (tests point CACHEDB elsewhere)."""
  with _st.lock:
    flush()
    _close()
    _st.busy_ms, _st.stores, _st.giveups = _BUSY_MS, 0, 0
    _st.warned.clear()

def _warn(msg: str, once: str | None = None) -> None:
  if once is not None:
    if once in _st.warned: return
    _st.warned.add(once)
  warnings.warn(f"tinygrad cache: {msg}", RuntimeWarning, stacklevel=4)

# ---- is the file ours, and only ours? ----
class _NotOurs(Exception): pass
class _Unsafe(Exception): pass
class _Inherited(Exception): pass

def _same_file(a: str, b: str) -> bool:
  try: return os.path.samefile(a, b)
  except OSError: return os.path.abspath(a) == os.path.abspath(b)

def _ours_by_tables(path: str) -> bool:
  # a cache from before the magic (schema 1): ours when it has tables and every one is named like ours (<table>_v<N>)
  try:
    conn = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro", uri=True, timeout=_BUSY_MS/1000)
    try: names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    finally: conn.close()
  except sqlite3.Error: return False
  return bool(names) and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*_v[0-9]+", n) for n in names)

_FILE_KINDS = {stat.S_IFIFO: "FIFO", stat.S_IFDIR: "directory", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device", stat.S_IFSOCK: "socket"}

def _check_ours(path: str) -> None:
  """Raise _NotOurs(why) unless `path` is absent, empty, a tinygrad cache database, or garbage in tinygrad's own file.
  Only while this process has no connection to `path`: the close() below drops every sqlite lock it holds on the file."""
  try:
    # (a FIFO's open() waits for a writer: the user's program hung on its first kernel; a directory or device is not a file either)
    if not stat.S_ISREG(mode := os.stat(path).st_mode): raise _NotOurs(f"not a regular file but a {_FILE_KINDS.get(stat.S_IFMT(mode), 'special file')}")
    with open(path, "rb") as f: head = f.read(100)
  except FileNotFoundError: return
  except OSError: return   # unreadable: sqlite reports it and the cache is off, nothing is touched
  if not head: return      # an empty file is an empty database to sqlite: nothing to lose
  if head.startswith(b"SQLite format 3\x00") and len(head) == 100:
    # another application's database is never written, wherever it is (the default path may be a symlink into it)
    if int.from_bytes(head[68:72], "big") != MAGIC and not _ours_by_tables(path): raise _NotOurs("an sqlite database without tinygrad's cache tables")
  elif os.path.abspath(path) != os.path.abspath(default_path()) or os.path.islink(path): raise _NotOurs("not an sqlite database")
  # else: garbage in tinygrad's own file (no symlink): moved aside when sqlite rejects it

def _check_safe(path: str) -> None:
  """Raise _Unsafe(why) when someone else could have written the file: sha256 checks catch damage, not an edit."""
  for p in (path, path + "-wal"):
    try: st = os.stat(p)
    except FileNotFoundError: continue
    if st.st_uid != os.geteuid(): raise _Unsafe(f"{p} is owned by uid {st.st_uid}, not by this user ({os.geteuid()})")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH): raise _Unsafe(f"{p} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); fix: chmod go-w {p}")

def _may_recover(path: str) -> bool:
  try: _check_ours(path)
  except _NotOurs: return False
  return True

def _writable(path: str) -> bool:
  d = os.path.dirname(os.path.abspath(path))
  if not os.path.isdir(d): return True   # created on open (or the open fails, and the cache is off)
  return os.access(d, os.W_OK) and (not os.path.exists(path) or os.access(path, os.W_OK))

def _open(path: str) -> sqlite3.Connection:
  _check_ours(path)
  _check_safe(path)
  if not _writable(path):
    # a read-only mount: no WAL, no locks, no writes; immutable=1 reads the file as it is
    if not os.path.exists(path): raise OSError(f"{path} does not exist and its directory is not writable")
    conn = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro&immutable=1", uri=True, isolation_level=None,
                           check_same_thread=False)
    _st.readonly = True
    return conn
  if os.path.dirname(path): os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
  try: os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))   # this user's alone; sqlite gives -wal/-shm the same mode
  except FileExistsError: pass
  conn = sqlite3.connect(path, timeout=_st.busy_ms/1000, isolation_level=None, check_same_thread=False)
  try:
    conn.execute(f"PRAGMA busy_timeout={_st.busy_ms}")
    # forces sqlite to read the header (garbage fails here); marked before WAL so the mark lands in the file itself
    if conn.execute("PRAGMA application_id").fetchone()[0] != MAGIC: conn.execute(f"PRAGMA application_id={MAGIC}")
    conn.execute("PRAGMA journal_mode=WAL")   # readers never block the writer; several processes share the file
    conn.execute("PRAGMA synchronous=NORMAL")
  except BaseException:
    conn.close()
    raise
  _st.readonly = False
  return conn

def _damaged(path: str) -> bool:
  # sqlite's own check on a fresh connection: an error seen through one connection is not proof the file is damaged
  try:
    conn = sqlite3.connect(path, timeout=_BUSY_MS/1000, isolation_level=None)
    try: return conn.execute("PRAGMA quick_check(1)").fetchall() != [("ok",)]
    finally: conn.close()
  except sqlite3.Error as e: return _is_corruption(e)   # locked or an I/O error: not shown to be damaged

def _move_aside(path: str, err: Exception) -> bool:
  """Rename the damaged database (and its -wal/-shm) aside, only while no other process has it open; False when one has."""
  try: import fcntl
  except ImportError: return False
  try: fd = os.open(path, os.O_RDWR)
  except FileNotFoundError: return True   # another process already moved it
  try:
    # every open connection holds a lock in sqlite's lock bytes: taking them all means nobody else uses the file
    try: fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, _LOCK_BYTES[1], _LOCK_BYTES[0])
    except OSError: return False
    dest = f"{path}.corrupt-{int(time.time())}-{os.getpid()}"
    for suffix in ("", "-wal", "-shm"):
      try: os.replace(path+suffix, dest+suffix)
      except FileNotFoundError: pass
  finally: os.close(fd)
  _warn(f"database {path} is unreadable ({err}); moved it to {dest} and started a new one")
  return True

def _connection() -> sqlite3.Connection | None:
  path = cache_path()
  if _st.conn is not None and _st.pid == os.getpid() and _st.path == path:
    conn = _st.conn
  else:
    if _st.broken is not None and _st.path == path: return None
    if _st.conn is not None and _st.pid != os.getpid(): _inherit(_st.conn)   # a fork that skipped _after_fork_in_child
    _drop_conn()   # CACHEDB changed: closed now, never left open to the garbage collector
    if _st.path != path: _st.total = None
    _st.conn, _st.path, _st.broken = None, path, None
    if any(_same_file(path, p) for p, _ in _st.inherited):
      raise _Inherited(f"{path} was open in the parent process when this process was forked from it")
    _st.conn, _st.pid = _open(path), os.getpid()
    conn = _st.conn
  if not _st.ready and not _st.readonly:
    conn.execute(f'CREATE TABLE IF NOT EXISTS "{TABLE}" (ns TEXT NOT NULL, version TEXT NOT NULL, device TEXT NOT NULL, key TEXT NOT NULL, '
                 'kind TEXT NOT NULL, sha TEXT NOT NULL, size INTEGER NOT NULL, atime REAL NOT NULL, val BLOB NOT NULL, '
                 'PRIMARY KEY (ns, version, device, key))')
    # eviction's measure of the total and its least-recently-used walk read this index alone: summed from the table, a
    # 1 GB cache's sizes were read from every row's page (~1 GB, seconds per process when the file is out of the page cache)
    conn.execute(f'CREATE INDEX IF NOT EXISTS "{TABLE}_lru" ON "{TABLE}" (atime, size)')
  _st.ready = True
  return conn

def _is_corruption(e: Exception) -> bool:
  # OperationalError covers locked/busy/IO; a plain DatabaseError ("file is not a database", "malformed") is damage
  return isinstance(e, sqlite3.DatabaseError) and not isinstance(e, (sqlite3.OperationalError, sqlite3.IntegrityError))

def _set_busy(conn: sqlite3.Connection | None, ms: int) -> None:
  if _st.busy_ms != ms:
    _st.busy_ms = ms   # a connection opened later starts with it
    if conn is not None: conn.execute(f"PRAGMA busy_timeout={ms}")

def _disable(why: str) -> None:
  _st.path, _st.broken = cache_path(), why
  _warn(f"disabled for this process: {why}", once=why)

def _run(fn, write: bool = False) -> Any:
  """Run fn(conn); returns None when the cache is unusable, read-only (for a write) or locked (the caller treats it as a miss)."""
  with _st.lock:
    for attempt in range(3):
      try:
        conn = _connection()
        if conn is None or (write and _st.readonly): return None
        ret = fn(conn)
        if write:   # the other writer is gone: wait the full time again next time
          _st.giveups = 0
          _set_busy(conn, _BUSY_MS)
        return ret
      except _NotOurs as e:
        _close()
        _disable(f"{cache_path()} is not a tinygrad cache database ({e}); it was left untouched. Unset CACHEDB or point it at a new file")
        return None
      except _Unsafe as e:
        _close()
        _disable(f"{e}: programs from a cache others can write could run their code, so it is not used")
        return None
      except _Inherited as e:
        # this process's sqlite would share the inherited connection's lock state and use the file with no lock of its own
        _disable(f"{e} (another thread was using the cache at the fork, or the fork skipped Python's at-fork hooks); this "
                 "process runs uncached. Fix: fork before using the cache, or point CACHEDB elsewhere in the child")
        return None
      except sqlite3.Error as e:
        if isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e)):
          # another process holds a write transaction: this entry runs uncached rather than stall the program
          _warn(f"database {cache_path()} is locked by another process; running uncached meanwhile", once="locked")
          # (50 ms per entry was still a stall: a warm start of 2000 lookups under a lock held by a stopped process took
          # 100 s more; without a wait each one tries once, and the first write that gets through restores the full wait)
          _st.giveups += 1
          _set_busy(_st.conn, _CONTENDED_MS if _st.giveups < _LOCKED_GIVEUPS else 0)
          return None
        if isinstance(e, sqlite3.OperationalError) and "no such table" in str(e):
          if _st.readonly: return None   # a read-only cache without our table: every entry is a miss
          if attempt == 0:
            _st.ready = False   # dropped under us (by hand, or an old version): create it again
            continue
        if _is_corruption(e) and attempt < 2:
          path = cache_path()
          _close()
          if not _may_recover(path):
            _disable(f"{type(e).__name__}: {e} (database {path}, not recognisably tinygrad's: left untouched)")
            return None
          if not _damaged(path): continue   # this connection's view was wrong, the file is fine: open it again
          if _move_aside(path, e): continue
          _disable(f"{type(e).__name__}: {e} (database {path}); other processes have it open, so it was left in place: "
                   "it is moved aside when one opens it alone")
          return None
        # anything else (disk full, an I/O error): this entry runs uncached, the next one opens the file again
        _close()
        _warn(f"{type(e).__name__}: {e} (database {cache_path()}); running uncached meanwhile", once=f"error:{e}")
        return None
      except OSError as e:   # the directory cannot be created or the file opened: run without a cache
        _disable(f"{type(e).__name__}: {e}")
        return None
    return None

# ---- keys and values: plain data only ----
def _plain(x: Any) -> Any:
  if x is None or isinstance(x, (bool, int, float, str)): return x
  if isinstance(x, (bytes, bytearray, memoryview)): return {"bytes": bytes(x).hex()}
  if isinstance(x, (tuple, list)): return [_plain(v) for v in x]
  raise TypeError(f"cache keys are plain data (str, int, float, bool, None, bytes, tuples/lists of them), got {type(x).__name__}: {x!r:.80}")

def _row_id(table: str, key: Key, version: str, device: str) -> tuple[str, str, str, str]:
  if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", table): raise ValueError(f"cache table name must be an identifier, got {table!r}")
  if not isinstance(version, str) or not isinstance(device, str): raise TypeError(f"cache version and device are str, got {version!r}, {device!r}")
  text = _dumps(["tinygrad-cache-key", SCHEMA, _plain(key)])
  return table, version, device, hashlib.sha256(text.encode()).hexdigest()

# (json.dumps with options builds one per call; NaN and +-Infinity are written as JavaScript literals, which json.loads reads)
_dumps = json.JSONEncoder(separators=(",", ":")).encode

def _checksum(rid: tuple[str, str, str, str], kind: str, val: bytes) -> str:
  # over the row's identity too: a value copied into another row (by hand, a tool, a bad page) is damage, not that row's value
  return hashlib.sha256(_dumps([*rid, kind]).encode() + b"\x00" + val).hexdigest()

def _nonstr_key(value: Any) -> str | None:
  # the first dict key in `value` that is not a str, else None: JSON would write {1: x} as {"1": x}, and a hit would return
  # another dict than the one stored
  stack = [value]
  while stack:
    x = stack.pop()
    if isinstance(x, dict):
      if bad := [k for k in x if not isinstance(k, str)]: return repr(bad[0])
      stack.extend(v for v in x.values() if isinstance(v, (dict, list, tuple)))
    elif isinstance(x, (list, tuple)): stack.extend(v for v in x if isinstance(v, (dict, list, tuple)))
  return None

def _encode(value: Value) -> tuple[str, bytes]:
  if isinstance(value, (bytes, bytearray, memoryview)): return "bytes", bytes(value)
  try: text = _dumps(value).encode()
  except (TypeError, ValueError) as e: raise TypeError(f"cache values are bytes or JSON data, got {type(value).__name__}: {e}") from None
  if (bad := _nonstr_key(value)) is not None:
    raise TypeError(f"cache values are bytes or JSON data, whose dict keys are str: got the key {bad}, which would read back as a str; "
                    "fix: convert the keys (str(k)) or store a list of [key, value] pairs")
  return "json", text

# ---- @diskcache's arguments and values: typed, so a hit is the very value computed, for the very arguments ----
# (plain keys write (1, 2) and [1, 2] alike, and IntEnum(1) as 1: f([1, 2]) returned what f((1, 2)) computed; values read
# back tuples as lists.) Scalars of their exact type are JSON's own (1, 1.0, true and "1" stay apart); every container
# and bytes is a list led by its type's name, and a subclass of a plain type (an IntEnum, a namedtuple) is tagged with
# its qualified name in a key. Dicts keep their order (a function may read **kwargs in order).
_SCALARS = (type(None), bool, int, float, str)
_CONTAINERS = {"list": list, "tuple": tuple, "dict": dict, "bytes": bytes, "bytearray": bytearray}

def typed(x: Any, key: bool) -> Any:
  """`x` (an argument when `key`, else a value) as JSON data that `untyped` turns back into an equal value of the same type."""
  t = type(x)
  if t in _SCALARS: return x
  if t is dict: return ["dict", *([typed(k, key), typed(v, key)] for k, v in x.items())]
  if t in (list, tuple): return [t.__name__, *(typed(v, key) for v in x)]
  if t in (bytes, bytearray): return [t.__name__, x.hex()]
  base = next((b for b in (*_SCALARS, *_CONTAINERS.values()) if isinstance(x, b)), None)
  if key and base is not None: return [f"{t.__module__}.{t.__qualname__}", typed(base(x), key)]
  what = "arguments" if key else "values"
  raise TypeError(f"@diskcache {what} are plain data (None, bool, int, float, str, bytes, and lists/tuples/dicts of them), got "
                  f"{t.__module__}.{t.__qualname__}: {x!r:.80}" + (f"; fix: return {base.__name__}(x)" if base is not None else ""))

def untyped(x: Any) -> Any:
  """The value `typed` encoded; ValueError for anything it never writes."""
  if not isinstance(x, list): return x
  if not x or (t := _CONTAINERS.get(x[0])) is None: raise ValueError(f"not a typed value: {x!r:.80}")
  if t in (bytes, bytearray): return t.fromhex(x[1])
  if t is dict: return {untyped(k): untyped(v) for k, v in x[1:]}
  return t(untyped(v) for v in x[1:])

def code_digest(fn: Any) -> str:
  """The sha256 of function `fn`'s own code (bytecode, constants, names, plain default values; not its line numbers): the
  version of @diskcache's values, so an edited body computes afresh. "" for a callable without Python code."""
  def enc(c: Any) -> str:
    if isinstance(c, types.CodeType): return _dumps([c.co_code.hex(), list(c.co_names), list(c.co_varnames), [enc(k) for k in c.co_consts]])
    if isinstance(c, frozenset): return _dumps(["frozenset", sorted(enc(k) for k in c)])   # (a set's order varies with the hash seed)
    return _dumps([type(c).__name__, repr(c)])
  if (code := getattr(fn, "__code__", None)) is None: return ""
  try: defaults = _dumps(typed([getattr(fn, "__defaults__", None), getattr(fn, "__kwdefaults__", None)], True))
  except (TypeError, ValueError): defaults = ""   # (an object's repr holds its address: another key every run)
  return hashlib.sha256((enc(code) + defaults).encode()).hexdigest()

_WHERE = "ns=? AND version=? AND device=? AND key=?"

def diskcache_get(table: str, key: Key, version: str = "", device: str = "") -> Value | None:
  """The value stored under `key` in `table` for code `version` on `device` (bytes, or JSON data: tuples come back as
  lists), or None when absent, disabled, locked or damaged (a damaged entry is dropped, so the recomputed value replaces it)."""
  if CACHELEVEL.value == 0: return None
  rid = _row_id(table, key, version, device)
  row = _run(lambda conn: conn.execute(f'SELECT kind, sha, val, atime FROM "{TABLE}" WHERE {_WHERE}', rid).fetchone())
  if row is None: return None
  kind, sha, val, atime = row
  if not isinstance(val, bytes) or sha != _checksum(rid, kind, val) or kind not in ("bytes", "json"):
    _warn(f"an entry of {table!r} in {cache_path()} is damaged (checksum mismatch); dropped it and recomputing", once=f"damaged:{table}")
    _run(lambda conn: conn.execute(f'DELETE FROM "{TABLE}" WHERE {_WHERE}', rid), write=True)
    return None
  if isinstance(atime, (int, float)) and _now() - atime >= _ATIME_RES and not _st.readonly:
    with _st.lock: _st.touched[rid] = _now()   # recorded with the next write (or at exit): a read stays a read
  if kind == "bytes": return val
  try: return json.loads(val)
  except ValueError: return None   # cannot happen with a matching checksum; a miss all the same

def _record_uses(conn: sqlite3.Connection) -> None:
  if _st.touched:
    conn.executemany(f'UPDATE "{TABLE}" SET atime=? WHERE {_WHERE}', [(t, *rid) for rid, t in _st.touched.items()])
    _st.touched.clear()

def flush() -> None:
  """Record the last use of the rows read since the last store (LRU order); called at exit."""
  with _st.lock:
    if _st.touched and _st.conn is not None and _st.pid == os.getpid() and _st.path == cache_path() and CACHELEVEL.value != 0:
      _run(_record_uses, write=True)
    _st.touched.clear()
atexit.register(flush)

# both answered from the (atime, size) index alone (see _connection)
_TOTAL_SQL = f'SELECT COALESCE(SUM(size), 0) FROM "{TABLE}"'
_LRU_SQL = f'SELECT rowid, size FROM "{TABLE}" ORDER BY atime, size, rowid'

def evict(conn: sqlite3.Connection | None = None) -> None:
  """Drop rows unused for CACHEDB_MAX_DAYS, then the least recently used until the values fit CACHEDB_MAX_BYTES (with 10% to spare)."""
  if conn is None:
    _run(evict, write=True)
    return
  if CACHEDB_MAX_DAYS.value > 0: conn.execute(f'DELETE FROM "{TABLE}" WHERE atime < ?', (_now() - CACHEDB_MAX_DAYS.value * 86400,))
  total = conn.execute(_TOTAL_SQL).fetchone()[0]
  cap = CACHEDB_MAX_BYTES.value
  # the tables of older schemas (never read by this code, and unmeasured) go first, when the file holds more than the cap
  old = [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'") if t != TABLE and re.fullmatch(r"\w+_v[0-9]+", t)]
  if old and (conn.execute("PRAGMA page_count").fetchone()[0] - conn.execute("PRAGMA freelist_count").fetchone()[0]) * \
             conn.execute("PRAGMA page_size").fetchone()[0] > cap:
    for t in old: conn.execute(f'DROP TABLE "{t}"')
  if total > cap:   # then our rows, least recently used first
    doomed, freed = [], 0
    for rowid, size in conn.execute(_LRU_SQL):
      if total - freed <= cap * 0.9: break
      doomed.append((rowid,))
      freed += size
    conn.executemany(f'DELETE FROM "{TABLE}" WHERE rowid=?', doomed)
    total -= freed
  _st.total = total

def diskcache_put(table: str, key: Key, value: Value, version: str = "", device: str = "") -> Value:
  """Store `value` (bytes, or JSON data) under `key` (plain data) in `table` for code `version` on `device` and return it;
  a no-op when CACHELEVEL=0 (or the cache is read-only). Old rows are evicted as the cache grows past CACHEDB_MAX_BYTES."""
  if CACHELEVEL.value == 0: return value
  rid, (kind, val) = _row_id(table, key, version, device), _encode(value)
  if len(val) > CACHEDB_MAX_BYTES.value: return value   # could never stay
  def put(conn: sqlite3.Connection) -> None:
    conn.execute(f'INSERT OR REPLACE INTO "{TABLE}" (ns, version, device, key, kind, sha, size, atime, val) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
                 (*rid, kind, _checksum(rid, kind, val), len(val), _now(), val))
    _record_uses(conn)
    _st.stores += 1
    if _st.total is not None: _st.total += len(val)
    if _st.total is None or _st.total > CACHEDB_MAX_BYTES.value or _st.stores % _CHECK_EVERY == 0: evict(conn)
  _run(put, write=True)
  return value

def diskcache_clear() -> None:
  """Empty the cache database (compiled programs, BEAM results, memoised values, older schemas' tables): what they held is recomputed."""
  def clear(conn: sqlite3.Connection) -> None:
    for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
      if t == TABLE: conn.execute(f'DELETE FROM "{t}"')
      elif re.fullmatch(r"\w+_v[0-9]+", t): conn.execute(f'DROP TABLE "{t}"')
    _st.total, _st.touched = 0, {}
  _run(clear, write=True)
