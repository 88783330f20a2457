"""64-bit index arithmetic (codegen/index64.py): kernels past 2**31-1 elements index in int64, every other kernel keeps int32.
Before this, a 2**31+16-element kernel looped to a wrapped, negative bound and silently did nothing."""
import os, subprocess, sys
import numpy as np, pytest
from tinygrad import Tensor, dtypes, Device
from tinygrad.codegen import get_program
from tinygrad.codegen.index64 import narrow_indices, retype_indices, index_nodes
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp

CORE = os.path.join(os.path.dirname(__file__), "..", "..", "core")
BIG = 2**31 + 16

def _ranges(ast): return [u for u in ast.toposort() if u.op is Ops.RANGE]

def test_ordinary_kernels_keep_int32_indices():
  a, b = Tensor.empty(64, 33), Tensor.empty(33, 17)
  for t in ((a @ b).relu(), a.sum(1), a.pad(((1, 2), (0, 3))).flip(0), a.permute(1, 0).contiguous()):
    for ei in t.schedule():
      assert _ranges(ei.ast) and all(r.dtype == dtypes.int32 for r in _ranges(ei.ast))
      assert all(u.dtype != dtypes.int64 for u in index_nodes(ei.ast, dtypes.int64))

@pytest.mark.parametrize("dev", ["CPU", "CPU:CLANG", "PYTHON"])
def test_kernel_past_int32_indexes_in_int64(dev):
  if dev.startswith("CPU") and "CPU" not in Device.get_available_devices(): pytest.skip("no CPU plugin installed")
  ast = (Tensor.empty(BIG, dtype=dtypes.uint8) + 1).schedule()[-1].ast   # scheduled, never allocated
  assert all(r.dtype == dtypes.int64 for r in _ranges(ast))
  src = get_program(ast, Device[dev].renderer).src
  # the renderer loops to the true trip count (upcast by the heuristics: some divisor of it), never a wrapped negative bound
  assert "-2147483632" not in src and "2147483632" not in src.replace("-2147483632", "")
  if dev == "CPU": assert "alloca i64" in src and "alloca i32" not in src.split("@kernel_work")[-1].split("ridx0")[0][-200:]
  if dev == "CPU:CLANG": assert "for (long" in src

def test_index_offsets_past_int32_widen_even_with_short_loops():
  # a 3 x 2**30 buffer: every loop is short, the row stride times the row is not
  ast = (Tensor.empty(3, 2**30, dtype=dtypes.uint8) + 1).sum(axis=0).schedule()[-1].ast
  assert any(u.dtype == dtypes.int64 for u in index_nodes(ast, dtypes.int64))

def test_zero_trip_reduce_keeps_int32_indices():
  # the sum of a (2, 0) tensor loops 0 times, indexing with r // 0 (no bounds): that kept the kernel's indices int64, so the
  # gradient of x[idx, empty_mask] failed to compile on WEBGPU (WGSL without shader-int64 cannot index with an i64)
  t = (Tensor.empty(2, 1, dtype=dtypes.int32) + Tensor.empty(0, dtype=dtypes.int32)).reshape(0).sum()
  for ei in t.schedule():
    assert _ranges(ei.ast) and all(u.dtype != dtypes.int64 for u in index_nodes(narrow_indices(ei.ast), dtypes.int64))

