"""The contract checks every plugin is held to, the template (examples/tinygrad_template) included: the same file set, a
cheap hooks module, an allocator that frees, and a runtime that times waited launches; the template's runtime is run
directly (no install: the conformance run in test_author_kit.py covers the installed plugin)."""
import ast, os, subprocess, sys
from pathlib import Path
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "examples" / "tinygrad_template" / "tinygrad_template"
OMP = ROOT / "examples" / "tinygrad_omp" / "tinygrad_omp"
PACKAGES = {p.name: p for p in sorted((ROOT / "plugins").glob("tinygrad_*/tinygrad_*")) if (p / "__init__.py").exists()} | \
           {"tinygrad_template": TEMPLATE, "tinygrad_omp": OMP}

@pytest.fixture
def template(monkeypatch):
  monkeypatch.syspath_prepend(str(TEMPLATE.parent))
  yield
  for m in [m for m in sys.modules if m == "tinygrad_template" or m.startswith("tinygrad_template.")]: del sys.modules[m]

# The core modules a first-party plugin imports beyond tinygrad.plugin_api, each with why it is not part of the plugin API.
# Everything else a plugin needs is exported there; a third-party plugin (and the template, and tinygrad_cl) has no exception.
EXCEPTIONS = {
  # the tensor-core tables: shared with the PYTHON device's EMULATE=NV|AMD|METAL, which must emulate exactly the
  # instructions the plugin's renderer emits; a third party lists its own (TensorCore is in the plugin API)
  ("tinygrad_nv", "tinygrad.codegen.tc"): {"NV_TENSOR_CORES"}, ("tinygrad_amd", "tinygrad.codegen.tc"): {"AMD_WMMA_TENSOR_CORES", "AMD_MFMA_TENSOR_CORES"},
  ("tinygrad_metal", "tinygrad.codegen.tc"): {"METAL_TENSOR_CORES"},
  # NV_MOCK=1 / AMD_MOCK=1: the mock drivers run kernels on the core's PYTHON interpreter (test infrastructure of the two
  # GPU plugins, imported only when the mock is on), not something a backend builds on
  ("tinygrad_nv", "tinygrad.runtime.python"): {"PythonProgram", "serialize"}, ("tinygrad_amd", "tinygrad.runtime.python"): {"PythonProgram", "serialize"},
  # wgpu-native writes its validation errors to the C-level stderr: the core's capture of fd 2, used by the core's own
  # error paths too; a plugin needing one can copy its dozen lines
  ("tinygrad_webgpu", "tinygrad.helpers"): {"CapturedStderr"},
}

def core_imports(path: Path) -> list[tuple[str, set[str]]]:
  """Every `tinygrad...` module a file imports, with the names it takes (plugin-own modules excluded)."""
  out: list[tuple[str, set[str]]] = []
  for node in ast.walk(ast.parse(path.read_text(), str(path))):
    if isinstance(node, ast.Import): out += [(a.name, {"*"}) for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module: out.append((node.module, {a.name for a in node.names}))
  return [(m, n) for m, n in out if m == "tinygrad" or m.startswith("tinygrad.")]

@pytest.mark.parametrize("pkg", list(PACKAGES))
def test_package_imports_the_core_only_through_plugin_api(pkg):
  # package code only: a plugin's tests may import anything
  bad = {f"{f.name}: {m} {sorted(n - EXCEPTIONS.get((pkg, m), set()))}" for f in PACKAGES[pkg].glob("*.py") for m, n in core_imports(f)
         if m != "tinygrad.plugin_api" and n - EXCEPTIONS.get((pkg, m), set())}
  assert not bad, f"{pkg} must import the core through tinygrad.plugin_api (or justify an exception in EXCEPTIONS): {sorted(bad)}"

def test_import_check_catches_a_core_import(tmp_path):
  (tmp_path / "x.py").write_text("from tinygrad.plugin_api import Ops\nimport tinygrad.device\ndef f():\n  from tinygrad.renderer.cstyle import safe_div\n")
  assert core_imports(tmp_path / "x.py") == [("tinygrad.plugin_api", {"Ops"}), ("tinygrad.device", {"*"}), ("tinygrad.renderer.cstyle", {"safe_div"})]

def test_exceptions_are_still_needed():
  used = {(pkg, m) for pkg, d in PACKAGES.items() for f in d.glob("*.py") for m, _ in core_imports(f)}
  assert set(EXCEPTIONS) <= used, f"exceptions no plugin needs any more: {sorted(set(EXCEPTIONS) - used)}"

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

def test_hooks_modules_are_cheap_to_import():
  # discovery imports every plugin's hooks module: no device, renderer, toolchain or driver code may load with it
  code = ("import sys, importlib\nfor pkg in sys.argv[1:]:\n  importlib.import_module(pkg + '.plugin').tinygrad_devices()\n"
          "print(sorted(m for m in ('tinygrad.device', 'tinygrad.renderer.cstyle', 'numpy', 'llvmlite', 'wgpu', 'pyopencl') if m in sys.modules))")
  env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "core"), *(str(p.parent) for p in PACKAGES.values())])}
  r = subprocess.run([sys.executable, "-c", code, *PACKAGES], env=env, capture_output=True, text=True, timeout=120)
  assert r.returncode == 0 and r.stdout.strip() == "[]", r.stdout + r.stderr

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
