"""The on-disk cache (sqlite): compiled kernels and other values that are slow to recompute.

One database file, shared by every process of the user: `CACHEDB` names it (default `<cache_dir()>/cache.db`);
`CACHELEVEL=0` turns the cache off. The cache is an optimisation only: a locked, unreadable or corrupted database
is worked around (waited for briefly, or moved aside and recreated) with a warning, and never makes a caller fail.

Nothing read from the file can run code: values are raw bytes (a program) or JSON, keys are the sha256 of a canonical
JSON text of plain data (str, int, float, bool, None, bytes, tuples/lists of them), and every row carries the sha256 of
its value, checked on read: a damaged row is dropped and recomputed. The file is marked as ours by sqlite's
application_id header field; a file that is not ours (`CACHEDB=notes.txt`) is never written, renamed or recovered.
"""
from __future__ import annotations
import os, re, json, time, hashlib, sqlite3, threading, warnings, urllib.parse
from typing import Any, Union
from tinygrad.helpers import CACHELEVEL, cache_dir

SCHEMA = 2            # bump when the stored format changes: old tables are simply ignored (v1 rows were pickles: never read)
MAGIC = 0x74696E79    # 'tiny': sqlite's application_id (header offset 68) of every database this module created
_BUSY_MS = 1500       # wait this long for another process's write transaction, then run this entry uncached
_CONTENDED_MS = 50    # after one such give-up, wait only this long until a write succeeds again (no stall per kernel)

Key = Any             # plain data: str, int, float, bool, None, bytes, and tuples/lists of them
Value = Union[bytes, None, bool, int, float, str, list, dict]   # bytes are stored raw; the rest as JSON (tuples read back as lists)

class _State:
  def __init__(self) -> None:
    self.conn: sqlite3.Connection | None = None
    self.path: str | None = None
    self.pid = -1                 # a connection must not cross fork(): reopen in the child
    self.tables: set[str] = set()
    self.broken: str | None = None  # why the cache is off for the rest of this process
    self.busy_ms = _BUSY_MS
    self.warned: set[str] = set()   # warnings already given by this process (each kind once)
    self.inherited: list[sqlite3.Connection] = []  # the parent's connections in a fork child: kept, never used or closed
    self.lock = threading.RLock()
_st = _State()

def _after_fork_in_child() -> None:
  # the lock may have been held by another of the parent's threads, and closing the parent's connection here could
  # checkpoint or unlock the shared file under the parent: keep it referenced (never closed) and start afresh
  _st.lock = threading.RLock()
  if _st.conn is not None: _st.inherited.append(_st.conn)
  _st.conn, _st.pid = None, -1
  _st.tables.clear()
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_after_fork_in_child)

def default_path() -> str: return os.path.join(cache_dir(), "cache.db")
def cache_path() -> str:
  """Where the cache database lives: `CACHEDB`, else `<cache_dir()>/cache.db`."""
  return os.environ.get("CACHEDB") or default_path()

def cache_info() -> dict[str, Any]:
  """Location and size of the cache (for `python -m tinygrad doctor`); never opens the database."""
  p = cache_path()
  size = sum(os.path.getsize(f) for f in (p, p+"-wal", p+"-shm") if os.path.exists(f))
  return {"path": p, "exists": os.path.exists(p), "bytes": size, "enabled": CACHELEVEL.value != 0, "broken": _st.broken}

def _close() -> None:
  with _st.lock:
    if _st.conn is not None and _st.pid == os.getpid():
      try: _st.conn.close()
      except sqlite3.Error: pass
    _st.conn, _st.path, _st.pid, _st.broken = None, None, -1, None
    _st.tables.clear()

def reset() -> None:
  """Close the connection and forget this process's cache state; the next access reopens `cache_path()` (tests point CACHEDB elsewhere)."""
  with _st.lock:
    _close()
    _st.busy_ms = _BUSY_MS
    _st.warned.clear()

