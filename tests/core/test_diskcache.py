"""The sqlite compile cache: concurrency, corruption recovery, CACHELEVEL=0, and Compiler.compile_cached."""
import os, glob, sqlite3, threading, multiprocessing as mp
import pytest
from tinygrad import diskcache
from tinygrad.diskcache import diskcache_get, diskcache_put
from tinygrad.device import Compiler, CompileError
from tinygrad.helpers import Context

@pytest.fixture(autouse=True)
def db(tmp_path, monkeypatch):
  path = str(tmp_path / "sub" / "cache.db")   # a directory that does not exist yet
  monkeypatch.setenv("CACHEDB", path)
  diskcache.reset()
  yield path
  diskcache.reset()

def rows(path, table="t"):
  conn = sqlite3.connect(path)
  try: return conn.execute(f'SELECT count(*) FROM "{diskcache.TABLE}" WHERE ns=?', (table,)).fetchone()[0]
  finally: conn.close()

def test_roundtrip_and_lazy_open(db):
  assert not os.path.exists(db)          # nothing opened at import or reset
  assert diskcache_get("t", "missing") is None
  assert diskcache_put("t", ("k", 1), b"\x00\x01") == b"\x00\x01"
  assert diskcache_put("t", ("j", b"\xff"), {"v": [1, "x", None]}) == {"v": [1, "x", None]}
  assert diskcache_get("t", ("k", 1)) == b"\x00\x01"
  diskcache.reset()                      # a new connection sees it
  assert diskcache_get("t", ("k", 1)) == b"\x00\x01" and diskcache_get("t", ("j", b"\xff")) == {"v": [1, "x", None]}
  assert diskcache.cache_info()["bytes"] > 0 and diskcache.cache_info()["path"] == db

def test_public_tinygrad_import_path(db):
  # public tinygrad's programs import the cache's functions (and the platform flags) from tinygrad.helpers
  from tinygrad.helpers import diskcache_get as get, diskcache_put as put, diskcache_clear, OSX, WIN
  assert get("t", "k") is None and put("t", "k", [1, "v"]) == [1, "v"] and get("t", "k") == [1, "v"] == diskcache_get("t", "k")
  assert put("t", "k", b"\x01", version="2") == b"\x01" and get("t", "k", version="2") == b"\x01" and get("t", "k") == [1, "v"]
  diskcache_clear()
  assert get("t", "k") is None and isinstance(WIN, bool) and isinstance(OSX, bool)

def test_bad_table_name():
  with pytest.raises(ValueError, match="identifier"): diskcache_put("x; DROP TABLE y", "k", 1)

def _writer(path, wid, n):
  os.environ["CACHEDB"] = path
  diskcache.reset()
  for i in range(n): diskcache_put("t", f"{wid}-{i}", [wid, i])

def test_concurrent_writers(db):
  diskcache_put("t", "warm", 0)   # let both children find an existing WAL database too
  ctx = mp.get_context("fork")
  procs = [ctx.Process(target=_writer, args=(db, w, 300)) for w in range(2)]
  for p in procs: p.start()
  for p in procs: p.join(60)
  assert [p.exitcode for p in procs] == [0, 0]
  diskcache.reset()
  assert all(diskcache_get("t", f"{w}-{i}") == [w, i] for w in range(2) for i in range(300))
  assert rows(db) == 601

def test_corrupted_database_moved_aside(tmp_path, monkeypatch):
  # only tinygrad's own file (the default path) is recovered from garbage: a user-named one might be anybody's
  monkeypatch.delenv("CACHEDB")
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
  db = diskcache.cache_path()
  diskcache_put("t", "k", 1)
  diskcache.reset()
  with open(db, "wb") as f: f.write(b"this is not a database" * 100)
  for suffix in ("-wal", "-shm"):
    if os.path.exists(db + suffix): os.remove(db + suffix)
  with pytest.warns(RuntimeWarning, match="unreadable .* moved it to"):
    assert diskcache_get("t", "k") is None
  assert glob.glob(db + ".corrupt-*")
  diskcache_put("t", "k", 2)
  assert diskcache_get("t", "k") == 2 and rows(db) == 1

