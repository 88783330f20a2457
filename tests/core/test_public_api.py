"""Public tinygrad's top-level API outside Tensor: import paths, helpers (GlobalCounters, fetch, tqdm, Timing, Profiling,
get_child ...), the TRAINING/JIT/DEV switches, dtype reprs and finfo, and DEBUG=2's per-kernel lines."""
import contextlib, functools, gzip, http.server, io, os, subprocess, sys, threading
import numpy as np
import pytest
from tinygrad import Tensor, Context, dtypes, TinyJit, GlobalCounters, UOp, Device, nn
from tinygrad.helpers import get_child, ansilen, colored, fetch, Timing, Profiling, tqdm, trange, TRAINING, JIT, WINO, DEV, OSX
from tinygrad.helpers import _TinyTqdm

def test_top_level_names():
  import tinygrad
  for n in ("UOp", "GlobalCounters", "Device", "TinyJit", "Context", "dtypes", "nn", "Tensor", "Variable", "fetch"): assert hasattr(tinygrad, n), n
  assert tinygrad.fetch is fetch
  from tinygrad.uop.ops import UOp as U2, Ops, UPat, PatternMatcher, graph_rewrite  # noqa: F401
  from tinygrad.uop.upat import UPat as U3, graph_rewrite as g3
  assert U2 is UOp and UPat is U3 and graph_rewrite is g3
  from tinygrad.engine.jit import TinyJit as J
  from tinygrad.device import Device as D
  from tinygrad.dtype import DTypeLike, DType, dtypes as dt2  # noqa: F401
  assert J is TinyJit and D is Device and dt2 is dtypes
  from tinygrad.helpers import prod, flatten, dedup, argfix, make_tuple, round_up, DEBUG  # noqa: F401
  assert isinstance(OSX, bool) and WINO.value in (0, 1) and JIT.value in (0, 1, 2) and isinstance(DEV.value, str)

def test_short_and_bitwise_xor_are_public_tinygrads_names():
  x = Tensor([5, -3, 300], dtype=dtypes.int32)
  assert x.short().dtype == dtypes.int16 and x.short().tolist() == [5, -3, 300]
  np.testing.assert_array_equal(x.bitwise_xor(6).numpy(), np.array([5, -3, 300]) ^ 6)
  np.testing.assert_array_equal(Tensor([True, False]).bitwise_xor(True).numpy(), [False, True])

def test_dtype_repr_is_python():
  for d in dtypes.all + (dtypes.void,): assert eval(repr(d), {"dtypes": dtypes}) is d
  assert repr(dtypes.bfloat16) == "dtypes.bfloat16" and repr(dtypes.int8) == "dtypes.char" and repr(dtypes.uint8) == "dtypes.uchar"
  assert eval(repr(dtypes.float.vec(4)), {"dtypes": dtypes}) == dtypes.float.vec(4)

def test_dtype_finfo_matches_numpy():
  for d, npd in ((dtypes.float16, np.float16), (dtypes.float32, np.float32), (dtypes.float64, np.float64)):
    fi = np.finfo(npd)
    assert dtypes.finfo(d) == (fi.nexp, fi.nmant)
  assert dtypes.finfo(dtypes.bfloat16) == (8, 7)
  with pytest.raises(TypeError, match="float dtype"): dtypes.finfo(dtypes.int32)

def test_training_switch_is_one_flag():
  assert Tensor.training is False
  with Context(TRAINING=1):
    assert Tensor.training is True
    x = Tensor.ones(1000)
    assert (nn.Dropout(0.5)(x).numpy() == 0).any()   # dropout is active under the context
  assert Tensor.training is False and (nn.Dropout(0.5)(Tensor.ones(100)).numpy() == 1).all()
  with Tensor.train(): assert TRAINING.value == 1
  Tensor.training = True
  try: assert TRAINING.value == 1
  finally: Tensor.training = False
  assert TRAINING.value == 0

def test_jit_off_runs_the_function_every_call():
  calls = []
  @TinyJit
  def f(x):
    calls.append(1)
    return (x * 2).realize()
  with Context(JIT=0):
    for i in range(4): np.testing.assert_allclose(f(Tensor([float(i)])).numpy(), [2.0 * i])
  assert len(calls) == 4

def test_global_counters_count_a_matmul():
  a, b = Tensor.rand(16, 32).realize(), Tensor.rand(32, 8).realize()
  GlobalCounters.reset()
  assert GlobalCounters.kernel_count == 0 and GlobalCounters.global_ops == 0
  (a @ b).realize()
  assert GlobalCounters.kernel_count == 1
  assert GlobalCounters.global_ops == 2 * 16 * 32 * 8           # one multiply and one add per MAC, address arithmetic excluded
  assert GlobalCounters.global_mem == (16 * 32 + 32 * 8 + 16 * 8) * 4
  # (counted by what deleting t gives back: a realize may also free garbage of earlier tests, so the rise alone is no measure)
  import gc
  t = Tensor.rand(1000).realize()
  gc.collect()
  held = GlobalCounters.mem_used
  del t
  gc.collect()
  assert held - GlobalCounters.mem_used >= 4000
  GlobalCounters.reset()
  assert (GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem, GlobalCounters.time_sum_s) == (0, 0, 0, 0)

def test_global_counters_count_elementwise_ops():
  x = Tensor.rand(4, 100).realize()
  GlobalCounters.reset()
  ((x + 1) * 3).realize()
  assert GlobalCounters.global_ops == 2 * 400 and GlobalCounters.kernel_count == 1

