"""The on-disk program cache (codegen/progcache.py): a warm process gets the same programs and results without codegen,
every input of a program is in its key, and a damaged or foreign row is a miss."""
import json, os, subprocess, sys
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, Device, Variable, diskcache
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes, AddrSpace
from tinygrad.helpers import Context
from tinygrad.codegen import progcache
from tinygrad.engine.realize import method_cache, get_runner

CORE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# kernels of several kinds: elementwise with odd sizes, reduces, a matmul, gates (pad), casts, a symbolic size
WORKLOAD = r"""
import json, sys
import numpy as np
import tinygrad.codegen
from tinygrad import Tensor, Variable, dtypes
if sys.argv[1] == "warm":   # every kernel must come from the cache: codegen is not reachable
  def refuse(*a, **k): raise AssertionError("codegen ran in the warm process")
  tinygrad.codegen.get_program = refuse
rng = np.random.default_rng(0)
a, b = rng.standard_normal((7, 13)).astype(np.float32), rng.standard_normal((13, 5)).astype(np.float32)
ta, tb = Tensor(a), Tensor(b)
outs = {"mm": (ta @ tb).relu(), "softmax": ta.softmax(-1), "pad": ta.pad(((1, 2), (0, 3)), value=-1.5).sum(0),
        "cast": (ta * 100).cast(dtypes.int32).max(1), "cumsum": ta.cumsum(1), "where": (ta > 0).where(ta, -0.0).exp2(),
        "arange": Tensor.arange(17).float().reshape(1, 17) * 0.5}
n = Variable("n", 1, 9).bind(4)
sym = Tensor(np.arange(9, dtype=np.float32))[:n] * 2
outs["sym"] = (sym.reshape(1, n) + 1).sum()
print(json.dumps({k: np.asarray(v.numpy()).tolist() for k, v in outs.items()}))
"""

def run(mode: str, env: dict) -> dict:
  r = subprocess.run([sys.executable, "-c", WORKLOAD, mode], capture_output=True, text=True, env=env, timeout=600)
  assert r.returncode == 0, r.stderr[-3000:]
  return json.loads(r.stdout.splitlines()[-1])

def test_warm_process_runs_without_codegen_and_matches_the_cold_one(tmp_path):
  env = {**os.environ, "CACHEDB": str(tmp_path / "c.db"), "PYTHONPATH": os.pathsep.join(sys.path)}
  cold = run("cold", env)
  warm = run("warm", env)
  assert warm == cold   # the same numbers, bit for bit (JSON of the float32 values)
  a = np.random.default_rng(0).standard_normal((7, 13)).astype(np.float32)
  np.testing.assert_allclose(cold["softmax"], np.exp(a) / np.exp(a).sum(-1, keepdims=True), rtol=1e-5)
  assert cold["sym"] == pytest.approx(float(sum(2 * i + 1 for i in range(4))))
  # CACHELEVEL=1 keeps only the compile cache: codegen runs again (and so the refusing stub fails the warm run)
  r = subprocess.run([sys.executable, "-c", WORKLOAD, "warm"], capture_output=True, text=True, env={**env, "CACHELEVEL": "1"}, timeout=600)
  assert r.returncode != 0 and "codegen ran" in r.stderr

@pytest.fixture
def db(tmp_path, monkeypatch):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "c.db"))
  diskcache.reset()
  method_cache.clear()
  yield
  method_cache.clear()
  diskcache.reset()

def _kernel(t: Tensor) -> UOp:
  from tinygrad.engine.schedule import create_schedule
  items = [it for it in create_schedule([t.uop])[0] if it.ast.op is Ops.SINK]
  assert len(items) == 1
  return items[0].ast

def test_a_hit_is_the_same_program_and_its_uops_are_rebuilt_on_demand(db):
  ast = _kernel(Tensor.arange(24).reshape(4, 6).float().sum(1))
  dev = Device[Device.DEFAULT]
  fresh = get_runner(dev.device, ast).p
  method_cache.clear()
  hit = get_runner(dev.device, ast).p
  assert isinstance(hit, progcache.CachedProgramSpec) and not isinstance(fresh, progcache.CachedProgramSpec)
  for f in ("name", "src", "global_size", "local_size", "vars", "globals", "outs", "ins", "estimates"): assert getattr(hit, f) == getattr(fresh, f), f
  assert [(u.op, u.dtype, u.arg) for u in hit.uops] == [(u.op, u.dtype, u.arg) for u in fresh.uops]

