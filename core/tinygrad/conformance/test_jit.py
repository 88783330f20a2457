"""TinyJit on the device: captured functions replay through the device's graph runner (`Compiled.graph`, or the core's
default) with the same bits as a kernel-by-kernel replay (JIT=2) and numpy's values, with new input buffers every call,
bound Variables that change between replays, state updated in place, and kernels big enough to use several threads."""
from __future__ import annotations
import os
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Variable
from tinygrad.helpers import Context

SLOW = {"PYTHON"} | {d.strip().upper() for d in os.environ.get("TINYGRAD_CONFORMANCE_SLOW", "").split(",") if d.strip()}

def _data(seed: int, *shapes: tuple[int, ...]) -> list[np.ndarray]:
  rng = np.random.default_rng(seed)
  return [rng.standard_normal(s).astype(np.float32) for s in shapes]

def _replays(make, device: str, calls: list[tuple], jit: int) -> tuple[list[list[np.ndarray]], TinyJit]:
  """Capture `make()`'s function under JIT=`jit` and call it once per argument tuple (numpy arrays become new tensors, so
  every replay gets inputs at new addresses); each call's outputs as numpy arrays."""
  with Context(JIT=jit):
    fn = TinyJit(make())
    out = []
    for args in calls:
      ts = [Tensor(a, device=device).realize() if isinstance(a, np.ndarray) else a for a in args]
      r = fn(*ts)
      out.append([x.numpy() for x in (r if isinstance(r, (tuple, list)) else (r,))])
  return out, fn

def _graphed(fn: TinyJit) -> int:
  """Kernels the capture replays through graph runners."""
  assert fn.replay is not None
  return sum(end - start for start, end, runner in fn.replay.items if runner is not None)

def check(make, device: str, calls: list[tuple], want) -> None:
  graph, gfn = _replays(make, device, calls, 1)
  each, efn = _replays(make, device, calls, 2)
  assert _graphed(gfn) >= 2, f"nothing of the capture replays through {device}'s graph runner: {gfn.replay.items}"
  assert _graphed(efn) == 0, "JIT=2 must replay kernel by kernel"
  for i, (g, e, args) in enumerate(zip(graph, each, calls)):
    for j, (x, y) in enumerate(zip(g, e)):
      assert x.tobytes() == y.tobytes(), f"call {i} output {j}: the graph replay differs from the kernel-by-kernel one\n{x}\n{y}"
    for j, (x, w) in enumerate(zip(g, want(*args) if want else g)):
      np.testing.assert_allclose(x, w, rtol=1e-4, atol=1e-5, err_msg=f"call {i} output {j} against numpy")

class TestJitGraph:
  capability = "TinyJit replay through the graph runner"
  def test_chain_of_kernels_new_inputs_each_call(self, device):
    def make():
      def f(a, b): return ((a @ b).relu().sum(1) + 1).exp2(), (a * 2).max(0)
      return f
    calls = [tuple(_data(i, (6, 5), (5, 7))) for i in range(5)]
    check(make, device, calls, lambda a, b: (np.exp2(np.maximum(a @ b, 0).sum(1) + 1), (a * 2).max(0)))

  def test_same_tensor_twice_and_a_constant_input(self, device):
    def make():
      def f(a, b): return (a * a.sum() + b).softmax(-1), (b - a).abs().sum()
      return f
    calls = [tuple(_data(10 + i, (4, 9), (4, 9))) for i in range(4)]
    def want(a, b):
      x = a * a.sum() + b
      e = np.exp(x - x.max(-1, keepdims=True))
      return e / e.sum(-1, keepdims=True), np.abs(b - a).sum()
    check(make, device, calls, want)

  def test_bound_variable_changes_between_replays(self, device):
    def make():
      def f(x, n): return (x[:n] * 3).sum(0) + 1, x[:n].max()
      return f
    xs = _data(20, (9, 4))[0]
    calls = [(xs + i, Variable("n", 1, 9).bind(n)) for i, n in enumerate([3, 5, 2, 9, 1, 7])]
    def want(x, n):
      k = n.unbind()[1]
      return (x[:k] * 3).sum(0) + 1, x[:k].max()
    check(make, device, calls, want)

  def test_state_assigned_in_place(self, device):
    def make():
      acc = Tensor.zeros(2, 8, device=device).contiguous().realize()
      def f(x, p):
        acc[:, p:p+1].assign(x.reshape(2, 1) * 2 + acc[:, p:p+1])   # a KV-cache style write at a bound position
        return (acc * 1.5).sum(1)
      return f
    xs = _data(30, (8, 2))[0]
    calls = [(xs[i], Variable("pos", 0, 7).bind(i)) for i in range(8)]
    def want_all():
      acc, out = np.zeros((2, 8), np.float32), []
      for i in range(8):
        acc[:, i] += xs[i] * 2
        out.append([(acc * 1.5).sum(1)])
      return out
    expected = iter(want_all())
    check(make, device, calls, lambda *_: next(expected))

  def test_kernels_big_enough_for_threads(self, device):
    if device.split(":")[0] in SLOW: pytest.skip(f"{device} is too slow for 256k elements (TINYGRAD_CONFORMANCE_SLOW)")
    def make():
      def f(a, b): return ((a * b + 1).sqrt() * 0.5).sum(1), (a - b).max(1)
      return f
    calls = [tuple(np.abs(x) for x in _data(40 + i, (256, 1024), (256, 1024))) for i in range(3)]
    check(make, device, calls, lambda a, b: ((np.sqrt(a * b + 1) * 0.5).sum(1), (a - b).max(1)))
