"""The CPU's native graph (tinygrad_cpu/graph.py) on each compiler pair: a capture replays as one native call, bit-identical
to kernel-by-kernel replays, with threaded kernels going through the pool; its source holds no addresses (a second
capture of the same function is a compile-cache hit); the pool serves two threads at once and a fork child."""
import shutil, threading
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Variable, Device
from tinygrad.helpers import Context

PAIRS = ["LLVM", "CLANG", "GCC"]

def _device(pair: str) -> str:
  if pair == "LLVM":
    pytest.importorskip("llvmlite", reason="llvmlite is not installed (pip install llvmlite)")
  elif shutil.which(pair.lower()) is None: pytest.skip(f"{pair.lower()} not found on PATH (apt-get install {pair.lower()})")
  return f"CPU:{pair}"

def _step(big, a, n):
  # a kernel with enough work for several threads, small ones, and a bound variable
  s = (big * 2 + 1).sqrt().sum(1)
  return (s[:n] * a[:n]).sum() + 1, (a[:n] - s[:n]).max(), big.max(0) * 3

def _replays(dev: str, jit: int, calls: int = 5):
  rng = np.random.default_rng(1)
  big = np.abs(rng.standard_normal((1024, 1024))).astype(np.float32)
  with Context(JIT=jit):
    f, outs = TinyJit(_step), []
    for i in range(calls):
      a = rng.standard_normal(512).astype(np.float32)
      n = 1 + (i * 97) % 512
      r = f(Tensor(big + i, device=dev), Tensor(a, device=dev), Variable("n", 1, 512).bind(n))
      s = np.sqrt((big + i) * 2 + 1).sum(1)
      outs.append(([x.numpy() for x in r], ((s[:n] * a[:n]).sum() + 1, (a[:n] - s[:n]).max(), (big + i).max(0) * 3)))
  return outs, f

@pytest.mark.parametrize("pair", PAIRS)
def test_native_graph_is_bit_identical_to_kernel_by_kernel(pair):
  from tinygrad_cpu.graph import CPUGraph
  dev = _device(pair)
  graph, f = _replays(dev, 1)
  runners = [r for _, _, r in f.replay.items if r is not None]
  assert runners and all(type(r) is CPUGraph for r in runners)
  assert any(c.prg.threads > 1 for r in runners for c in r.calls), "no kernel of the capture runs on several threads"
  each, _ = _replays(dev, 2)
  for i, ((g, want), (e, _)) in enumerate(zip(graph, each)):
    for j, (x, y, w) in enumerate(zip(g, e, want)):
      assert x.tobytes() == y.tobytes(), f"call {i} output {j}: graph {x} != kernel by kernel {y}"
      np.testing.assert_allclose(x, w, rtol=1e-4)

@pytest.mark.parametrize("pair", ["LLVM", "CLANG"])
def test_same_capture_compiles_to_the_same_source(pair, monkeypatch):
  dev = _device(pair)
  _replays(dev, 1, calls=1)   # builds the one-kernel graph the threaded kernel runs through outside a capture (once a process)
  sources: list[str] = []
  comp = Device[dev].compiler
  orig = type(comp).compile_cached
  monkeypatch.setattr(type(comp), "compile_cached", lambda self, src: (sources.append(src), orig(self, src))[1])
  _replays(dev, 1, calls=3)
  _replays(dev, 1, calls=3)
  graphs = [s for s in sources if "tinygrad_graph" in s]
  assert len(graphs) == 2 and graphs[0] == graphs[1]
  assert "0x" not in graphs[0]   # addresses are data, written into the argument arrays

@pytest.mark.parametrize("pair", ["LLVM", "CLANG"])
def test_pool_serves_two_threads_at_once(pair):
  # two threads' split kernels meet in the one pool: whichever comes second runs its chunks itself
  from tinygrad_cpu.runtime import CPUProgram
  from _cpu_kernels import add_kernel, elementwise
  from tinygrad.dtype import dtypes
  dev = Device[_device(pair)]
  n = 1 << 16
  def load(uops):
    prg = CPUProgram("k", dev.compiler.compile(dev.renderer.render(uops, "k")))
    prg.threads = 3
    return prg
  # different signatures: they do not share a one-kernel graph (and its lock), so both reach the pool at once
  add, twice = load(add_kernel(n)), load(elementwise(lambda a: a * 2, [dtypes.float32], dtypes.float32, n))
  errors: list = []
  def work(k: int):
    try:
      for i in range(300):
        a, b, o = np.full(n, k, np.float32), np.arange(n, dtype=np.float32) + i, np.zeros(n, np.float32)
        if k == 1: add(o.ctypes.data, a.ctypes.data, b.ctypes.data)
        else: twice(o.ctypes.data, b.ctypes.data)
        np.testing.assert_array_equal(o, a + b if k == 1 else b * 2)
    except Exception as e: errors.append(e)
  ts = [threading.Thread(target=work, args=(k,)) for k in (1, 2)]
  for t in ts: t.start()
  for t in ts: t.join(120)
  assert not errors, errors

def test_graph_source_calls_every_kernel_in_order():
  from tinygrad_cpu.graph import Call, render_c, render_llvm
  calls = [Call(0, (0, 1), (), 1), Call(1, (2, 0), (0, 3), 4), Call(2, (1,), (1,), 1)]
  c = render_c("g", calls)
  assert c.index("f[0])(a[0], a[1], 0, 1)") < c.index("tg_t1, &c, 4") < c.index("f[2])(a[1], v[1], 0, 1)")
  assert "c->f[1])(c->a[2], c->a[0], c->v[0], c->v[3], core, n)" in c
  ll = render_llvm("g", calls)
  assert ll.index("call void %f0(ptr %a0_0, ptr %a0_1, i32 0, i32 1)") < ll.index("@tg_t1, ptr %c, i32 4") < ll.index("call void %f2(")

def test_pool_workers_start_on_other_cores_and_stay_unpinned(monkeypatch):
  # each worker is moved once to a core other than its creator's (a new thread otherwise starts beside its creator when
  # the other cores are busy, and the first split kernels ran at one core's speed), then may run on every allowed core
  import os
  from tinygrad_cpu import graph
  if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2: pytest.skip("needs sched_setaffinity and 2 cores")
  here, allowed = 0, sorted(os.sched_getaffinity(0))
  monkeypatch.setattr(graph.ctypes, "CDLL", lambda _: type("libc", (), {"sched_getcpu": staticmethod(lambda: allowed[here])}))
  cores = graph._other_cores(3)
  assert allowed[here] not in cores and all(c in allowed for c in cores)
  seen: list = []
  def worker(*args): seen.append((os.sched_getaffinity(0), args))
  t = threading.Thread(target=graph._placed, args=(worker, cores[0], 7, 8))
  t.start(); t.join()
  assert seen == [(set(allowed), (7, 8))]   # (moved, then allowed everywhere again: not pinned)