def _warn(msg: str, once: str | None = None) -> None:
  if once is not None:
    if once in _st.warned: return
    _st.warned.add(once)
  warnings.warn(f"tinygrad cache: {msg}", RuntimeWarning, stacklevel=4)

# ---- is the file ours? ----
class _NotOurs(Exception): pass

def _ours_by_tables(path: str) -> bool:
  # a cache from before the magic (schema 1): ours when it has tables and every one is named like ours (<table>_v<N>)
  try:
    conn = sqlite3.connect(f"file:{urllib.parse.quote(os.path.abspath(path))}?mode=ro", uri=True, timeout=_BUSY_MS/1000)
    try: names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    finally: conn.close()
  except sqlite3.Error: return False
  return bool(names) and all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*_v[0-9]+", n) for n in names)

def _check_ours(path: str) -> None:
  """Raise _NotOurs(why) unless `path` is absent, empty, at the default location, or a tinygrad cache database."""
  if os.path.abspath(path) == os.path.abspath(default_path()): return   # tinygrad's own file: anything there may be recovered
  try:
    with open(path, "rb") as f: head = f.read(100)
  except FileNotFoundError: return
  except OSError: return   # unreadable: sqlite reports it and the cache is turned off, nothing is touched
  if not head: return      # an empty file is an empty database to sqlite: nothing to lose
  if not head.startswith(b"SQLite format 3\x00") or len(head) < 100: raise _NotOurs("not an sqlite database")
  if int.from_bytes(head[68:72], "big") != MAGIC and not _ours_by_tables(path):
    raise _NotOurs("an sqlite database without tinygrad's cache tables")

def _may_recover(path: str) -> bool:
  try: _check_ours(path)
  except _NotOurs: return False
  return True

def _open(path: str) -> sqlite3.Connection:
  _check_ours(path)
  if os.path.dirname(path): os.makedirs(os.path.dirname(path), exist_ok=True)
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
  if _st.conn is not None and _st.pid != os.getpid(): _st.inherited.append(_st.conn)   # see _after_fork_in_child
  _st.conn, _st.path, _st.pid, _st.broken = None, path, os.getpid(), None
  _st.tables.clear()
  _st.conn = _open(path)
  return _st.conn

def _is_corruption(e: Exception) -> bool:
  # OperationalError covers locked/busy/IO; a plain DatabaseError ("file is not a database", "malformed") is damage
  return isinstance(e, sqlite3.DatabaseError) and not isinstance(e, (sqlite3.OperationalError, sqlite3.IntegrityError))

def _set_busy(conn: sqlite3.Connection | None, ms: int) -> None:
  if _st.busy_ms != ms:
    _st.busy_ms = ms   # a connection opened later starts with it
    if conn is not None: conn.execute(f"PRAGMA busy_timeout={ms}")

def _disable(why: str) -> None:
  _st.path, _st.broken = cache_path(), why
  _warn(f"disabled for this process: {why}")

def _run(table: str, fn, write: bool = False) -> Any:
  """Run fn(conn, table_name); returns None when the cache is unusable or locked (the caller treats it as a miss)."""
  if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", table): raise ValueError(f"cache table name must be an identifier, got {table!r}")
  name = f"{table}_v{SCHEMA}"
  with _st.lock:
    for recovered in (False, True):
      try:
        conn = _connection()
        if conn is None: return None
        if name not in _st.tables:
          conn.execute(f'CREATE TABLE IF NOT EXISTS "{name}" (key TEXT PRIMARY KEY, kind TEXT NOT NULL, sha TEXT NOT NULL, val BLOB NOT NULL)')
          _st.tables.add(name)
        ret = fn(conn, name)
        if write: _set_busy(conn, _BUSY_MS)   # the other writer is gone: wait the full time again next time
        return ret
      except _NotOurs as e:
        _close()
        _disable(f"{cache_path()} is not a tinygrad cache database ({e}); it was left untouched. Unset CACHEDB or point it at a new file")
        return None
      except sqlite3.Error as e:
        if isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e)):
          # another process holds a write transaction: this entry runs uncached rather than stall the program
          _warn(f"database {cache_path()} is locked by another process; running uncached meanwhile", once="locked")
          _set_busy(_st.conn, _CONTENDED_MS)
          return None
        if _is_corruption(e) and not recovered:
          path = cache_path()
          _close()
          if _may_recover(path):
            _move_aside(path, e)
            continue
          _disable(f"{type(e).__name__}: {e} (database {path}, not recognisably tinygrad's: left untouched)")
          return None
        _close()
        _disable(f"{type(e).__name__}: {e} (database {cache_path()})")
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