def test_every_input_of_a_program_is_in_its_key(db):
  dev = Device[Device.DEFAULT]
  ast = _kernel(Tensor.arange(8).float() * 3)
  key = progcache.program_key(ast, dev)
  assert key is not None and key == progcache.program_key(ast, dev)
  with Context(NOOPT=1): assert progcache.program_key(ast, dev) != key        # a flag that changes codegen
  with Context(DEBUG=1): assert progcache.program_key(ast, dev) == key        # one that changes only output
  # (named by their variables: TINYGRAD_DIST_TIMEOUT was listed as DIST_TIMEOUT, so a job's collective timeout missed every
  # program a job with another one had cached)
  from tinygrad.helpers import ContextVar
  for name in progcache._OUTPUT_ONLY: assert name in ContextVar._cache, f"{name} is no flag"
  with Context(TINYGRAD_DIST_TIMEOUT=7.0, WINO=1, FUSE_OPTIM=1, TRACK_MATCH_STATS=2): assert progcache.program_key(ast, dev) == key
  assert progcache.program_key(_kernel(Tensor.arange(8).float() * 4), dev) != key
  with Context(CACHELEVEL=1): assert progcache.program_key(ast, dev) is None
  old = dev.renderer.cache_programs
  try:
    dev.renderer.cache_programs = False
    assert progcache.program_key(ast, dev) is None
  finally: dev.renderer.cache_programs = old

def test_the_ast_encoding_keeps_apart_values_python_calls_equal():
  c = lambda v, dt: UOp.const(dt, v)
  digests = {progcache.ast_digest(UOp(Ops.SINK, src=(x,))) for x in
             (c(0.0, dtypes.float32), c(-0.0, dtypes.float32), c(1.0, dtypes.float32), c(1, dtypes.int32), c(True, dtypes.bool),
              c(1.0, dtypes.float16), c(float("nan"), dtypes.float32), c(float("inf"), dtypes.float32))}
  assert len(digests) == 8
  # a tuple and a list, a str and an int: different args, different keys
  u = lambda arg: UOp(Ops.SINK, arg=arg)
  assert len({progcache.ast_digest(u(a)) for a in ((1, 2), "12", 12, ("1", 2), None)}) == 5
  class Opaque: pass
  with pytest.raises(progcache.Uncacheable): progcache.ast_digest(u(Opaque()))

_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
                  st.sampled_from([Ops.ADD, Ops.RANGE, AddrSpace.GLOBAL, dtypes.float, dtypes.half.vec(4), dtypes.int.ptr(8)]))
_arg = st.recursive(_leaf, lambda c: st.one_of(st.tuples(c, c), st.lists(c, max_size=3), st.tuples(c)), max_leaves=8)

@settings(max_examples=300, deadline=None)
@given(_arg)
def test_the_direct_encoder_writes_what_json_writes(x):
  # _json writes node fields without the json module (a warm process encodes every node): the same text exactly, for
  # every kind of arg, and an int-only tuple's memo never answers for an equal tuple of other types (1 and True)
  want = json.dumps(progcache._enc(x), separators=(",", ":"))
  assert progcache._json(x) == want and progcache._json(x) == want   # (the second: from the memo where there is one)
  assert progcache._json((1, 2)) != progcache._json((True, 2)) and progcache._json(int(Ops.ADD)) != progcache._json(Ops.ADD)

def test_a_damaged_or_foreign_row_is_a_miss(db):
  from tinygrad.diskcache import diskcache_put
  ast = _kernel(Tensor.arange(10).float() + 1)
  key = progcache.program_key(ast, Device[Device.DEFAULT])
  good = progcache.encode(get_runner(Device.DEFAULT, ast).p)
  assert progcache.load(key, ast) is not None
  for bad in ({"name": 1}, [1, 2], {**good, "globals": [99]}, {**good, "global_size": [1, {"expr": [["EXP2", "float32", None, []]]}, 1]},
              {**good, "vars": [{"expr": [["CONST", "index", ["i", "3"], []]]}]}, {**good, "estimates": [0, 0]}, {**good, "outs": [True]}):
    diskcache_put("program", key, bad, **progcache._row(key))
    assert progcache.load(key, ast) is None, bad
  method_cache.clear()
  np.testing.assert_equal((Tensor.arange(10).float() + 1).numpy(), np.arange(10) + 1)   # recomputed and stored again
  assert progcache.load(key, ast) is not None

