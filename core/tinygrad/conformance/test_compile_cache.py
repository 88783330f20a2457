"""The compile cache: Compiler.compile_cached compiles a source once per (cache key, compiler version), never caches failures."""
from __future__ import annotations
import pytest
from tinygrad import Tensor
from tinygrad.device import Device, CompileError
from tinygrad.helpers import Context

def kernel_sources(device: str, n: int = 2) -> list[str]:
  """Rendered sources of `n` different small kernels for the device (scheduled, not run)."""
  from tinygrad.codegen import get_program
  ren = Device[device].renderer
  out = []
  for i in range(n):
    x = Tensor.ones(8 + i, device=device) * (i + 2)
    ast = x.schedule()[-1].ast
    comp, ren.compiler = ren.compiler, None   # render only: compiling here is what the tests count
    try: out.append(get_program(ast, ren).src)
    finally: ren.compiler = comp
  return out

class TestCompileCache:
  capability = "compile cache"
  @pytest.fixture
  def compiler(self, device, tmp_path, monkeypatch):
    comp = Device[device].compiler
    if comp is None: pytest.skip(f"{device}'s renderer output is its binary (no compiler)")
    if comp.cachekey is None: pytest.skip(f"{type(comp).__name__} disables the compile cache (cachekey=None)")
    from tinygrad import diskcache
    monkeypatch.setenv("CACHEDB", str(tmp_path / "cache.db"))
    diskcache.reset()
    calls: list[str] = []
    orig = comp.compile
    def counted(src):
      calls.append(src)
      return orig(src)
    monkeypatch.setattr(comp, "compile", counted)
    comp.calls = calls
    with Context(CACHELEVEL=2): yield comp
    del comp.calls
    diskcache.reset()
  def test_second_compile_is_a_cache_hit(self, device, compiler):
    s1, s2 = kernel_sources(device)
    lib = compiler.compile_cached(s1)
    assert isinstance(lib, bytes) and lib, f"{type(compiler).__name__}.compile returned {type(lib).__name__}"
    assert compiler.compile_cached(s1) == lib
    assert len(compiler.calls) == 1, f"the same source was compiled {len(compiler.calls)} times"
    compiler.compile_cached(s2)
    assert len(compiler.calls) == 2, "a different source was served from the cache"
  def test_version_is_part_of_the_key(self, device, compiler, monkeypatch):
    (s1,) = kernel_sources(device, 1)
    compiler.compile_cached(s1)
    monkeypatch.setattr(compiler, "version", lambda: "a different compiler release")
    compiler.compile_cached(s1)
    assert len(compiler.calls) == 2, "a new compiler version reused a binary of the old one"
  def test_failure_raises_compile_error_and_is_not_cached(self, device, compiler):
    bad = "this is not a kernel }{"
    for _ in range(2):
      with pytest.raises(CompileError) as ei: compiler.compile_cached(bad)
      assert ei.value.src == bad or bad in str(ei.value), "CompileError does not carry the source"
    assert len(compiler.calls) == 2, "a failed compile was cached"
  def test_cachelevel_0_always_compiles(self, device, compiler):
    (s1,) = kernel_sources(device, 1)
    with Context(CACHELEVEL=0):
      compiler.compile_cached(s1)
      compiler.compile_cached(s1)
    assert len(compiler.calls) == 2, "CACHELEVEL=0 still served a cached binary"
