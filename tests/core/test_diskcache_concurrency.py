"""The disk cache shared by many processes at once: every process holds its own sqlite lock while it uses the file.

A process that lost its lock (an old connection left open for the garbage collector and then an open()/close() of the
file, or a connection inherited across fork) can have its WAL checkpointed and deleted under it by another process that
believes it is the last user: its writes are lost and the file ends up "malformed" (issue 33: a `make test` run).
"""
import os, gc, sys, glob, time, random, sqlite3, subprocess, warnings, multiprocessing as mp
import pytest
from tinygrad import diskcache
from tinygrad.diskcache import diskcache_get, diskcache_put
from tinygrad.helpers import Context

@pytest.fixture(autouse=True)
def db(tmp_path, monkeypatch):
  path = str(tmp_path / "cache.db")
  monkeypatch.setenv("CACHEDB", path)
  diskcache.reset()
  yield path
  diskcache.reset()

def integrity(path):
  conn = sqlite3.connect(path)
  try: return conn.execute("PRAGMA integrity_check").fetchall()
  finally: conn.close()

def rows(path, ns="t"):
  conn = sqlite3.connect(path)
  try: return conn.execute(f'SELECT count(*) FROM "{diskcache.TABLE}" WHERE ns=?', (ns,)).fetchone()[0]
  finally: conn.close()

# another program on the same file: opens it, writes pages of its own, exits (the last user checkpoints and deletes the WAL)
_VISITOR = ("import os, sys, sqlite3\nc = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)\n"
            "c.execute('CREATE TABLE IF NOT EXISTS scratch_v1 (x BLOB)')\n"
            "c.executemany('INSERT INTO scratch_v1 VALUES (?)', [(os.urandom(3000),) for _ in range(40)])\nc.close()\n")
def visit(path): subprocess.run([sys.executable, "-c", _VISITOR, path], check=True, timeout=60)

def test_cachedb_switched_away_and_back_keeps_its_lock(db, tmp_path, monkeypatch):
  # a test that points CACHEDB (or XDG_CACHE_HOME) elsewhere and back: the connection it left used to stay open until a
  # gc pass, and reading the header before the reopen dropped this process's lock; no gc pass comes here
  gc.disable()
  try:
    for i in range(20): diskcache_put("t", i, os.urandom(2000))
    monkeypatch.setenv("CACHEDB", str(tmp_path / "other.db"))
    diskcache_put("t", "elsewhere", 1)
    monkeypatch.setenv("CACHEDB", db)
    assert diskcache_get("t", 0) is not None
    visit(db)
    for i in range(20, 120): diskcache_put("t", i, os.urandom(2000))
    visit(db)
    for i in range(120, 160): diskcache_put("t", i, os.urandom(2000))
  finally: gc.enable()
  diskcache.reset()
  assert integrity(db) == [("ok",)]
  assert rows(db) == 160 and sum(diskcache_get("t", i) is not None for i in range(160)) == 160

def _child_after_parent_closed(ready, go):
  diskcache_put("t", ("c", 0), os.urandom(2000))   # the child's own connection
  ready.set()
  go.wait(60)
  for i in range(1, 100): diskcache_put("t", ("c", i), os.urandom(2000))
  visit(os.environ["CACHEDB"])
  for i in range(100, 150): diskcache_put("t", ("c", i), os.urandom(2000))
  diskcache.reset()

def test_fork_child_keeps_its_writes_when_the_parent_closes(db):
  # a child used to share the lock state of the parent's inherited connection and hold no lock of its own
  for i in range(20): diskcache_put("t", i, os.urandom(2000))
  ctx = mp.get_context("fork")
  ready, go = ctx.Event(), ctx.Event()
  p = ctx.Process(target=_child_after_parent_closed, args=(ready, go))
  p.start()
  try:
    assert ready.wait(60)
    diskcache.reset()   # the parent closes (or exits) while its child goes on
    visit(db)
    go.set()
  finally:
    p.join(60)
    if p.is_alive(): p.kill()
  assert p.exitcode == 0
  assert integrity(db) == [("ok",)]
  assert rows(db) == 170

def test_a_false_alarm_moves_nothing(db):
  # an error seen through one connection ("malformed" from a stale view) is not proof: sqlite's quick_check decides
  diskcache_put("t", "k", b"v")
  def fake(conn): raise sqlite3.DatabaseError("database disk image is malformed")
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert diskcache._run(fake) is None
  assert not glob.glob(db + ".corrupt-*") and diskcache_get("t", "k") == b"v"

_HOLDER = "import sys, sqlite3\nc = sqlite3.connect(sys.argv[1])\nc.execute('SELECT count(*) FROM sqlite_master').fetchall()\nprint('ready', flush=True)\nsys.stdin.read()\n"