def test_symbolic_sizes_round_trip():
  n = Variable("n", 1, 30)
  for x in (7, n, n * 4 + 1, (n + 3) // 2, (n * 2) % 5):
    assert progcache._dec_size(json.loads(json.dumps(progcache._enc_size(x)))) is x
  with pytest.raises(progcache.Uncacheable): progcache._enc_size(UOp.const(dtypes.float32, 1.0).exp2())

def test_a_cached_python_program_is_read_as_literals_never_run():
  # the PYTHON device's program is its source: one from the cache is parsed, never evaluated
  from tinygrad.runtime.python import deserialize
  assert deserialize("0 CONST float32 () float('-inf')")[0][3] == float("-inf")
  for evil in ("__import__('os').system('true')", "().__class__.__base__.__subclasses__()", "[x for x in ()]"):
    with pytest.raises(ValueError): deserialize(f"0 CONST float32 () {evil}")

# ---- versions and devices share the cache ----
def _kernels():
  return [_kernel(Tensor.arange(6).float() * 5), _kernel(Tensor.arange(12).reshape(3, 4).float().sum(1))]

def _as_version(tag, db_path, q):
  # a process of another code version: the code hash is what a different install or an edit would give
  import tinygrad.codegen
  progcache._code_hash = lambda *mods: f"{tag:0>64}"
  calls = []
  orig = tinygrad.codegen.get_program
  tinygrad.codegen.get_program = lambda *a, **k: calls.append(1) or orig(*a, **k)
  os.environ["CACHEDB"] = db_path
  diskcache.reset()
  method_cache.clear()
  try:
    for ast in _kernels(): get_runner(Device.DEFAULT, ast)
    q.put(len(calls))
  except BaseException as e: q.put(repr(e))

def test_two_code_versions_alternating_both_keep_their_programs(db):
  import multiprocessing as mp
  ctx = mp.get_context("fork")
  q = ctx.Queue()
  got = []
  for tag in ("a", "b", "a", "b"):   # each process stores its programs, then the other version's start-up does not drop them
    p = ctx.Process(target=_as_version, args=(tag, os.environ["CACHEDB"], q))
    p.start()
    got.append(q.get(timeout=120))
    p.join(30)
  assert got == [2, 2, 0, 0], got   # cold, cold, then both warm: no codegen at all

def test_cpu_then_python_then_cpu_in_one_process_hits_both(db):
  import warnings
  asts = _kernels()
  with warnings.catch_warnings():
    warnings.simplefilter("error", RuntimeWarning)   # a cache that switches itself off says so with a RuntimeWarning
    for dev in ("CPU", "PYTHON", "CPU"):
      for ast in asts: get_runner(dev, ast)
    method_cache.clear()
    for dev in ("CPU", "PYTHON"):
      for ast in asts: assert isinstance(get_runner(dev, ast).p, progcache.CachedProgramSpec), dev
  assert diskcache.cache_info()["broken"] is None
  a = Tensor.arange(12).reshape(3, 4).float()
  np.testing.assert_equal(a.to("PYTHON").sum(1).numpy(), np.arange(12).reshape(3, 4).sum(1))

@pytest.mark.parametrize("src", ["garbage", "0 CONST float32 (7,) 1.0", "0 NOSUCHOP float32 () 1"])
def test_a_tampered_python_program_row_is_a_miss(db, src):
  # the row's checksum is right (anyone who can write the file can recompute it): the program fails to load, so the kernel
  # is rendered again and the row replaced, instead of the user's program failing
  t = lambda: Tensor.arange(6, device="PYTHON").float() * 5
  ast = _kernel(t())
  key = progcache.program_key(ast, Device["PYTHON"])
  good = progcache.encode(get_runner("PYTHON", ast).p)
  from tinygrad.diskcache import diskcache_put
  diskcache_put("program", key, {**good, "src": src}, **progcache._row(key))
  method_cache.clear()
  np.testing.assert_equal(t().numpy(), np.arange(6) * 5)
  assert progcache.load(key, ast).src == good["src"]   # replaced by the program rendered again

def test_the_code_version_covers_the_packages_of_a_renderers_base_classes(tmp_path, monkeypatch):
  # a third party's renderer subclassing another package's: only the subclass's package was hashed, so an upgraded base
  # package (another prelude, another rule) kept giving the programs the old one rendered
  (tmp_path / "pc_base_pkg").mkdir()
  (tmp_path / "pc_sub_pkg").mkdir()
  (tmp_path / "pc_base_pkg" / "__init__.py").write_text("from tinygrad.renderer import Renderer\nclass Base(Renderer): pass\n")
  (tmp_path / "pc_sub_pkg" / "__init__.py").write_text("from pc_base_pkg import Base\nclass Sub(Base): pass\n")
  monkeypatch.syspath_prepend(str(tmp_path))
  try:
    import pc_sub_pkg
    old = progcache.code_version(pc_sub_pkg.Sub())
    (tmp_path / "pc_base_pkg" / "__init__.py").write_text("from tinygrad.renderer import Renderer\nclass Base(Renderer): pass  # v2\n")
    progcache._package_hash.cache_clear()   # (what a new process, after the upgrade, starts with)
    assert progcache.code_version(pc_sub_pkg.Sub()) != old
  finally:
    for m in ("pc_base_pkg", "pc_sub_pkg"): sys.modules.pop(m, None)
    progcache._package_hash.cache_clear()