def test_unwritable_location_never_crashes(tmp_path, monkeypatch):
  blocker = tmp_path / "file"
  blocker.write_text("x")
  monkeypatch.setenv("CACHEDB", str(blocker / "cache.db"))   # parent is a file: cannot be created
  diskcache.reset()
  with pytest.warns(RuntimeWarning, match="disabled for this process"):
    assert diskcache_put("t", "k", 1) == 1
  assert diskcache_get("t", "k") is None

def test_cachelevel0_no_writes(db):
  with Context(CACHELEVEL=0):
    diskcache_put("t", "k", 1)
    assert diskcache_get("t", "k") is None
  assert not os.path.exists(db)
  assert diskcache_get("t", "k") is None

class CountingCompiler(Compiler):
  def __init__(self, cachekey="count", ver="1"):
    super().__init__(cachekey)
    self.calls, self.ver = 0, ver
  def version(self): return self.ver
  def compile(self, src):
    self.calls += 1
    if "bad" in src: raise CompileError("error: bad token", src)
    return b"BIN:" + src.encode()

def test_compile_cached_hits():
  c = CountingCompiler()
  assert c.compile_cached("k1") == b"BIN:k1" and c.compile_cached("k1") == b"BIN:k1" and c.calls == 1
  assert CountingCompiler().compile_cached("k1") == b"BIN:k1"   # another instance, same key: from disk

def test_compile_cache_key_has_version_and_cachekey():
  CountingCompiler(ver="1").compile_cached("k")
  c2, c3 = CountingCompiler(ver="2"), CountingCompiler(cachekey="other")
  c2.compile_cached("k")
  c3.compile_cached("k")
  assert c2.calls == 1 and c3.calls == 1

def test_compile_cache_key_has_the_compilers_code(tmp_path, monkeypatch):
  # a plugin upgrade that changed the options its compiler passes (say --fmad=true -> false) kept loading the old binaries:
  # same cachekey, same tool version, same source
  import sys
  from tinygrad.codegen import progcache
  pkg = tmp_path / "pc_compiler_pkg"
  pkg.mkdir()
  def write(opt):
    (pkg / "__init__.py").write_text(f"from tinygrad.device import Compiler\nclass C(Compiler):\n  def compile(self, src): return (src + {opt!r}).encode()\n")
  write(" -O2")
  monkeypatch.syspath_prepend(str(tmp_path))
  try:
    import pc_compiler_pkg
    assert pc_compiler_pkg.C("ck").compile_cached("k") == b"k -O2"
    write(" -O3")   # the upgrade: a new process imports the new code
    sys.modules.pop("pc_compiler_pkg")
    progcache._package_hash.cache_clear()
    import pc_compiler_pkg as upgraded
    assert upgraded.C("ck").compile_cached("k") == b"k -O3"
  finally:
    sys.modules.pop("pc_compiler_pkg", None)
    progcache._package_hash.cache_clear()

def test_failed_compile_not_cached(db):
  c = CountingCompiler()
  for _ in range(2):
    with pytest.raises(CompileError, match="bad token"): c.compile_cached("bad kernel")
  assert c.calls == 2
  assert not os.path.exists(db) or rows(db, "compile") == 0

def test_no_cachekey_or_cachelevel0_skips_cache(db):
  c = CountingCompiler(cachekey=None)
  c.compile_cached("k")
  c.compile_cached("k")
  assert c.calls == 2
  c = CountingCompiler()
  with Context(CACHELEVEL=0):
    c.compile_cached("k")
    c.compile_cached("k")
  assert c.calls == 2 and not os.path.exists(db)

# ---- nothing read from the file runs code ----
class _Pwn:
  def __reduce__(self): return (exec, ("import builtins; builtins._tinygrad_cache_pwned = True",))

def test_crafted_row_runs_no_code(db):
  import pickle, hashlib, builtins
  diskcache_put("t", "k", b"innocent")
  payload = pickle.dumps(_Pwn())
  conn = sqlite3.connect(db)
  try:
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall():
      cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')]
      fill = {"val": payload, "kind": "bytes", "sha": hashlib.sha256(b"bytes\x00" + payload).hexdigest()}
      conn.execute(f'UPDATE "{name}" SET ' + ", ".join(f"{c}=?" for c in cols if c != "key"), [fill.get(c, payload) for c in cols if c != "key"])
    conn.commit()
  finally: conn.close()
  diskcache.reset()
  got = diskcache_get("t", "k")
  assert not getattr(builtins, "_tinygrad_cache_pwned", False), "a cached row was unpickled and ran code"
  assert got is None or got == payload   # plain bytes at most, never an object

