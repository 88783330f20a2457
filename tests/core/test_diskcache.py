"""The sqlite compile cache: concurrency, corruption recovery, CACHELEVEL=0, and Compiler.compile_cached."""
import os, glob, sqlite3, multiprocessing as mp
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
  try: return conn.execute(f'SELECT count(*) FROM "{table}_v{diskcache.SCHEMA}"').fetchone()[0]
  finally: conn.close()

def test_roundtrip_and_lazy_open(db):
  assert not os.path.exists(db)          # nothing opened at import or reset
  assert diskcache_get("t", "missing") is None
  assert diskcache_put("t", ("k", 1), {"v": b"\x00\x01"}) == {"v": b"\x00\x01"}
  assert diskcache_get("t", ("k", 1)) == {"v": b"\x00\x01"}
  diskcache.reset()                      # a new connection sees it
  assert diskcache_get("t", ("k", 1)) == {"v": b"\x00\x01"}
  assert diskcache.cache_info()["bytes"] > 0 and diskcache.cache_info()["path"] == db

def test_bad_table_name():
  with pytest.raises(ValueError, match="identifier"): diskcache_put("x; DROP TABLE y", "k", 1)

def _writer(path, wid, n):
  os.environ["CACHEDB"] = path
  diskcache.reset()
  for i in range(n): diskcache_put("t", f"{wid}-{i}", (wid, i))

def test_concurrent_writers(db):
  diskcache_put("t", "warm", 0)   # let both children find an existing WAL database too
  ctx = mp.get_context("fork")
  procs = [ctx.Process(target=_writer, args=(db, w, 300)) for w in range(2)]
  for p in procs: p.start()
  for p in procs: p.join(60)
  assert [p.exitcode for p in procs] == [0, 0]
  diskcache.reset()
  assert all(diskcache_get("t", f"{w}-{i}") == (w, i) for w in range(2) for i in range(300))
  assert rows(db) == 601

def test_corrupted_database_moved_aside(db):
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
