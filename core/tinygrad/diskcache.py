"""The on-disk cache (sqlite): compiled kernels and other values that are slow to recompute.

One database file, shared by every process of the user: `CACHEDB` names it (default `<cache_dir()>/cache.db`);
`CACHELEVEL=0` turns the cache off. The cache is an optimisation only: a locked, unreadable or corrupted database
is worked around (retried, or moved aside and recreated) with a warning, and never makes a caller fail.
"""
from __future__ import annotations
import os, re, time, pickle, hashlib, sqlite3, threading, warnings
from typing import Any
from tinygrad.helpers import CACHELEVEL, cache_dir

SCHEMA = 1            # bump when the stored format changes: old tables are simply ignored
_RETRIES = 5          # attempts for a busy/locked database before the operation is skipped
_BUSY_MS = 10_000     # sqlite waits this long for another writer before reporting "locked"

class _State:
  def __init__(self) -> None:
    self.conn: sqlite3.Connection | None = None
    self.path: str | None = None
    self.pid = -1                 # a connection must not cross fork(): reopen in the child
    self.tables: set[str] = set()
    self.broken: str | None = None  # why the cache is off for the rest of this process
    self.lock = threading.RLock()
_st = _State()

def cache_path() -> str:
  """Where the cache database lives: `CACHEDB`, else `<cache_dir()>/cache.db`."""
  return os.environ.get("CACHEDB") or os.path.join(cache_dir(), "cache.db")

def cache_info() -> dict[str, Any]:
  """Location and size of the cache (for `python -m tinygrad doctor`); never opens the database."""
  p = cache_path()
  size = sum(os.path.getsize(f) for f in (p, p+"-wal", p+"-shm") if os.path.exists(f))
  return {"path": p, "exists": os.path.exists(p), "bytes": size, "enabled": CACHELEVEL.value != 0, "broken": _st.broken}

def reset() -> None:
  """Close the connection; the next access reopens `cache_path()` (tests point CACHEDB elsewhere)."""
  with _st.lock:
    if _st.conn is not None and _st.pid == os.getpid():
      try: _st.conn.close()
      except sqlite3.Error: pass
    _st.conn, _st.path, _st.pid, _st.broken = None, None, -1, None
    _st.tables.clear()

def _warn(msg: str) -> None: warnings.warn(f"tinygrad cache: {msg}", RuntimeWarning, stacklevel=3)

def _open(path: str) -> sqlite3.Connection:
  if os.path.dirname(path): os.makedirs(os.path.dirname(path), exist_ok=True)
  conn = sqlite3.connect(path, timeout=_BUSY_MS/1000, isolation_level=None, check_same_thread=False)
  try:
    conn.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
    conn.execute("PRAGMA journal_mode=WAL")   # readers never block the writer; several processes share the file
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # forces sqlite to read the header: garbage fails here
  except BaseException:
    conn.close()
    raise
  return conn

def _move_aside(path: str, err: Exception) -> None:
  dest = f"{path}.corrupt-{int(time.time())}-{os.getpid()}"
  for suffix in ("", "-wal", "-shm"):
    try: os.replace(path+suffix, dest+suffix)
    except FileNotFoundError: pass   # another process already moved it
  _warn(f"database {path} is unreadable ({err}); moved it to {dest} and started a new one")

def _connection() -> sqlite3.Connection | None:
  path = cache_path()
  if _st.conn is not None and _st.pid == os.getpid() and _st.path == path: return _st.conn
  if _st.broken is not None and _st.path == path: return None
  _st.conn, _st.path, _st.pid, _st.broken = None, path, os.getpid(), None
  _st.tables.clear()
  _st.conn = _open(path)
  return _st.conn

def _is_corruption(e: Exception) -> bool:
  # OperationalError covers locked/busy/IO; a plain DatabaseError ("file is not a database", "malformed") is damage
  return isinstance(e, sqlite3.DatabaseError) and not isinstance(e, (sqlite3.OperationalError, sqlite3.IntegrityError))

def _run(table: str, fn) -> Any:
  """Run fn(conn, table_name) with retries; returns None when the cache is unusable (the caller treats it as a miss)."""
  if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", table): raise ValueError(f"cache table name must be an identifier, got {table!r}")
  name = f"{table}_v{SCHEMA}"
  with _st.lock:
    recovered = False
    for attempt in range(_RETRIES):
      try:
        conn = _connection()
        if conn is None: return None
        if name not in _st.tables:
          conn.execute(f'CREATE TABLE IF NOT EXISTS "{name}" (key TEXT PRIMARY KEY, val BLOB)')
          _st.tables.add(name)
        return fn(conn, name)
      except sqlite3.Error as e:
        if _is_corruption(e) and not recovered:
          recovered = True
          reset()
          _move_aside(cache_path(), e)
          continue
        if isinstance(e, sqlite3.OperationalError) and attempt < _RETRIES-1 and ("locked" in str(e) or "busy" in str(e)):
          time.sleep(0.05 * 2**attempt)
          continue
        reset()
        _st.path, _st.broken = cache_path(), f"{type(e).__name__}: {e}"
        _warn(f"disabled for this process: {_st.broken} (database {_st.path})")
        return None
      except OSError as e:   # the directory cannot be created or the file opened: run without a cache
        _st.path, _st.broken = cache_path(), f"{type(e).__name__}: {e}"
        _warn(f"disabled for this process: {_st.broken}")
        return None
    return None

def _key(key: Any) -> str: return hashlib.sha256(pickle.dumps(key, protocol=4)).hexdigest()

def diskcache_get(table: str, key: Any) -> Any:
  """The value stored under `key` (any picklable value) in `table`, or None when absent, disabled or unreadable."""
  if CACHELEVEL.value == 0: return None
  row = _run(table, lambda conn, name: conn.execute(f'SELECT val FROM "{name}" WHERE key=?', (_key(key),)).fetchone())
  if row is None: return None
  try: return pickle.loads(row[0])
  except Exception: return None   # written by an incompatible version: a miss, overwritten on the next put

def diskcache_put(table: str, key: Any, value: Any) -> Any:
  """Store `value` (picklable) under `key` in `table` and return it; does nothing when CACHELEVEL=0."""
  if CACHELEVEL.value == 0: return value
  blob = pickle.dumps(value)
  _run(table, lambda conn, name: conn.execute(f'INSERT OR REPLACE INTO "{name}" (key, val) VALUES (?, ?)', (_key(key), blob)))
  return value