def test_realize_without_updating_the_stats():
  # public tinygrad's realize(do_update_stats=False) (its engine warms up with it): a TypeError here before
  x = Tensor.rand(4, 100).realize()
  GlobalCounters.reset()
  y = ((x + 1) * 3).realize(do_update_stats=False)
  assert (GlobalCounters.kernel_count, GlobalCounters.global_ops, GlobalCounters.global_mem) == (0, 0, 0)
  np.testing.assert_allclose(y.numpy(), (x.numpy() + 1) * 3, rtol=1e-6)
  ((x - 1) * 2).realize()
  assert GlobalCounters.kernel_count == 1 and GlobalCounters.global_ops == 2 * 400   # counting goes on after it

def test_debug2_prints_kernels_copies_and_jit_replays():
  code = ("from tinygrad import Tensor, TinyJit\nimport numpy as np\n"
          "a = Tensor(np.ones((64, 64), np.float32)).realize(); b = Tensor(np.ones((64, 64), np.float32)).realize()\n"
          "(a @ b).realize()\nf = TinyJit(lambda x: (x * 2).realize())\nfor _ in range(3): f(a)\n"
          "a.to('PYTHON').realize()\n")
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "DEBUG": "2"}, timeout=120)
  assert out.returncode == 0, out.stderr
  lines = [ln for ln in out.stdout.splitlines() if ln.startswith("***")]
  mm = next(ln for ln in lines if "r_64_64_64" in ln)
  for part in ("arg  3", "mem", "tm", "GFLOPS", "GB/s"): assert part in mm, mm
  assert any("(jit)" in ln for ln in lines) and any("copy" in ln for ln in lines)
  assert [int(ln.split()[2]) for ln in lines] == list(range(1, len(lines) + 1))   # the running kernel counter

def test_get_child_walks_attributes_dicts_and_lists():
  class M: pass
  m = M()
  m.layers = [M(), M()]  # type: ignore[attr-defined]
  m.layers[1].w = {"k": 7}  # type: ignore[attr-defined]
  assert get_child(m, "layers.1.w.k") == 7
  with pytest.raises(AttributeError): get_child(m, "nope")

def test_colored_and_ansilen():
  assert ansilen("\x1b[31mabc\x1b[0m") == 3 and ansilen("abc") == 3
  assert colored("x") == "x" and ansilen(colored("abc", "red")) == 3

def test_timing_and_profiling_print(capsys):
  with Timing("took "): sum(range(1000))
  with Timing("again ", on_exit=lambda ns: f" ({ns >= 0})"): pass
  def work(): return sum(i * i for i in range(20000))
  with Profiling(frac=1.0): work()
  out = capsys.readouterr().out
  assert out.startswith("took ") and " ms" in out and "work" in out and " ms (True)\n" in out

def test_builtin_tqdm_counts_and_iterates():
  buf = io.StringIO()
  with contextlib.redirect_stderr(buf):
    assert list(_TinyTqdm(range(5), desc="d")) == list(range(5))
    t = _TinyTqdm(total=10)
    t.update(4)
    t.close()
  assert t.n == 4 and "d: " in buf.getvalue() and "4/10" in buf.getvalue()
  assert len(list(trange(3, disable=True))) == 3 and len(list(tqdm(range(3), disable=True))) == 3

# ---- fetch against a local HTTP server ----
class _Handler(http.server.SimpleHTTPRequestHandler):
  hits = 0
  def log_message(self, *args): pass
  def do_GET(self):
    type(self).hits += 1
    super().do_GET()

@pytest.fixture
def http_dir(tmp_path):
  root = tmp_path / "www"
  root.mkdir()
  srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
  th = threading.Thread(target=srv.serve_forever, daemon=True)
  th.start()
  try: yield root, f"http://127.0.0.1:{srv.server_address[1]}"
  finally:
    srv.shutdown()
    srv.server_close()

def test_fetch_caches_and_gunzips(http_dir, tmp_path, monkeypatch):
  root, url = http_dir
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  data = os.urandom(100_000)
  (root / "blob.bin").write_bytes(data)
  (root / "blob.gz").write_bytes(gzip.compress(data))
  _Handler.hits = 0
  p = fetch(f"{url}/blob.bin", name="b.bin", subdir="sub")
  assert p.read_bytes() == data and p == tmp_path / "cache" / "tinygrad" / "downloads" / "sub" / "b.bin"
  assert fetch(f"{url}/blob.bin", name="b.bin", subdir="sub") == p and _Handler.hits == 1   # second call: from the cache
  assert fetch(f"{url}/blob.gz", gunzip=True).read_bytes() == data
  assert fetch(f"{url}/blob.bin", name="b.bin", subdir="sub", allow_caching=False).read_bytes() == data and _Handler.hits == 3
  assert not [f for f in p.parent.iterdir() if f.name.endswith(".tmp")]   # no temp files left behind

def test_fetch_failure_leaves_no_file(http_dir, tmp_path, monkeypatch):
  _, url = http_dir
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  import urllib.error
  with pytest.raises(urllib.error.HTTPError): fetch(f"{url}/missing", name="m.bin")
  d = tmp_path / "cache" / "tinygrad" / "downloads"
  assert not list(d.iterdir())

def test_dev_context_picks_the_default_device(monkeypatch):
  monkeypatch.delenv("DEV", raising=False)
  reason = Device.default_reason if hasattr(Device, "default_reason") else None
  try:
    with Context(DEV="PYTHON"): assert Device._choose_default() == "PYTHON"
  finally:
    if reason is not None: Device.default_reason = reason
