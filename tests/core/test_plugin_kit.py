"""The backend author's kit beyond the template (docs/plugins.md): which heuristics run for which abilities, the threads
contract (has_threads) end to end, the per-loop hook (an OpenMP pragma), vector_dtypes, and control-variable prefixes."""
import numpy as np
from tinygrad import Tensor
from tinygrad.codegen.kit import kernels, render
from tinygrad.codegen.opt import heuristic_opts, OptOps
from tinygrad.renderer.cstyle import CStyleLanguage
from tinygrad.uop.upat import graph_rewrite
from tinygrad.uop.symbolic import sym

class Loops(CStyleLanguage):
  """A plain C renderer: no launch grid, no threads, no vectors (what a new CPU-like backend starts as)."""
  has_local, global_max, local_max = False, None, None

def _matmul(n: int = 64):
  return graph_rewrite(kernels(Tensor.empty(n, n, device="PYTHON") @ Tensor.empty(n, n, device="PYTHON"))[0], sym)

def test_cpu_heuristics_run_without_threads_or_a_launch_grid():
  # they ran only for has_threads or has_local: a plain loop backend got a naive triple loop while the guide said
  # "the heuristics run by default"
  opts = heuristic_opts(_matmul(), Loops())
  assert {OptOps.UPCAST, OptOps.UNROLL} <= {o.op for o in opts}, opts
  assert sum(o.op is OptOps.UPCAST for o in opts) >= 2, f"no register blocking (two upcast axes): {opts}"
  assert heuristic_opts(_matmul(), Loops(cpu_heuristics=False)) == []

# ---- threads (has_threads) and the per-loop hook ----

import ctypes, os, shutil, subprocess, threading
import pytest
from tinygrad.codegen import get_program
from tinygrad.codegen.progcache import encode, decode
from tinygrad.engine.realize import takes_spec

CC = shutil.which("gcc") or shutil.which("cc")
needs_cc = pytest.mark.skipif(CC is None, reason="needs a C compiler: apt-get install gcc")

class Threaded(Loops):
  """has_threads and nothing else: no extra_args of its own, no split_start of its own."""
  has_threads = True
  code_for_op = {**Loops.code_for_op}

def _build(src: str, tmp_path, *flags: str) -> ctypes.CDLL:
  so = tmp_path / f"k{abs(hash(src))}.so"
  r = subprocess.run([CC, "-x", "c", "-", "-O1", "-shared", "-fPIC", "-fwrapv", *flags, "-o", str(so), "-lm"], input=src.encode(), capture_output=True)
  assert r.returncode == 0, r.stderr.decode() + src
  return ctypes.CDLL(str(so))

def _ptrs(*arrs: np.ndarray) -> list: return [ctypes.c_void_p(a.ctypes.data) for a in arrs]

@needs_cc
@pytest.mark.parametrize("threads", [1, 2, 3, 7])
def test_has_threads_alone_compiles_and_splits_the_work(tmp_path, threads):
  # has_threads used core_id/core_count without declaring them (only the CPU plugin's extra_args did): C that did not compile
  a, b = np.random.default_rng(0).random((24, 40), dtype=np.float32), np.random.default_rng(1).random((40, 20), dtype=np.float32)
  spec = render(Tensor.empty(24, 40, device="PYTHON") @ Tensor.empty(40, 20, device="PYTHON"), Threaded)
  assert "int core_id, int core_count" in spec.src and spec.thread_work > 0
  fxn = getattr(_build(spec.src, tmp_path), spec.name)
  out = np.zeros((24, 20), np.float32)
  # every thread runs its own share, concurrently, as docs/plugins.md "Threads" tells a runtime to
  ts = [threading.Thread(target=fxn, args=(*_ptrs(out, a, b), ctypes.c_int(i), ctypes.c_int(threads))) for i in range(threads)]
  for t in ts: t.start()
  for t in ts: t.join()
  np.testing.assert_allclose(out, a @ b, rtol=1e-5)

def test_thread_work_is_zero_when_the_kernel_does_not_split():
  whole = render(Tensor.empty(4096, device="PYTHON").sum(), Threaded, opts=[])   # a full reduce: no loop over outputs
  rows = render(Tensor.empty(64, 64, device="PYTHON").sum(1), Threaded, opts=[])
  assert whole.thread_work == 0 and rows.thread_work >= 64 * 64
  assert render(Tensor.empty(64, 64, device="PYTHON").sum(1), Loops, opts=[]).thread_work == 0   # no threads: nothing to split
  # the program cache keeps it: a warm process's runtime gets the same value
  assert decode(encode(rows), rows.ast).thread_work == rows.thread_work

def test_runtime_with_a_spec_parameter_gets_the_program_spec():
  class Old:
    def __init__(self, name, lib): pass
  class New:
    def __init__(self, name, lib, spec=None): pass
  assert not takes_spec(Old) and takes_spec(New) and takes_spec(lambda name, lib, spec: None)
  import functools
  assert takes_spec(functools.partial(lambda dev, name, lib, spec=None: None, "dev"))

