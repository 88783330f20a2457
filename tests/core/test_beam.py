"""BEAM=n (codegen/search.py): the searched kernel is correct, the result is cached on disk per (kernel, device, compiler),
and a second search of the same kernel is a cache hit (no candidate is compiled)."""
import os, subprocess, sys
import pytest

CORE = os.path.join(os.path.dirname(__file__), "..", "..", "core")
RUN = """
import numpy as np, time
import tinygrad.codegen.search as search
from tinygrad import Tensor
calls = []
orig = search._compile
search._compile = lambda *a: calls.append(1) or orig(*a)
a, b = np.random.default_rng(0).standard_normal((24, 40)).astype(np.float32), np.random.default_rng(1).standard_normal((40, 20)).astype(np.float32)
got = (Tensor(a) @ Tensor(b)).numpy()
assert np.allclose(got, a @ b, rtol=1e-4, atol=1e-4), "BEAM result is wrong"
print("compiled", len(calls))
"""

def _run(tmp_path, device: str) -> int:
  env = {**os.environ, "PYTHONPATH": CORE, "DEV": device, "BEAM": "2", "BEAM_TIMEOUT": "20", "CACHEDB": str(tmp_path / "cache.db")}
  r = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=env, timeout=300)
  if r.returncode != 0 and "unavailable" in r.stderr: pytest.skip(r.stderr.strip().splitlines()[-1])
  assert r.returncode == 0, r.stderr
  return int(r.stdout.split()[-1])

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
def test_beam_searches_then_hits_the_cache(tmp_path, device):
  assert _run(tmp_path, device) > 2     # searched: the start points and at least one step of moves were compiled
  assert _run(tmp_path, device) == 0    # second process: the disk cache answers, nothing is compiled

def _beam_kernel():
  from tinygrad import Tensor
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.uop import Ops
  t = Tensor.arange(64, device="PYTHON").reshape(8, 8).float().sum(1)
  return [it.ast for it in create_schedule([t.uop])[0] if it.ast.op is Ops.SINK][0]

@pytest.fixture
def beam_db(tmp_path, monkeypatch):
  from tinygrad import diskcache
  from tinygrad.engine.realize import method_cache
  monkeypatch.setenv("CACHEDB", str(tmp_path / "c.db"))
  diskcache.reset()
  method_cache.clear()
  yield
  method_cache.clear()
  diskcache.reset()

def test_a_cached_beam_result_that_no_longer_applies_is_a_miss(beam_db, monkeypatch):
  import numpy as np
  from tinygrad import Tensor, diskcache
  from tinygrad.helpers import Context
  orig = diskcache.diskcache_get
  # a row whose actions name an axis the kernel lacks (another version's optimizer, or an edit): KernelOptError if applied
  monkeypatch.setattr(diskcache, "diskcache_get", lambda t, k, *a, **kw: [["UPCAST", 7, 4]] if t == "beam_search" else orig(t, k, *a, **kw))
  with Context(BEAM=1, BEAM_TIMEOUT=5, BEAM_MAX_CANDIDATES=4):
    got = Tensor.arange(64, device="PYTHON").reshape(8, 8).float().sum(1).numpy()
  np.testing.assert_equal(got, np.arange(64).reshape(8, 8).sum(1))

def test_beam_results_are_keyed_by_code_version(beam_db, monkeypatch):
  import tinygrad.codegen.search as search
  from tinygrad.codegen import progcache
  from tinygrad.helpers import Context
  ast, calls = _beam_kernel(), []
  orig = search._compile
  monkeypatch.setattr(search, "_compile", lambda *a: calls.append(1) or orig(*a))
  with Context(BEAM_TIMEOUT=5, BEAM_MAX_CANDIDATES=4):
    first = search.beam_search(ast, "PYTHON", 1)
    searched = len(calls)
    assert searched > 0 and search.beam_search(ast, "PYTHON", 1) == first and len(calls) == searched   # a hit
    monkeypatch.setattr(progcache, "_code_hash", lambda *mods: "f" * 64)   # another version of the optimizer
    search.beam_search(ast, "PYTHON", 1)
  assert len(calls) > searched   # searched again: the other version's result is not taken

def test_candidates_are_timed_on_zeroed_buffers(beam_db, monkeypatch):
  # what the memory held before (denormals slow every FMA; garbage indices send a gather anywhere) must not time a candidate
  import tinygrad.codegen.search as search
  from tinygrad.device import Buffer
  from tinygrad.helpers import Context
  from tinygrad import Tensor, dtypes
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.uop import Ops
  t = Tensor.arange(64, device="CPU").reshape(8, 8).float().sum(1)
  ast, seen = [it.ast for it in create_schedule([t.uop])[0] if it.ast.op is Ops.SINK][0], []
  # memory full of 0xff bytes (NaN floats, -1 ints), freed: the search's allocations of these sizes reuse it (the CPU's
  # allocator keeps freed memory for the next allocation of its size)
  for n in (64, 8):
    b = Buffer("CPU", n, dtypes.float32).allocate()
    b.copyin(memoryview(bytearray(b"\xff" * b.nbytes)))
    del b
  orig = search._time_prog
  monkeypatch.setattr(search, "_time_prog", lambda r, bufs, *a, **k: seen.append([bytes(b.as_buffer()) for b in bufs]) or orig(r, bufs, *a, **k))
  with Context(BEAM_TIMEOUT=5, BEAM_MAX_CANDIDATES=2):
    search.beam_search(ast, "CPU", 1)
  assert seen and all(set(m) <= {0} for m in seen[0])

def test_beam_keeps_the_heuristics_tensor_core_and_keys_on_it(beam_db, monkeypatch):
  # the search compiled every candidate without the tensor core the heuristics use (its moves checked on the TC kernel):
  # a matmul under BEAM lost its WMMA. Its TC action now leads every candidate and the cache key, so USE_TC=0 searches anew
  import tinygrad.codegen.search as search
  from tinygrad import Tensor, Device, dtypes
  from tinygrad.codegen.opt import Opt, OptOps
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.helpers import Context
  from tinygrad.runtime.python import PythonRenderer
  from tinygrad.uop import Ops
  with Context(EMULATE="NV"): monkeypatch.setattr(Device["PYTHON"], "renderer", PythonRenderer())
  t = Tensor.empty(16, 16, dtype=dtypes.half, device="PYTHON") @ Tensor.empty(16, 16, dtype=dtypes.half, device="PYTHON")
  ast, calls = [it.ast for it in create_schedule([t.float().uop])[0] if it.ast.op is Ops.SINK][0], []
  orig = search._compile
  monkeypatch.setattr(search, "_compile", lambda ast, ren, opts, dev: calls.append(opts) or orig(ast, ren, opts, dev))
  with Context(BEAM_TIMEOUT=5, BEAM_MAX_CANDIDATES=4):
    first = search.beam_search(ast, "PYTHON", 1)
    assert first[:1] == [Opt(OptOps.TC, 0, 0)] and calls and all(c[:1] == first[:1] for c in calls)
    searched = len(calls)
    assert search.beam_search(ast, "PYTHON", 1) == first and len(calls) == searched   # a hit
    with Context(USE_TC=0): assert not any(o.op is OptOps.TC for o in search.beam_search(ast, "PYTHON", 1))
  assert len(calls) > searched