def _key(key: Key) -> str:
  text = json.dumps(["tinygrad-cache-key", SCHEMA, _plain(key)], separators=(",", ":"), allow_nan=False)
  return hashlib.sha256(text.encode()).hexdigest()

def _checksum(kind: str, val: bytes) -> str: return hashlib.sha256(kind.encode() + b"\x00" + val).hexdigest()

def _encode(value: Value) -> tuple[str, bytes]:
  if isinstance(value, (bytes, bytearray, memoryview)): return "bytes", bytes(value)
  try: return "json", json.dumps(value, separators=(",", ":"), allow_nan=False).encode()
  except (TypeError, ValueError) as e: raise TypeError(f"cache values are bytes or JSON data, got {type(value).__name__}: {e}") from None

def diskcache_get(table: str, key: Key) -> Value | None:
  """The value stored under `key` in `table` (bytes, or JSON data: tuples come back as lists), or None when absent,
  disabled, locked or damaged (a damaged entry is dropped, so the caller's recomputed value replaces it)."""
  if CACHELEVEL.value == 0: return None
  k = _key(key)
  row = _run(table, lambda conn, name: conn.execute(f'SELECT kind, sha, val FROM "{name}" WHERE key=?', (k,)).fetchone())
  if row is None: return None
  kind, sha, val = row
  if not isinstance(val, bytes) or sha != _checksum(kind, val) or kind not in ("bytes", "json"):
    _warn(f"an entry of {table!r} in {cache_path()} is damaged (checksum mismatch); dropped it and recomputing", once=f"damaged:{table}")
    _run(table, lambda conn, name: conn.execute(f'DELETE FROM "{name}" WHERE key=?', (k,)), write=True)
    return None
  if kind == "bytes": return val
  try: return json.loads(val)
  except ValueError: return None   # cannot happen with a matching checksum; a miss all the same

def diskcache_drop_others(prefix: str, keep: str) -> None:
  """Drop every table whose name starts with `prefix` except `keep`'s: rows another version wrote and this one never
  reads (the space is reused by later writes). A no-op when CACHELEVEL=0 or the database is unusable."""
  if CACHELEVEL.value == 0: return
  def drop(conn: sqlite3.Connection, name: str) -> None:
    for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
      if t.startswith(prefix) and t != name: conn.execute(f'DROP TABLE "{t}"')
  _run(keep, drop, write=True)

def diskcache_put(table: str, key: Key, value: Value) -> Value:
  """Store `value` (bytes, or JSON data) under `key` (plain data) in `table` and return it; a no-op when CACHELEVEL=0."""
  if CACHELEVEL.value == 0: return value
  k, (kind, val) = _key(key), _encode(value)
  _run(table, lambda conn, name: conn.execute(f'INSERT OR REPLACE INTO "{name}" (key, kind, sha, val) VALUES (?, ?, ?, ?)',
                                               (k, kind, _checksum(kind, val), val)), write=True)
  return value

def diskcache_clear() -> None:
  """Drop every table of the cache database (compiled programs, BEAM results, memoised values): what they held is recomputed."""
  def drop(conn: sqlite3.Connection, name: str) -> None:
    for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall(): conn.execute(f'DROP TABLE "{t}"')
  with _st.lock:
    _run("cleared", drop, write=True)
    _st.tables.clear()