def test_damaged_file_in_use_by_another_process_is_left_in_place(db):
  for i in range(40): diskcache_put("t", i, os.urandom(2000))
  diskcache.reset()
  holder = subprocess.Popen([sys.executable, "-c", _HOLDER, db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline() == "ready\n"
    with open(db, "r+b") as f:   # damage every page after the first
      f.seek(4096)
      f.write(b"\xde\xad" * ((os.path.getsize(db) - 4096) // 2))
    with pytest.warns(RuntimeWarning, match="other processes have it open, so it was left in place"):
      assert diskcache_get("t", 1) is None
    assert not glob.glob(db + ".corrupt-*") and os.path.exists(db)
  finally:
    holder.communicate("", timeout=30)
  diskcache.reset()   # alone with it now: moved aside and started anew
  with pytest.warns(RuntimeWarning, match="moved it to"):
    assert diskcache_get("t", 1) is None
  assert glob.glob(db + ".corrupt-*")
  diskcache_put("t", "k", 1)
  assert diskcache_get("t", "k") == 1

# ---- the stress test: many processes, forks, CACHEDB switches, resets and evictions on one file ----
_BAD = r".*(unreadable|malformed|damaged|disabled|moved it).*"

def _holds_its_lock(path):
  # once a read succeeded on this process's connection, the kernel must list a lock on the file under this process (Linux)
  if not os.path.exists("/proc/locks"): return True
  if diskcache._run(lambda conn: conn.execute("SELECT count(*) FROM sqlite_master").fetchone()) is None: return True   # locked: later
  st = os.stat(path)
  file_id = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"   # as /proc/locks names it
  with open("/proc/locks") as f: return any(ln.split()[4:6] == [str(os.getpid()), file_id] for ln in f if "->" not in ln)

def _role(role, path, seconds, seed):
  warnings.filterwarnings("error", message=_BAD)   # a corruption warning fails the role (exit status 1)
  rng, end = random.Random(seed), time.time() + seconds
  other = path + f".{role}.db"
  if role == "switcher": gc.disable()   # the old code's open connection then lives as long as it would between gc passes
  with Context(CACHEDB_MAX_BYTES=60_000, CACHEDB_MAX_DAYS=0):   # eviction on nearly every store
    i = 0
    while time.time() < end:
      i += 1
      key = (role, rng.randrange(200))
      if rng.random() < 0.5: diskcache_put("t", key, os.urandom(rng.randrange(500, 4000)))
      else: diskcache_get("t", key)
      if i % 7 == 0 and not _holds_its_lock(path): os._exit(4)   # using the file without a lock: its WAL can be deleted under it
      if role == "churn" and i % 5 == 0: diskcache.reset()   # close: maybe the last user, which checkpoints and deletes the WAL
      if role == "switcher" and i % 10 == 0:
        os.environ["CACHEDB"] = other
        diskcache_put("t", "x", i)
        os.environ["CACHEDB"] = path
      if role == "forker" and i % 40 == 0:
        p = mp.get_context("fork").Process(target=_role, args=("child", path, 0.3, rng.random()))
        p.start()
        diskcache.reset()   # the parent closes while its child works
        p.join(30)
        if p.exitcode != 0: os._exit(3)
  diskcache.reset()

# `make test` runs it for 1.5 s; `make test-cache-stress` for a minute (TINYGRAD_CACHE_STRESS_S)
STRESS_S = float(os.environ.get("TINYGRAD_CACHE_STRESS_S", "1.5"))

def test_stress_many_processes_one_file(db):
  diskcache_put("t", "warm", 1)
  conn = sqlite3.connect(db)   # older schemas' tables: every process's first eviction drops them, several at once
  for t in ("entries_v2", "program_abc_v1"): conn.execute(f'CREATE TABLE "{t}" (k TEXT, v BLOB)')
  conn.commit()
  conn.close()
  ctx = mp.get_context("fork")
  procs = [ctx.Process(target=_role, args=(role, db, STRESS_S, n)) for n, role in enumerate(["churn", "churn", "switcher", "forker"])]
  for p in procs: p.start()
  for p in procs: p.join(STRESS_S + 120)
  assert [p.exitcode for p in procs] == [0, 0, 0, 0]   # 1: a corruption warning, 3: a forked child failed, 4: a lock lost
  assert integrity(db) == [("ok",)] and not glob.glob(db + ".corrupt-*")
  conn = sqlite3.connect(db)
  try: assert [t for (t,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")] == [diskcache.TABLE]   # evictions ran
  finally: conn.close()
