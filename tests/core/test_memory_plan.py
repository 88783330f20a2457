"""One realize's memory plan (engine/schedule.py memory_plan): an intermediate takes the memory of one whose last reader
ran, of its own size or, where only compiled kernels use it and no live graph may read the intermediates afterwards, a
larger one; the values, and what an interrupted realize hands on (seen through a shrink of the larger buffer), stay right."""
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor
from tinygrad.engine import realize as engine
from tinygrad.engine.schedule import create_schedule, memory_plan
from tinygrad.helpers import Context

def _chain(x: Tensor, sizes: list[int]) -> list[Tensor]:
  # each step a kernel of its own over a prefix of the one before, of the size asked (a pad where it grows)
  outs, t = [], x
  for i, n in enumerate(sizes):
    t = (t[:n] if n <= t.shape[0] else t.pad(((0, n - t.shape[0]),), value=i)) * 0.5 + i
    t = t.contiguous()
    outs.append(t)
  return outs

def _chain_np(x: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
  outs, t = [], x
  for i, n in enumerate(sizes):
    t = (t[:n] if n <= t.shape[0] else np.pad(t, (0, n - t.shape[0]), constant_values=i)) * np.float32(0.5) + np.float32(i)
    outs.append(t)
  return outs

def test_a_smaller_intermediate_takes_a_larger_freed_buffer():
  x = Tensor(np.arange(4096, dtype=np.float32)).realize()
  d = _chain(x, [4096, 4096, 1000, 1000])[-1]
  schedule, results = create_schedule([d.uop])
  keep = {r.base for r in results.values()}
  # c (1000 floats) is made after b's kernel, a's only reader, ran: it goes in a's 4096, where the realize says so
  plan = memory_plan(schedule, keep, lambda: True)
  assert any(plan.get(ei.bufs[0]) is not None and plan[ei.bufs[0]].arg > ei.bufs[0].arg for ei in schedule), plan
  assert not any(plan[b].arg != b.arg for b in memory_plan(schedule, keep)), "a larger buffer without being asked"
  assert not any(plan[b].arg != b.arg for b in memory_plan(schedule, keep, lambda: False))
  with Context(NO_MEMORY_PLANNER=1): assert memory_plan(schedule, keep, lambda: True) == {}
  assert len(schedule) == 4
  np.testing.assert_array_equal(d.numpy(), _chain_np(np.arange(4096, dtype=np.float32), [4096, 4096, 1000, 1000])[-1])

_REALIZE_SPY = """
import numpy as np, sys
sys.path.insert(0, sys.argv[1])
from test_memory_plan import _chain, _chain_np
from tinygrad import Tensor
from tinygrad.engine import realize as engine
seen, orig = [], engine.memory_plan
def spy(schedule, keep, larger=None):
  plan = orig(schedule, keep, larger)
  seen.append({b: p for b, p in plan.items() if p.arg != b.arg})
  return plan
engine.memory_plan = spy
x, sizes = np.arange(4096, dtype=np.float32), [4096, 4096, 1000, 1000]
d = _chain(Tensor(x), sizes)[-1]   # (the intermediates' tensors gone: only the kernels read them)
np.testing.assert_array_equal(d.numpy(), _chain_np(x, sizes)[-1])
assert any(seen), "no larger buffer taken"
seen.clear()
outs = _chain(Tensor(x), sizes)   # (each intermediate a live tensor: its value is handed on, not overwritten)
np.testing.assert_array_equal(outs[-1].numpy(), _chain_np(x, sizes)[-1])
assert not any(seen), seen
for i in range(len(sizes)): np.testing.assert_array_equal(outs[i].numpy(), _chain_np(x, sizes)[i])
print("ok")
"""

def test_a_realize_reuses_larger_buffers_only_where_nothing_reads_its_intermediates():
  # (a process of its own: another test's live lazy tensors would make every realize here hand its intermediates on)
  import os, subprocess, sys
  r = subprocess.run([sys.executable, "-c", _REALIZE_SPY, os.path.dirname(os.path.abspath(__file__))], capture_output=True, text=True, timeout=300)
  assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr

@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=2, max_size=8), st.data())
def test_chains_of_sizes_compute_the_same_values_as_numpy(sizes, data):
  # the last value alone (its intermediates in larger buffers), then a chain whose every intermediate is read afterwards
  x = np.random.default_rng(len(sizes)).standard_normal(256).astype(np.float32)
  ref = _chain_np(x, sizes)
  np.testing.assert_allclose(_chain(Tensor(x), sizes)[-1].sum().numpy(), ref[-1].sum(), rtol=1e-5, atol=1e-4)
  outs = _chain(Tensor(x), sizes)
  np.testing.assert_allclose(outs[-1].sum().numpy(), ref[-1].sum(), rtol=1e-5, atol=1e-4)
  for i in data.draw(st.permutations(range(len(sizes)))):
    np.testing.assert_allclose(outs[i].numpy(), ref[i], rtol=1e-6, atol=1e-6, err_msg=f"intermediate {i} of {sizes}")

@pytest.mark.parametrize("k", [2, 3, 4, 5])
@pytest.mark.parametrize("keep_all", [False, True])
def test_an_interrupted_chain_keeps_right_values(monkeypatch, k, keep_all):
  # stopped after step k-1: what ran is handed on (an intermediate in a larger buffer as a shrink of it) and the rest runs
  # on the next realize
  x = np.arange(512, dtype=np.float32)
  sizes = [512, 512, 100, 100, 60, 60]
  outs = _chain(Tensor(x), sizes)
  if not keep_all: outs = outs[-1:]
  orig, seen = engine.ExecStep.run, {"n": 0}
  def run(self, *args, **kwargs):
    seen["n"] += 1
    if seen["n"] == k: raise RuntimeError("stopped")
    return orig(self, *args, **kwargs)
  monkeypatch.setattr(engine.ExecStep, "run", run)
  with pytest.raises(RuntimeError, match="stopped"): outs[-1].realize()
  monkeypatch.undo()
  ref = _chain_np(x, sizes)[-len(outs):]
  for i in reversed(range(len(outs))): np.testing.assert_array_equal(outs[i].numpy(), ref[i], err_msg=f"intermediate {i}")

def test_a_capture_plans_each_value_at_its_own_size():
  # the capture call's realize put c and d (3000 floats) in a's and b's freed 4096: planned at those sizes, the capture's
  # memory held 45 KB at e's step (c, d, e alive) instead of the values' 36
  from tinygrad import TinyJit
  from tinygrad.engine.jit import memory_report
  def f(x: Tensor) -> Tensor:
    a = (x * 2).contiguous()
    b = (a + 1).contiguous()
    c = (b[:3000] * 3).contiguous()
    d = (c + 1).contiguous()
    return (c * d + c).contiguous().sum().realize()
  j = TinyJit(f)
  for _ in range(3): out = j(Tensor.ones(4096).contiguous().realize())
  assert out.item() == 3000 * (9 * 10 + 9)
  head = memory_report(j).split("\n")[0]
  assert "planned intermediates 0.036 MB" in head, head