def test_division_by_a_zero_size_keeps_int32_indices():
  # an empty (1, 4, 0) index divides the kernel's index math by 0 (x // 0 and x % 0, which the IR defines as 0): their
  # bounds were unknown, so this scatter_reduce kept int64 indices and WEBGPU rejected the kernel (`ridx3 < 2li`)
  x = UOp.variable("x", 0, 9)
  assert (x // 0)._min_max == (x % 0)._min_max == (0, 0)
  t = Tensor.empty(3, 5, 3, dtype=dtypes.uint8).scatter_reduce(0, Tensor.empty(1, 4, 0, dtype=dtypes.int32),
                                                               Tensor.empty(2, 5, 1, dtype=dtypes.uint8), "amax")
  for ei in t.schedule():
    assert _ranges(ei.ast) and all(u.dtype != dtypes.int64 for u in index_nodes(narrow_indices(ei.ast), dtypes.int64))

def test_retype_round_trip_and_data_uses_keep_their_type():
  # an arange-like kernel: the range is both an index and stored data; narrowing keeps the stored value int64
  t = Tensor.arange(10, dtype=dtypes.int64) * 3
  ast = t.schedule()[-1].ast
  wide = retype_indices(ast, index_nodes(ast, dtypes.int32), dtypes.int32, dtypes.int64)
  assert all(r.dtype == dtypes.int64 for r in _ranges(wide))
  store = next(u for u in wide.toposort() if u.op is Ops.STORE)
  assert store.src[1].dtype == dtypes.int64
  assert narrow_indices(wide) is not wide and all(r.dtype == dtypes.int32 for r in _ranges(narrow_indices(wide)))

RUN = """
import numpy as np
from tinygrad import Tensor, dtypes, Device
from tinygrad.uop import Ops
rng = np.random.default_rng(0)
a, b = rng.standard_normal((13, 7)).astype(np.float32), rng.standard_normal((7, 5)).astype(np.float32)
ta, tb = Tensor(a), Tensor(b)
checks = {
  "matmul": ((ta @ tb).relu(), np.maximum(a @ b, 0)),
  "sum": (ta.sum(0), a.sum(0)),
  "max": (ta.max(1), a.max(1)),
  "pad_flip": (ta.pad(((1, 2), (3, 0))).flip(1), np.pad(a, ((1, 2), (3, 0)))[:, ::-1]),
  "shrink_T": (ta[2:9, 1:6].T.contiguous(), a[2:9, 1:6].T),
  "arange": (Tensor.arange(11) * 2 + 1, np.arange(11) * 2 + 1),
  "cumsum": (ta.cumsum(1), np.cumsum(a, 1)),
  "softmax": (ta.softmax(1), np.exp(a - a.max(1, keepdims=True)) / np.exp(a - a.max(1, keepdims=True)).sum(1, keepdims=True)),
}
for name, (t, want) in checks.items():
  kernels = t.schedule()
  assert all(r.dtype == dtypes.int64 for k in kernels for r in k.ast.toposort() if r.op is Ops.RANGE), name
  np.testing.assert_allclose(t.numpy(), want, rtol=1e-4, atol=1e-5, err_msg=name)
print("ok", len(checks))
"""

@pytest.mark.parametrize("dev", ["PYTHON", "CPU", "CPU:CLANG"])
def test_forced_int64_indices_compute_like_numpy(dev):
  if dev.startswith("CPU") and "CPU" not in Device.get_available_devices(): pytest.skip("no CPU plugin installed")
  env = {**os.environ, "INDEX64": "1", "DEV": dev, "CACHELEVEL": "0"}
  r = subprocess.run([sys.executable, "-c", RUN], capture_output=True, text=True, env=env, timeout=600)
  assert r.returncode == 0 and "ok 8" in r.stdout, r.stdout + r.stderr

def _mem_available() -> int:
  try:
    with open("/proc/meminfo") as f: return next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemAvailable"))
  except (OSError, StopIteration): return 0

@pytest.mark.skipif(_mem_available() < 12 << 30, reason="needs 12 GiB of free memory for two 2 GiB buffers past int32 indexing")
def test_tensor_past_int32_elements_on_cpu():
  if "CPU" not in Device.get_available_devices(): pytest.skip("no CPU plugin installed")
  n = 2**31 + 64
  x = Tensor.ones(n, dtype=dtypes.uint8, device="CPU").contiguous().realize()
  y = (x * 2).realize()
  assert y[-5:].numpy().tolist() == [2] * 5 and y[:3].numpy().tolist() == [2] * 3
  assert int(x.cast(dtypes.int64).sum().item()) == n
