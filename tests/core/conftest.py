"""Fixtures shared by the core tests."""
import pytest
import tinygrad.codegen.opt as optmod
from tinygrad.codegen.opt import KernelOptError, apply_opts
from tinygrad.engine.realize import method_cache
from tinygrad.helpers import CACHELEVEL

@pytest.fixture
def forced(monkeypatch):
  """forced(opts): every kernel built from now on gets `opts` where they apply (the heuristics otherwise); returns the
  list of kernels they were applied to."""
  applied: list = []
  def use(opts):
    def pick(sink, ren):   # (optimize's hook: the actions, the kernel with the first n applied, and n)
      try: done = apply_opts(sink, opts, ren)
      except KernelOptError: return [], sink, 0
      applied.append(opts)
      return list(opts), done, len(opts)
    monkeypatch.setattr(optmod, "_heuristic", pick)
    monkeypatch.setattr(CACHELEVEL, "value", min(CACHELEVEL.value, 1))   # programs from the disk cache were not built with `opts`
    method_cache.clear()
    return applied
  yield use
  method_cache.clear()

@pytest.fixture
def count_calls(monkeypatch):
  """count_calls(obj, "name") -> a dict whose "n" counts the calls of obj.name while the test runs (each still runs)."""
  def patch(obj, name: str) -> dict:
    n, orig = {"n": 0}, getattr(obj, name)
    def counting(*args, **kwargs):
      n["n"] += 1
      return orig(*args, **kwargs)
    monkeypatch.setattr(obj, name, counting)
    return n
  return patch
