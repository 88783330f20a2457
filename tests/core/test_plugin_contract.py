"""The contract checks every plugin is held to, the template (examples/tinygrad_template) included: the same file set, a
cheap hooks module, an allocator that frees, and a runtime that times waited launches; the template's runtime is run
directly (no install: the conformance run in test_author_kit.py covers the installed plugin)."""
import ast, sys
from pathlib import Path
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "examples" / "tinygrad_template" / "tinygrad_template"
PACKAGES = {p.name: p for p in sorted((ROOT / "plugins").glob("tinygrad_*/tinygrad_*")) if (p / "__init__.py").exists()} | {"tinygrad_template": TEMPLATE}

@pytest.fixture
def template(monkeypatch):
  monkeypatch.syspath_prepend(str(TEMPLATE.parent))
  yield
  for m in [m for m in sys.modules if m == "tinygrad_template" or m.startswith("tinygrad_template.")]: del sys.modules[m]

@pytest.mark.parametrize("pkg", list(PACKAGES))
def test_same_file_set(pkg):
  names = {f.name for f in PACKAGES[pkg].glob("*.py")}
  assert {"__init__.py", "plugin.py", "device.py", "renderer.py", "runtime.py"} <= names, f"{pkg}: {sorted(names)}"
  assert names & {"allocator.py", "memory.py"} and (names & {"compiler.py"} or pkg == "tinygrad_webgpu"), f"{pkg}: {sorted(names)}"

@pytest.mark.parametrize("pkg", list(PACKAGES))
def test_allocator_frees_its_memory(pkg):
  # docs/plugins.md: implement _alloc and _free (a MemoryManager frees arenas with _arena_free)
  f = next(PACKAGES[pkg] / n for n in ("allocator.py", "memory.py") if (PACKAGES[pkg] / n).exists())
  classes = [n for n in ast.parse(f.read_text()).body if isinstance(n, ast.ClassDef)]
  defs = {d.name for c in classes for d in c.body if isinstance(d, ast.FunctionDef)}
  assert "_alloc" in defs and "_free" in defs or "_arena_alloc" in defs and "_arena_free" in defs, f"{pkg}'s allocator defines {sorted(defs)}"

def test_template_runtime_times_waited_launches_and_splits_threads(template):
  from tinygrad import Tensor
  from tinygrad.codegen.kit import render
  from tinygrad_template.renderer import TemplateRenderer
  from tinygrad_template.compiler import TemplateCompiler, cc_path
  from tinygrad_template.runtime import TemplateProgram, CORES, WORK_PER_THREAD
  from tinygrad_template.allocator import TemplateAllocator
  if cc_path() is None: pytest.skip("the template needs a C compiler: apt-get install gcc")
  spec = render(Tensor.empty(96, 64, device="PYTHON") @ Tensor.empty(64, 80, device="PYTHON"), TemplateRenderer)
  lib = TemplateCompiler().compile(spec.src)
  alloc = TemplateAllocator("TEMPLATE")
  rng = np.random.default_rng(0)
  a, b = rng.random((96, 64), dtype=np.float32), rng.random((64, 80), dtype=np.float32)
  bufs = [alloc.alloc(n) for n in (96 * 80 * 4, a.nbytes, b.nbytes)]
  alloc.copyin(bufs[1], memoryview(a.tobytes()))
  alloc.copyin(bufs[2], memoryview(b.tobytes()))
  for threads in (1, 3):
    prg = TemplateProgram(spec.name, lib, spec)
    prg.threads = threads
    t = prg(*bufs, wait=True)
    assert isinstance(t, float) and t > 0 and prg.last_span is not None, "wait=True must return the run's seconds (DEBUG=2, BEAM)"
    out = np.empty((96, 80), np.float32)
    alloc.copyout(memoryview(out).cast("B"), bufs[0])
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)
    assert prg(*bufs) is None
  assert TemplateProgram(spec.name, lib, spec).threads == max(1, min(CORES, spec.thread_work // WORK_PER_THREAD))
  sizes, freed, real_free = (96 * 80 * 4, a.nbytes, b.nbytes), [], alloc._free
  alloc._free = lambda opaque, size, options: (freed.append(size), real_free(opaque, size, options))   # type: ignore[method-assign]
  for buf, n in zip(bufs, sizes): alloc.free(buf, n)
  alloc.free_cache()   # the LRU cache gives its buffers back through _free (the C library's free)
  assert sorted(freed) == sorted(sizes) and alloc.cache_bytes == 0 and alloc.mem_used == 0