def test_keys_and_values_are_plain_data():
  with pytest.raises(TypeError, match="plain data"): diskcache_put("t", object(), b"x")
  with pytest.raises(TypeError, match="bytes or JSON"): diskcache_put("t", "k", {1, 2})
  assert diskcache_put("t", ("a", 1, 2.5, None, True, b"\x00"), [1, 2]) == [1, 2]
  assert diskcache_get("t", ("a", 1, 2.5, None, True, b"\x00")) == [1, 2]
  assert diskcache_get("t", ["a", 1, 2.5, None, True, b"\x01"]) is None   # the bytes are part of the key

def test_old_pickled_schema_is_ignored(db):
  import pickle, hashlib, builtins
  os.makedirs(os.path.dirname(db), exist_ok=True)
  conn = sqlite3.connect(db)   # a schema-1 cache: pickled rows under sha256(pickle(key))
  conn.execute('CREATE TABLE "t_v1" (key TEXT PRIMARY KEY, val BLOB)')
  conn.execute('INSERT INTO "t_v1" VALUES (?, ?)', (hashlib.sha256(pickle.dumps("k", protocol=4)).hexdigest(), pickle.dumps(_Pwn())))
  conn.commit()
  conn.close()
  assert diskcache_get("t", "k") is None and not getattr(builtins, "_tinygrad_cache_pwned", False)
  diskcache_put("t", "k", b"new")   # the old file is recognised as ours and gains the new table
  assert diskcache_get("t", "k") == b"new"

