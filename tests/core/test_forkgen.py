"""Codegen in a forked child (engine/forkgen.py): a schedule's new kernels rendered by two processes give the programs and
results of rendering them all here; a child that fails, hangs or dies costs a bounded wait, never a hang or a wrong result."""
import os, sys, time
import numpy as np
import pytest
from tinygrad import Tensor, Device, diskcache
from tinygrad.helpers import Context
from tinygrad.engine import forkgen, realize
from tinygrad.engine.realize import method_cache

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked codegen is Linux only")

@pytest.fixture
def db(tmp_path, monkeypatch):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "c.db"))   # an empty program cache: every kernel is new
  diskcache.reset()
  method_cache.clear()
  yield
  method_cache.clear()
  diskcache.reset()

def _model(seed: int) -> list[Tensor]:
  # eight distinct kernels in one schedule (a distinct constant per seed: new kernels every call)
  rng = np.random.default_rng(seed)
  a, b = Tensor(rng.standard_normal((16, 24), dtype=np.float32)), Tensor(rng.standard_normal((24, 16), dtype=np.float32))
  return [(a @ b + seed).relu(), (a * 2 + seed).sum(1), (a - seed).exp2().max(0), (a + seed).softmax(-1), (b * seed).cumsum(0),
          (b + seed).reshape(16, 24).sum(0), (a * seed).pad(((1, 1), (2, 0))), (b @ a - seed).mean(1)]

def _run(seed: int, n: int) -> tuple[list[np.ndarray], dict]:
  with Context(PARALLEL_CODEGEN=n):
    outs = _model(seed)
    Tensor.realize(*outs)
  srcs = {k[2]: r.p.src for k, r in method_cache.items()}   # by kernel (two kernels may share a name)
  return [o.numpy() for o in outs], srcs

@pytest.fixture
def takes(monkeypatch):
  """How many kernels the parent took from the child, and the children started."""
  rec = {"took": 0, "children": []}
  real_take, real_init = forkgen.ForkedCodegen.take, forkgen.ForkedCodegen.__init__
  def take(self, ast):
    got = real_take(self, ast)
    rec["took"] += got is not None
    return got
  def init(self, asts, dev):
    real_init(self, asts, dev)
    rec["children"].append(self.pid)
  monkeypatch.setattr(forkgen.ForkedCodegen, "take", take)
  monkeypatch.setattr(forkgen.ForkedCodegen, "__init__", init)
  import tinygrad.helpers
  monkeypatch.setattr(tinygrad.helpers, "CPUS", max(2, tinygrad.helpers.CPUS))
  return rec

def _reaped(pids: list[int]) -> bool:
  for pid in pids:
    try:
      os.waitpid(pid, os.WNOHANG)
      return False   # still our child: not reaped
    except ChildProcessError: pass
  return True

def test_forked_codegen_gives_the_same_programs_and_results(db, takes):
  want, want_src = _run(3, 0)
  assert not takes["children"]
  method_cache.clear()
  diskcache.reset()
  os.environ["CACHEDB"] = os.environ["CACHEDB"] + "2"   # (a second empty cache: every kernel rendered again)
  got, got_src = _run(3, 2)
  assert takes["children"] and takes["took"] >= 1, takes   # the child rendered some of them
  assert got_src == want_src   # byte-identical programs
  for w, g in zip(want, got): np.testing.assert_array_equal(w, g)
  assert _reaped(takes["children"])

def _child_side(monkeypatch, fn):
  # runs `fn` in place of codegen in the child only (the fork copies this patch; the parent keeps the real one)
  import tinygrad.codegen
  parent, real = os.getpid(), tinygrad.codegen.get_program
  def patched(*a, **k):
    if os.getpid() != parent: fn()
    return real(*a, **k)
  monkeypatch.setattr(tinygrad.codegen, "get_program", patched)

def test_a_failing_child_costs_nothing_but_its_kernels(db, takes, monkeypatch):
  want, want_src = _run(5, 0)
  method_cache.clear()
  os.environ["CACHEDB"] = os.environ["CACHEDB"] + "2"
  diskcache.reset()
  def boom(): raise RuntimeError("injected")
  _child_side(monkeypatch, boom)
  got, got_src = _run(5, 2)
  assert takes["children"] and takes["took"] == 0 and got_src == want_src
  for w, g in zip(want, got): np.testing.assert_array_equal(w, g)
  assert _reaped(takes["children"])

def test_a_hung_child_is_waited_for_a_bounded_time_then_killed(db, takes, monkeypatch):
  monkeypatch.setattr(forkgen, "CHILD_WAIT_S", 0.5)
  _child_side(monkeypatch, lambda: time.sleep(3600))
  st = time.perf_counter()
  got, _ = _run(7, 2)
  assert time.perf_counter() - st < 60 and takes["children"] and takes["took"] == 0
  for w, g in zip([o.numpy() for o in _model(7)], got): np.testing.assert_array_equal(w, g)
  assert _reaped(takes["children"])

def test_no_fork_for_few_kernels_or_when_off(db, takes):
  _run(9, 0)
  with Context(PARALLEL_CODEGEN=100): Tensor.realize(*_model(10))
  assert not takes["children"]

def test_both_sides_take_the_costliest_kernels_first():
  # a matmul's register tile multiplies its ops, a transcendental's decomposition more: rendered first, so the kernel
  # either side renders last (the other waits for it, its compile ends the call) is a small one
  mk = lambda t: t.schedule()[-1].ast
  a, b = Tensor.empty(64, 64), Tensor.empty(64, 64)
  asts = [mk(a + 1), mk(a @ b), mk((a @ b).exp2()), mk(a.sum(1))]
  costs = [forkgen.cost(x) for x in asts]
  assert costs[2] > costs[1] > costs[3] and costs[1] > costs[0], costs
  order = forkgen.order(asts)
  assert order[:2] == [2, 1], order
  # the parent claims the next kernel in that order that neither side has marked
  fc = object.__new__(forkgen.ForkedCodegen)
  fc.asts, fc.order, fc.marks = asts, order, bytearray(len(asts))
  fc.marks[2] = forkgen.CHILD
  assert fc.claim() is asts[1] and fc.marks[1] == forkgen.PARENT
  fc.marks[order[2]] = forkgen.CHILD
  assert fc.claim() is asts[order[3]] and fc.claim() is None