class OpenMP(Loops):
  """The per-loop hook: OpenMP parallelizes the loop the walk marks parallel (the one threads would split), on 4 threads,
  each with its own accumulators (declared before the loop: shared, they race)."""
  def render_loop(self, loop):
    priv = f" private({', '.join(loop.private)})" if loop.private else ""
    return ([f"#pragma omp parallel for num_threads(4){priv}"] if loop.parallel else []) + super().render_loop(loop)

def test_render_loop_hook_puts_a_pragma_before_the_parallel_loop():
  src = render(Tensor.empty(64, 64, device="PYTHON") @ Tensor.empty(64, 64, device="PYTHON"), OpenMP).src
  lines = [l.strip() for l in src.splitlines()]
  at = next(i for i, l in enumerate(lines) if l.startswith("#pragma omp parallel for"))
  assert sum(l.startswith("#pragma") for l in lines) == 1 and lines[at + 1].startswith("for (") and src.count("for (") >= 3
  assert "private(acc0, " in lines[at], lines[at]   # the register tile's accumulators, declared at the top
  assert not any(l.startswith("for (") for l in lines[:at]), "the pragma is not on the outermost loop"
  assert "#pragma" not in render(Tensor.empty(4096, device="PYTHON").sum(), OpenMP).src   # a full reduce: no parallel loop

def _has_openmp() -> bool:
  if CC is None: return False
  return subprocess.run([CC, "-x", "c", "-", "-fopenmp", "-shared", "-fPIC", "-o", os.devnull], input=b"int f(void){return 0;}",
                        capture_output=True).returncode == 0

@pytest.mark.skipif(not _has_openmp(), reason="needs a C compiler with OpenMP: apt-get install gcc (libgomp)")
def test_openmp_kernel_from_the_hook_computes_the_matmul(tmp_path):
  # big enough that 4 threads sharing the accumulators get a wrong result in most runs
  a, b = np.random.default_rng(2).random((128, 96), dtype=np.float32), np.random.default_rng(3).random((96, 80), dtype=np.float32)
  spec = render(Tensor.empty(128, 96, device="PYTHON") @ Tensor.empty(96, 80, device="PYTHON"), OpenMP)
  fxn = getattr(_build(spec.src, tmp_path, "-fopenmp"), spec.name)
  for _ in range(24):
    out = np.zeros((128, 80), np.float32)
    fxn(*_ptrs(out, a, b))
    np.testing.assert_allclose(out, a @ b, rtol=1e-5)

def test_string_rewrite_rule_for_a_loop_is_an_error_not_ignored():
  from tinygrad.uop import Ops
  from tinygrad.uop.upat import UPat, PatternMatcher
  from tinygrad.renderer.cstyle import base_rewrite
  with pytest.raises(TypeError, match="render_loop"):
    class Pragma(Loops):   # noqa: F841  (the class statement is what raises)
      string_rewrite = PatternMatcher([(UPat(Ops.RANGE, name="x"), lambda ctx, x: "#pragma omp parallel for")]) + base_rewrite

# ---- vectors and control variables ----

def test_empty_vector_dtypes_means_no_vectors():
  from tinygrad.uop import Ops
  from tinygrad.dtype import dtypes
  from tinygrad.renderer import Renderer
  class Vec(Loops):
    vector_bytes, vector_ops = 16, frozenset({Ops.ADD, Ops.MUL})
  t = Tensor.empty(64, device="PYTHON") + Tensor.empty(64, device="PYTHON")
  assert "float4" not in render(t, Vec, opts=[("UPCAST", 0, 4)]).src
  assert "float4" in render(t, Vec(vector_dtypes=frozenset({dtypes.float32})), opts=[("UPCAST", 0, 4)]).src
  assert "empty (the default): none" in _attr_doc(Renderer, "vector_dtypes")   # the docs said "empty: every dtype"

def _attr_doc(cls, name: str) -> str:
  import ast, inspect
  body = next(n for n in ast.parse(inspect.getsource(cls)).body if isinstance(n, ast.ClassDef)).body
  i = next(i for i, n in enumerate(body) if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", None) == name)
  return body[i + 1].value.value   # type: ignore[attr-defined]

def test_compiler_set_prefix_names_the_control_variables(monkeypatch):
  from tinygrad.device import CompilerSet, CompilerPair, select_compiler
  cs = CompilerSet([CompilerPair(Loops, name="C"), CompilerPair(Threaded, name="T", ctrl_var="MY_OWN")], prefix="TG_OMP")
  assert cs.ctrl_var == "TG_OMP_CC" and [p.ctrl_var for p in cs.cset] == ["TG_OMP_C", "MY_OWN"]
  monkeypatch.setenv("OMP_CC", "T")      # OpenMP's namespace: not this device's
  assert select_compiler("OMP", cs.cset, cs.ctrl_var)[0].name == "C"
  monkeypatch.setenv("TG_OMP_CC", "T")
  assert select_compiler("OMP", cs.cset, cs.ctrl_var)[0].name == "T"
  monkeypatch.delenv("TG_OMP_CC")
  monkeypatch.setenv("TG_OMP_C", "0")
  assert select_compiler("OMP", cs.cset, cs.ctrl_var)[0].name == "T"