# ---- a damaged entry is dropped and recomputed ----
def _damage(path, table, how):
  conn = sqlite3.connect(path)
  try:
    for rowid, val in conn.execute(f'SELECT rowid, val FROM "{diskcache.TABLE}" WHERE ns=?', (table,)).fetchall():
      bad = val[:len(val)//2] if how == "truncate" else bytes([val[0] ^ 0xFF]) + val[1:]
      conn.execute(f'UPDATE "{diskcache.TABLE}" SET val=? WHERE rowid=?', (bad, rowid))
    conn.commit()
  finally: conn.close()

@pytest.mark.parametrize("how", ["flip", "truncate"])
def test_damaged_entry_is_dropped_and_recompiled(db, how):
  c = CountingCompiler()
  assert c.compile_cached("src") == b"BIN:src" and c.calls == 1
  diskcache.reset()
  _damage(db, "compile", how)
  with pytest.warns(RuntimeWarning, match=f"{os.path.basename(db)} is damaged"):
    assert c.compile_cached("src") == b"BIN:src"
  assert c.calls == 2
  assert CountingCompiler().compile_cached("src") == b"BIN:src"   # the recompiled binary replaced the damaged row
  assert c.calls == 2 and rows(db, "compile") == 1

# ---- a locked database: this entry runs uncached, quickly, and the cache keeps working ----
def test_locked_database_skips_the_entry_not_the_cache(db):
  diskcache_put("t", "warm", b"0")
  busy_ms = diskcache._st.conn.execute("PRAGMA busy_timeout").fetchone()[0]
  assert busy_ms <= 2000, f"a locked cache would stall each entry {busy_ms} ms"
  other = sqlite3.connect(db, isolation_level=None)
  other.execute("BEGIN IMMEDIATE")   # another process's open write transaction
  other.execute(f'INSERT OR REPLACE INTO "{diskcache.TABLE}" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', ("t", "", "", "x", "bytes", "0", 0, 0.0, b""))
  try:
    with pytest.warns(RuntimeWarning, match="locked by another process") as w:
      assert diskcache_put("t", "k1", b"1") == b"1"
      assert diskcache_put("t", "k2", b"2") == b"2"
      assert diskcache_get("t", "warm") == b"0"   # readers are not blocked in WAL mode
    assert len([x for x in w if "locked" in str(x.message)]) == 1, "warned more than once"
  finally: other.execute("ROLLBACK")
  other.close()
  diskcache_put("t", "k3", b"3")
  assert diskcache_get("t", "k3") == b"3" and diskcache_get("t", "k1") is None

def test_a_lock_held_for_long_costs_no_wait_per_entry(db):
  # a stopped process's open write transaction: every entry waited 50 ms after the first give-up (2000 kernels: +100 s)
  import time
  diskcache_put("t", "warm", b"0")
  other = sqlite3.connect(db, isolation_level=None)
  other.execute("BEGIN IMMEDIATE")
  other.execute(f'INSERT OR REPLACE INTO "{diskcache.TABLE}" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)', ("t", "", "", "x", "bytes", "0", 0, 0.0, b""))
  try:
    with pytest.warns(RuntimeWarning, match="locked by another process"):
      for i in range(3): diskcache_put("t", f"k{i}", b"1")   # the full wait, then the short ones
      st = time.perf_counter()
      for i in range(40): assert diskcache_put("t", f"j{i}", b"1") == b"1"
      assert time.perf_counter() - st < 0.6   # (was >= 40 * 50 ms)
      assert diskcache_get("t", "warm") == b"0"
  finally: other.execute("ROLLBACK")
  other.close()
  diskcache_put("t", "k3", b"3")   # the first write that gets through waits the full time again
  assert diskcache_get("t", "k3") == b"3" and diskcache._st.conn.execute("PRAGMA busy_timeout").fetchone()[0] == diskcache._BUSY_MS

# ---- a file that is not ours is never touched ----
def _snapshot(d): return {p: open(p, "rb").read() for p in glob.glob(os.path.join(d, "*"))}

def test_foreign_text_file_is_left_alone(tmp_path, monkeypatch):
  notes = tmp_path / "notes.txt"
  notes.write_text("my notes, not a database\n" * 50)
  monkeypatch.setenv("CACHEDB", str(notes))
  diskcache.reset()
  before = _snapshot(str(tmp_path))
  with pytest.warns(RuntimeWarning, match="notes.txt is not a tinygrad cache database"):
    assert diskcache_put("t", "k", b"1") == b"1"
  assert diskcache_get("t", "k") is None
  c = CountingCompiler()
  c.compile_cached("s")
  c.compile_cached("s")
  assert c.calls == 2 and _snapshot(str(tmp_path)) == before

@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_path_that_is_not_a_regular_file_is_left_alone(tmp_path, kind):
  # CACHEDB naming a FIFO hung the program in open() (waiting for a writer); a directory warned on every entry
  import subprocess, sys
  p = tmp_path / "c.db"
  if kind == "fifo": os.mkfifo(p)
  else: p.mkdir()
  code = "from tinygrad.diskcache import diskcache_put, diskcache_get\nprint(diskcache_put('t', 'k', b'1'), diskcache_get('t', 'k'))"
  r = subprocess.run([sys.executable, "-W", "always", "-c", code], env={**os.environ, "CACHEDB": str(p)}, capture_output=True, text=True, timeout=20)
  assert r.stdout.strip() == "b'1' None" and f"not a regular file but a {'FIFO' if kind == 'fifo' else 'directory'}" in r.stderr
  assert r.stderr.count("RuntimeWarning") == 1 and os.listdir(tmp_path) == ["c.db"]

def test_foreign_sqlite_database_is_left_alone(tmp_path, monkeypatch):
  other = tmp_path / "app.db"
  conn = sqlite3.connect(other)
  conn.execute("CREATE TABLE users (name TEXT)")
  conn.execute("INSERT INTO users VALUES ('ann')")
  conn.commit()
  conn.close()
  monkeypatch.setenv("CACHEDB", str(other))
  diskcache.reset()
  before = _snapshot(str(tmp_path))
  with pytest.warns(RuntimeWarning, match="without tinygrad's cache tables"):
    assert diskcache_put("t", "k", b"1") == b"1"
  assert _snapshot(str(tmp_path)) == before

def test_damaged_database_with_our_header_is_recovered(db):
  for i in range(200): diskcache_put("t", f"k{i}", os.urandom(64))
  diskcache.reset()
  size = os.path.getsize(db)
  with open(db, "r+b") as f:   # the header (our mark) survives, every page after the first is garbage
    f.seek(4096)
    f.write(b"\xde\xad" * ((size - 4096) // 2))
  with pytest.warns(RuntimeWarning, match="moved it to"):
    diskcache_get("t", "k1")
  assert glob.glob(db + ".corrupt-*")
  diskcache_put("t", "k", b"2")
  assert diskcache_get("t", "k") == b"2"

# ---- fork: a child never inherits the connection or a held lock ----
def _fork_child(q):
  diskcache_put("t", "child", b"from child")
  q.put(diskcache_get("t", "child"))

def _fork_while_held(hold_s, monkeypatch):
  # another thread is in the middle of a cache operation (holds the lock) for hold_s seconds at the moment of fork
  held, release = threading.Event(), threading.Event()
  def hold():
    with diskcache._st.lock:
      held.set()
      release.wait(hold_s)
  t = threading.Thread(target=hold)
  t.start()
  held.wait(10)
  ctx = mp.get_context("fork")
  q = ctx.Queue()
  p = ctx.Process(target=_fork_child, args=(q,))
  p.start()
  try: got = q.get(timeout=60)
  finally:
    release.set()
    t.join()
    p.join(10)
    if p.is_alive(): p.kill()
  return got, p.exitcode

def test_fork_waits_for_another_threads_operation(db, monkeypatch):
  diskcache_put("t", "parent", b"p")
  got, code = _fork_while_held(0.3, monkeypatch)   # the fork waits for it, closes the connection, and the child opens its own
  assert got == b"from child" and code == 0
  assert diskcache_get("t", "parent") == b"p" and diskcache_get("t", "child") == b"from child"   # the parent reopened

def test_fork_during_a_long_operation_leaves_the_child_uncached(db, monkeypatch):
  # the wait runs out: the connection crosses the fork, and the child, whose sqlite would share its lock state, runs uncached
  monkeypatch.setattr(diskcache, "_FORK_WAIT_S", 0.05)
  diskcache_put("t", "parent", b"p")
  got, code = _fork_while_held(120, monkeypatch)
  assert got is None and code == 0
  assert diskcache_get("t", "parent") == b"p" and diskcache_get("t", "child") is None   # the parent's connection still works

# ---- several versions and devices coexist; old rows go by age and size, least recently used first ----
def test_versions_and_devices_coexist_and_a_dropped_table_is_recreated(db):
  for v in ("v1", "v2"):
    for d in ("CPU", "PYTHON"): diskcache_put("t", "k", f"{v}-{d}", version=v, device=d)
  other = sqlite3.connect(db)
  other.execute(f'DROP TABLE "{diskcache.TABLE}"')   # gone under this process's open connection
  other.commit()
  other.close()
  assert diskcache_get("t", "k", version="v1", device="CPU") is None
  diskcache_put("t", "k", "again", version="v1", device="CPU")
  assert diskcache_get("t", "k", version="v1", device="CPU") == "again" and diskcache.cache_info()["broken"] is None
  diskcache_put("t", "k", "v2", version="v2", device="CPU")
  assert [diskcache_get("t", "k", version=v, device="CPU") for v in ("v1", "v2")] == ["again", "v2"]

def _total(path):
  conn = sqlite3.connect(path)
  try: return conn.execute(f'SELECT SUM(size) FROM "{diskcache.TABLE}"').fetchone()[0]
  finally: conn.close()

def test_eviction_keeps_the_total_under_the_cap_least_recently_used_first(db, monkeypatch):
  clock = [1000.0]
  monkeypatch.setattr(diskcache, "_now", lambda: clock[0])
  monkeypatch.setattr(diskcache, "_ATIME_RES", 0.0)   # every read is recorded (the default batches them per 10 minutes)
  with Context(CACHEDB_MAX_BYTES=20_000, CACHEDB_MAX_DAYS=0):
    for i in range(15):
      clock[0] += 1
      diskcache_put("t", i, bytes([i]) * 1000)
    assert _total(db) == 15_000
    clock[0] += 1
    for i in (0, 1, 2): assert diskcache_get("t", i) == bytes([i]) * 1000   # the oldest three, used again
    for i in range(15, 27):
      clock[0] += 1
      diskcache_put("t", i, bytes([i]) * 1000)
      assert _total(db) <= 20_000
    kept = {i for i in range(27) if diskcache_get("t", i) is not None}
  assert {0, 1, 2} | set(range(15, 27)) <= kept   # used again, or stored last
  assert 3 not in kept and len(kept) <= 20        # the rows stored early and never read again went first

def test_eviction_reads_an_index_not_the_rows(db):
  # the total and the least-recently-used walk are answered from the (atime, size) index: summed from the table, a 1 GB
  # cache's sizes were read from every row's page, the whole file, at the first store of every process (t5's cold first
  # call: 0.8 s on an empty cache, 8-9 s on a 1.4 GB one out of the page cache)
  diskcache_put("t", "k", b"x" * 5000)
  conn = sqlite3.connect(db)
  try:
    for with_old_index in (False, True):   # a file made by an earlier version also holds its (atime) index
      if with_old_index: conn.execute(f'CREATE INDEX IF NOT EXISTS "{diskcache.TABLE}_atime" ON "{diskcache.TABLE}" (atime)')
      for sql in (diskcache._TOTAL_SQL, diskcache._LRU_SQL):
        plan = " ".join(r[-1] for r in conn.execute("EXPLAIN QUERY PLAN " + sql))
        assert "COVERING INDEX" in plan and "TEMP B-TREE" not in plan, (sql, plan)
  finally: conn.close()

def test_a_fork_keeps_the_running_total(db, monkeypatch):
  # a fork closes the connection (forked codegen forks per schedule); the parent reopens the same file and its total
  # still holds: measuring it again per fork was a scan of the cache for every schedule of a cold run
  calls = []
  real = diskcache.evict
  monkeypatch.setattr(diskcache, "evict", lambda conn=None: calls.append(1) or real(conn))
  diskcache_put("t", "a", b"a" * 100)
  assert len(calls) == 1 and diskcache._st.total == 100   # the first store measures
  pid = os.fork()
  if pid == 0: os._exit(0)
  os.waitpid(pid, 0)
  assert diskcache._st.conn is None   # the fork closed it
  diskcache_put("t", "b", b"b" * 50)
  assert len(calls) == 1 and diskcache._st.total == 150 and _total(db) == 150
  monkeypatch.setenv("CACHEDB", db + "2")   # another file: measured afresh
  diskcache_put("t", "c", b"c")
  assert len(calls) == 2 and diskcache._st.total == 1

def test_rows_unused_for_days_are_dropped_and_old_schemas_go_at_eviction(db, monkeypatch):
  clock = [1e9]
  monkeypatch.setattr(diskcache, "_now", lambda: clock[0])
  diskcache_put("t", "old", b"x")
  conn = sqlite3.connect(db)
  conn.execute('CREATE TABLE "program_0123456789abcdef_v2" (key TEXT PRIMARY KEY, kind TEXT, sha TEXT, val BLOB)')
  conn.commit()
  conn.close()
  clock[0] += 31 * 86400
  diskcache.reset()
  with Context(CACHEDB_MAX_BYTES=10):
    diskcache_put("t", "new", b"y")
    diskcache_put("t", "big", b"z" * 11)   # larger than the cap: never stored
  assert diskcache_get("t", "old") is None and diskcache_get("t", "new") == b"y" and diskcache_get("t", "big") is None
  tables = {t for (t,) in sqlite3.connect(db).execute("SELECT name FROM sqlite_master WHERE type='table'")}
  assert tables == {diskcache.TABLE}

# ---- hardening: a symlinked default path, a read-only mount, a file others could have written ----
def test_default_path_symlinked_into_another_apps_database_is_not_written(tmp_path, monkeypatch):
  monkeypatch.delenv("CACHEDB")
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
  other = tmp_path / "app" / "app.db"
  other.parent.mkdir()
  conn = sqlite3.connect(other)
  conn.execute("CREATE TABLE users (name TEXT)")
  conn.execute("INSERT INTO users VALUES ('ann')")
  conn.commit()
  conn.close()
  os.makedirs(os.path.dirname(diskcache.default_path()))
  os.symlink(other, diskcache.default_path())
  diskcache.reset()
  before = _snapshot(str(other.parent))
  with pytest.warns(RuntimeWarning, match="not a tinygrad cache database") as w:
    assert diskcache_put("t", "k", b"1") == b"1"
    assert diskcache_get("t", "k") is None
    c = CountingCompiler()
    c.compile_cached("s")
    c.compile_cached("s")
  assert c.calls == 2 and len([x for x in w if "not a tinygrad" in str(x.message)]) == 1   # warned once, ran uncached
  assert _snapshot(str(other.parent)) == before and os.path.islink(diskcache.default_path())

RO_READER = """
import os, warnings
warnings.simplefilter("error", RuntimeWarning)   # no 'disabled' or 'locked' warning: the cache is simply read
from tinygrad import diskcache
from tinygrad.diskcache import diskcache_get, diskcache_put
assert not os.access(os.path.dirname(os.environ["CACHEDB"]), os.W_OK), "the directory is writable: not a read-only mount"
print(diskcache_get("t", "a"), diskcache_get("t", ("b", 2)), diskcache_get("t", "missing"))
diskcache_put("t", "new", b"x")   # a no-op
print(diskcache_get("t", "new"))
"""

def test_warm_cache_on_a_read_only_mount_is_read(db):
  import shutil, subprocess, sys
  if shutil.which("unshare") is None: pytest.skip("needs unshare (util-linux) to make a read-only bind mount")
  diskcache_put("t", "a", b"value a")
  diskcache_put("t", ("b", 2), [1, "two"])
  diskcache.reset()   # the last connection closes: the WAL is folded into the file
  d = os.path.dirname(db)
  before = _snapshot(d)
  script = f'mount --bind "{d}" "{d}" && mount -o remount,ro,bind "{d}" "{d}" && exec "{sys.executable}" -c \'{RO_READER}\''
  if subprocess.run(["unshare", "-r", "-m", "sh", "-c", f'mount --bind "{d}" "{d}"'], capture_output=True).returncode != 0:
    pytest.skip("unshare -r -m cannot mount here (user namespaces disabled)")
  r = subprocess.run(["unshare", "-r", "-m", "sh", "-c", script], capture_output=True, text=True, env=os.environ, timeout=120)
  assert r.returncode == 0, r.stderr[-2000:]
  assert r.stdout.splitlines() == ["b'value a' [1, 'two'] None", "None"]
  assert _snapshot(d) == before

def test_new_cache_files_are_this_users_alone(db):
  old = os.umask(0o002)   # a umask that would make a group-writable file
  try: diskcache_put("t", "k", b"1")
  finally: os.umask(old)
  for p in (db, db + "-wal"):
    if os.path.exists(p): assert os.stat(p).st_mode & 0o077 == 0, (p, oct(os.stat(p).st_mode))

@pytest.mark.parametrize("how", ["group-writable", "other-writable", "other-owner"])
def test_a_cache_file_others_could_write_is_not_used(db, how):
  c = CountingCompiler()
  c.compile_cached("s")
  diskcache.reset()
  if how == "other-owner":
    if os.geteuid() != 0: pytest.skip("changing a file's owner needs root")
    os.chown(db, 12345, -1)
  else: os.chmod(db, 0o620 if how == "group-writable" else 0o602)
  with pytest.warns(RuntimeWarning, match="owned by uid 12345|writable by group or others") as w:
    c.compile_cached("s")
    c.compile_cached("s")
  assert c.calls == 3 and len(w) == 1   # ran uncached (the binary in the file is not trusted), warned once

def test_a_dict_with_keys_json_would_turn_into_str_is_refused():
  # stored, {1: "a"} read back as {"1": "a"}: a memoised function gave another value from the cache than computed
  for v in ({1: "a"}, {"x": [{True: 1}]}, ({None: 0},), {1.5: 2}):
    with pytest.raises(TypeError, match="dict keys are str"): diskcache_put("t", "k", v)
  assert diskcache_get("t", "k") is None
  assert diskcache_put("t", "k", {"a": [{"b": 1}]}) == {"a": [{"b": 1}]} and diskcache_get("t", "k") == {"a": [{"b": 1}]}

def test_non_finite_floats_are_plain_data():
  # were a ValueError ("Out of range float values are not JSON compliant") from a key, a TypeError from a value
  import math
  assert diskcache_put("t", ("x", float("inf")), [float("-inf"), 1.5]) == [float("-inf"), 1.5]
  assert diskcache_get("t", ("x", float("inf"))) == [float("-inf"), 1.5] and diskcache_get("t", ("x", float("-inf"))) is None
  diskcache_put("t", float("nan"), {"v": float("nan")})
  assert math.isnan(diskcache_get("t", float("nan"))["v"])

def test_memoised_functions_of_the_same_name_in_two_modules_stay_apart():
  # keyed by the name alone, b.load(1) returned a.load(1)'s value from the cache
  import types
  from tinygrad.helpers import diskcache as memo
  mods = [types.ModuleType(n) for n in ("a_b", "a.b", "other")]
  for i, m in enumerate(mods): exec(f"def load(x): return [{i!r}, x]", m.__dict__)
  fs = [memo(m.load) for m in mods]
  assert [f(1) for f in fs] == [[0, 1], [1, 1], [2, 1]] and [f(1) for f in fs] == [[0, 1], [1, 1], [2, 1]]

def test_memoised_arguments_and_values_keep_their_types():
  # keys were plain JSON: f([1, 2]) returned what f((1, 2)) computed, f(IntEnum(1)) f(1)'s, f(b=2, a=1) f(a=1, b=2)'s; and
  # a hit gave a tuple back as a list
  import enum, collections
  from tinygrad.helpers import diskcache as memo
  class E(enum.IntEnum): A = 1
  P = collections.namedtuple("P", "x y")
  def kinds(*a, **kw): return [type(x).__name__ for x in a] + list(kw)
  f = memo(kinds)
  calls = [((1, 2),), ([1, 2],), (1,), (1.0,), (True,), (E.A,), (P(1, 2),), (b"x",), (bytearray(b"x"),)]
  for _ in range(2): assert [f(*c) for c in calls] == [kinds(*c) for c in calls] and f(a=1, b=2) == ["a", "b"] and f(b=2, a=1) == ["b", "a"]
  assert f({1: 2}) == f({1: 2}) == ["dict"]   # (dicts were refused as arguments)
  g = memo(lambda x: x)
  v = ((1, 2), {(1, "a"): [b"\x00", bytearray(b"1"), None, 1.0, -0.0, float("inf")], "s": ()})
  for _ in range(2): assert [(r := g(v)) == v, type(r[0]), type(list(r[1])[0]), [type(x) for x in r[1][(1, "a")]]] == \
                            [True, tuple, tuple, [bytes, bytearray, type(None), float, float, float]]
  with pytest.raises(TypeError, match="fix: return int"): g(E.A)

@pytest.mark.parametrize("col", [0, 1, 2, 3])
def test_a_value_copied_into_another_row_is_a_miss(db, col):
  # the checksum covered the value alone: a row's value copied into another row (one of another key, table, code version
  # or device: a program for another source, by hand, a tool, a misplaced page) passed it and was returned for that key
  target = ("t", "a", "1", "CPU")
  source = tuple(("u", "b", "2", "NV")[i] if i == col else v for i, v in enumerate(target))
  for ns, k, v, d in (target, source): diskcache_put(ns, k, f"{ns}{k}{v}{d}".encode(), version=v, device=d)
  conn = sqlite3.connect(db)
  try:
    conn.execute(f'UPDATE "{diskcache.TABLE}" SET (kind, sha, val) = (SELECT kind, sha, val FROM "{diskcache.TABLE}" WHERE ns=? AND version=? '
                 f'AND device=? ORDER BY rowid DESC LIMIT 1) WHERE rowid=(SELECT min(rowid) FROM "{diskcache.TABLE}")', (source[0], *source[2:]))
    conn.commit()
  finally: conn.close()
  diskcache.reset()
  with pytest.warns(RuntimeWarning, match="damaged"): assert diskcache_get("t", "a", version="1", device="CPU") is None
  assert diskcache_get(source[0], source[1], version=source[2], device=source[3]) == "".join(source).encode()

def test_a_memoised_functions_edited_body_computes_afresh():
  # keyed by the name alone, an edited `def f(x): return x + 2` returned what the old body `x + 1` computed, run after run;
  # the same code (moved down a few lines, in another process) still hits
  import types
  from tinygrad.helpers import diskcache as memo
  def load(src, blank=0):
    m = types.ModuleType("edited_mod")
    m.calls = []
    exec("\n" * blank + src, m.__dict__)
    return memo(m.f), m.calls
  body = "def f(x, k={'a', 'b'}):\n  calls.append(x)\n  return x + %d if 'a' in {'a', 'c'} else None\n"
  f, calls = load(body % 1)
  assert f(1) == 2 and f(1) == 2 and calls == [1]
  f, calls = load(body % 1, blank=5)
  assert f(1) == 2 and calls == []
  f, calls = load(body % 2)
  assert f(1) == 3 and calls == [1]
