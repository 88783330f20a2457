"""Compile-and-run: hand-built kernels through each CPU compiler and the runtime, checked against numpy."""
import ctypes, math, platform, re, shutil, struct
import numpy as np
import pytest
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes, float_to_bf16_bits, truncate_int
from tinygrad.device import CompileError
from _cpu_kernels import (add_kernel, reduce_kernel, gated_kernel, gated_store_kernel, divmod_kernel, cast_kernel, var_kernel,
                          elementwise, glob, rng, end, linear)

def _pair(name):
  from tinygrad_cpu.renderer import ClangRenderer, LLVMRenderer
  from tinygrad_cpu import compiler
  if name == "LLVM":
    try: import llvmlite  # noqa: F401
    except ImportError: pytest.skip("llvmlite is not installed (pip install llvmlite)")
    return LLVMRenderer(), compiler.LLVMCompiler()
  tool = {"CLANG": "clang", "GCC": "gcc"}[name]
  if shutil.which(tool) is None: pytest.skip(f"{tool} not found on PATH (apt-get install {tool})")
  return ClangRenderer(), (compiler.ClangCompiler() if name == "CLANG" else compiler.GCCCompiler())

@pytest.fixture(params=["CLANG", "GCC", "LLVM"])
def cc(request): return _pair(request.param)

def run(cc, uops, *arrays, vals=(), threads=None):
  from tinygrad_cpu.runtime import CPUProgram
  renderer, compiler = cc
  src = renderer.render(uops, "test_kernel")
  prg = CPUProgram("test_kernel", compiler.compile(src))
  if threads is not None: prg.threads = threads
  prg(*[a.ctypes.data for a in arrays], vals=vals)
  return src

def test_add(cc):
  a, b, o = np.random.randn(16).astype(np.float32), np.random.randn(16).astype(np.float32), np.zeros(16, np.float32)
  run(cc, add_kernel(16), o, a, b)
  np.testing.assert_array_equal(o, a + b)

def test_reduce(cc):
  a, o = np.random.default_rng(0).standard_normal(32).astype(np.float32), np.zeros(4, np.float32)
  run(cc, reduce_kernel(4, 8), o, a)
  # sequential float32 sums vs numpy's pairwise ones: a few ulp of the terms, not of a result that cancels to ~0
  np.testing.assert_allclose(o, a.reshape(4, 8).sum(1), rtol=1e-6, atol=1e-6)

def test_gated_load_and_store(cc):
  a, o = np.random.randn(10).astype(np.float32) + 5, np.full(16, 7, np.float32)
  run(cc, gated_kernel(16, 10), o, a)
  np.testing.assert_array_equal(o, np.concatenate([a, np.zeros(6, np.float32)]))
  a, o = np.random.randn(16).astype(np.float32), np.full(16, 7, np.float32)
  run(cc, gated_store_kernel(16, 10), o, a)
  np.testing.assert_array_equal(o, np.concatenate([a[:10], np.full(6, 7, np.float32)]))

@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.int8, dtypes.int64])
def test_int_divmod_c_semantics(cc, dt):
  npdt = {dtypes.int32: np.int32, dtypes.int8: np.int8, dtypes.int64: np.int64}[dt]
  a = np.array([7, -7, 7, -7, 0, 5, -128, 100, -100, 3, 9, -9, 1, 127, -1, 6], dtype=npdt)
  b = np.array([2, 2, -2, -2, 3, 0, -1, 7, 7, -3, 0, 4, 1, -1, -1, 4], dtype=npdt)
  q, m = np.zeros(16, npdt), np.zeros(16, npdt)
  run(cc, divmod_kernel(16, dt), q, m, a, b)
  # C truncates toward zero; a zero divisor gives 0 (the PYTHON device's convention); INT_MIN/-1 wraps
  exp_q = [truncate_int(int(abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)), dt) if y else 0 for x, y in zip(a.tolist(), b.tolist())]
  exp_m = [x - int(abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)) * y if y else 0 for x, y in zip(a.tolist(), b.tolist())]
  assert q.tolist() == exp_q
  assert m.tolist() == exp_m

def test_int_wraparound(cc):
  for dt, npdt in [(dtypes.int32, np.int32), (dtypes.int8, np.int8), (dtypes.uint8, np.uint8), (dtypes.uint16, np.uint16), (dtypes.int16, np.int16)]:
    info = np.iinfo(npdt)
    a = np.array([info.max, info.min, info.max, 3, info.max // 2 + 1, 0, -1 if info.min < 0 else 1, info.max], dtype=npdt)
    b = np.array([1, -1 if info.min < 0 else 1, info.max, info.max, 2, info.min, info.min, 2], dtype=npdt)
    for fn, npfn in [(lambda x, y: x + y, np.add), (lambda x, y: x * y, np.multiply), (lambda x, y: x - y, np.subtract)]:
      o = np.zeros(8, npdt)
      src = run(cc, elementwise(fn, [dt, dt], dt, 8), o, a, b)
      with np.errstate(over="ignore"): np.testing.assert_array_equal(o, npfn(a, b), err_msg=f"{dt}\n{src}")
    # comparisons see the wrapped value: (a+b) < a for a = max, b = 1
    o = np.zeros(8, np.bool_)
    run(cc, elementwise(lambda x, y: (x + y) < x, [dt, dt], dtypes.bool, 8), o, a, b)
    with np.errstate(over="ignore"): np.testing.assert_array_equal(o, (a + b) < a, err_msg=str(dt))

def test_max_propagates_nan(cc):
  a = np.array([1, np.nan, 3, np.nan, -np.inf, 0, 2, 5], np.float32)
  b = np.array([2, 1, np.nan, np.nan, 1, -0.5, np.inf, -np.inf], np.float32)
  o = np.zeros(8, np.float32)
  run(cc, elementwise(lambda x, y: x.maximum(y), [dtypes.float32]*2, dtypes.float32, 8), o, a, b)
  np.testing.assert_array_equal(o, np.maximum(a, b))

def test_compare_nan(cc):
  a = np.array([1, np.nan, 3, np.nan, 1, 2, 0, -1], np.float32)
  b = np.array([2, 1, np.nan, np.nan, 1, 1, 0, 0], np.float32)
  for fn, npfn in [(lambda x, y: x < y, np.less), (lambda x, y: x.ne(y), np.not_equal), (lambda x, y: x.eq(y), np.equal)]:
    o = np.zeros(8, np.bool_)
    run(cc, elementwise(fn, [dtypes.float32]*2, dtypes.bool, 8), o, a, b)
    np.testing.assert_array_equal(o, npfn(a, b))

@pytest.mark.parametrize("src,dst", [(dtypes.float32, dtypes.int32), (dtypes.int32, dtypes.float32), (dtypes.float32, dtypes.bool),
                                     (dtypes.int32, dtypes.uint8), (dtypes.float32, dtypes.float64), (dtypes.float64, dtypes.float32),
                                     (dtypes.int8, dtypes.int64), (dtypes.uint8, dtypes.int32), (dtypes.bool, dtypes.float32),
                                     (dtypes.float32, dtypes.float16), (dtypes.float16, dtypes.float32)])
def test_cast(cc, src, dst):
  from tinygrad.dtype import to_numpy
  a = np.array([1.7, -1.7, 0, 255.9, -3, 300, 0.5, 2, 100.25, -100.75, 65504, 1e-5, 7, -7, 1, 0], dtype=np.float64)
  if dtypes.is_int(src): a = np.trunc(a).clip(np.iinfo(to_numpy(src)).min, np.iinfo(to_numpy(src)).max)
  x = a.astype(to_numpy(src))
  o = np.zeros(16, to_numpy(dst))
  run(cc, cast_kernel(16, src, dst), o, x)
  exp = x.astype(to_numpy(dst)) if not (dtypes.is_int(dst) and dt_range_bad(x, dst)) else None
  if exp is not None: np.testing.assert_array_equal(o, exp)

def dt_range_bad(x, dst):
  from tinygrad.dtype import to_numpy
  return dtypes.is_float(dtypes.float32) and x.dtype.kind == "f" and (np.abs(x) > np.iinfo(to_numpy(dst)).max).any()

def test_half_arith_rounds_each_op(cc):
  a = (np.random.randn(16) * 100).astype(np.float16)
  b = (np.random.randn(16) * 100).astype(np.float16)
  for fn, npfn in [(lambda x, y: x + y, np.add), (lambda x, y: x * y, np.multiply), (lambda x, y: x / y, np.divide)]:
    o = np.zeros(16, np.float16)
    run(cc, elementwise(fn, [dtypes.float16]*2, dtypes.float16, 16), o, a, b)
    np.testing.assert_array_equal(o, npfn(a, b))

def test_bfloat16_store_rounds(cc):
  a = np.array([1.0, 1.00390625, 1.01171875, -3.14159, 65504, 1e-30, np.inf, np.nan], np.float32)
  o = np.zeros(8, np.uint16)
  run(cc, cast_kernel(8, dtypes.float32, dtypes.bfloat16), o, a)
  assert o.tolist() == [float_to_bf16_bits(float(v)) for v in a.tolist()]

def test_math(cc):
  a = np.array([0.5, 1, 2, 10, 0.001, 100, 3.14159, 1e-3], np.float32)
  for fn, npfn in [(lambda x: x.sqrt(), np.sqrt), (lambda x: x.exp2(), np.exp2), (lambda x: x.log2(), np.log2), (lambda x: x.sin(), np.sin),
                   (lambda x: x.reciprocal(), np.reciprocal), (lambda x: (x * 3.7).trunc(), lambda v: np.trunc(v * np.float32(3.7)))]:
    o = np.zeros(8, np.float32)
    run(cc, elementwise(fn, [dtypes.float32], dtypes.float32, 8), o, a)
    np.testing.assert_allclose(o, npfn(a), rtol=2e-7)

def test_special_float_constants(cc):
  a = np.array([1, -2, 0.1, 3, 1e30, -1e30, 0, 5], np.float32)
  for c in [math.inf, -math.inf, 0.1, 1/3, 3.4028234663852886e+38, 1e-45]:
    o = np.zeros(8, np.float32)
    run(cc, elementwise(lambda x: x + c, [dtypes.float32], dtypes.float32, 8), o, a)
    np.testing.assert_array_equal(o, a + np.float32(c))
  o = np.zeros(8, np.float32)
  run(cc, elementwise(lambda x: x * 0.0 + math.nan, [dtypes.float32], dtypes.float32, 8), o, a)
  assert np.isnan(o).all()

def test_where_and_int_min_const(cc):
  a = np.arange(-4, 4, dtype=np.int32)
  o = np.zeros(8, np.int32)
  run(cc, elementwise(lambda x: (x < 0).where(x, UOp.const(dtypes.int32, -2**31)), [dtypes.int32], dtypes.int32, 8), o, a)
  np.testing.assert_array_equal(o, np.where(a < 0, a, np.int32(-2**31)))

def test_define_var(cc):
  a, o = np.random.randn(64).astype(np.float32), np.zeros(64, np.float32)
  run(cc, var_kernel(64), o, a, vals=(37,))
  np.testing.assert_array_equal(o, np.concatenate([a[:37] * 2, np.zeros(27, np.float32)]))
  # split: every part gets the buffers and the variable through the kernel's task
  o = np.zeros(64, np.float32)
  run(cc, var_kernel(64), o, a, vals=(37,), threads=3)
  np.testing.assert_array_equal(o, np.concatenate([a[:37] * 2, np.zeros(27, np.float32)]))

@pytest.mark.parametrize("n,threads", [(1, 4), (5, 8), (1000, 3), (4099, 16)])
def test_threads_split_outer_loop(cc, n, threads):
  a, b, o = np.random.randn(n).astype(np.float32), np.random.randn(n).astype(np.float32), np.zeros(n, np.float32)
  run(cc, add_kernel(n), o, a, b, threads=threads)
  np.testing.assert_array_equal(o, a + b)
  a, o = np.random.randn(n*8).astype(np.float32), np.zeros(n, np.float32)
  run(cc, reduce_kernel(n, 8), o, a, threads=threads)
  np.testing.assert_allclose(o, a.reshape(n, 8).sum(1), rtol=1e-5, atol=1e-6)

def test_vectors(cc):
  out, inp = glob(0, dtypes.float32, 8), glob(1, dtypes.float32, 8)
  r = rng(2)
  lanes = [inp.index(r * 4 + i).load() for i in range(4)]
  v = UOp(Ops.VECTORIZE, dtypes.float32.vec(4), tuple(lanes))
  w = v * UOp.const(dtypes.float32.vec(4), 2.0)
  sts = [out.index(r * 4 + i).store(w.gep(3 - i)) for i in range(4)]
  a, o = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
  run(cc, linear(out, inp, *sts, end(r)), o, a)
  np.testing.assert_array_equal(o, (a.reshape(2, 4)[:, ::-1] * 2).reshape(-1))

def test_vectorize_forms(cc):
  # VECTORIZE renders as a splat (one value), zeroinitializer (zeros: not -0.0) or lane by lane: each gives its lanes
  out, inp, r, v4 = glob(0, dtypes.float32, 8), glob(1, dtypes.float32, 8), rng(2), dtypes.float32.vec(4)
  x = inp.index(r * 4).load()
  def vec(*s: UOp) -> UOp: return UOp(Ops.VECTORIZE, v4, s)
  c = lambda v: UOp.const(dtypes.float32, v)
  w = vec(x, x, x, x) * vec(c(1.5), c(-2.0), c(0.0), c(3.0)) + vec(*[c(0.0)]*4) - vec(*[c(-0.0)]*4) + vec(c(0.0), c(-0.0), c(1.0), c(0.0))
  sts = [out.index(r * 4 + i).store(w.gep(i)) for i in range(4)]
  a, o = np.array([1, 9, 9, 9, -3, 9, 9, 9], dtype=np.float32), np.zeros(8, np.float32)
  src = run(cc, linear(out, inp, *sts, end(r)), o, a)
  np.testing.assert_array_equal(o, np.array([1.5, -2, 1, 3, -4.5, 6, 1, -9], np.float32), err_msg=src)

def test_compile_error_has_diagnostics_and_source(cc):
  renderer, compiler = cc
  with pytest.raises(CompileError) as e: compiler.compile("this is not a kernel")
  assert e.value.src == "this is not a kernel" and e.value.diagnostics

def test_runtime_threads_heuristic(cc):
  from tinygrad_cpu.runtime import CPUProgram, CPU_THREAD_WORK, CPU_PARTS
  renderer, compiler = cc
  small = CPUProgram("test_kernel", compiler.compile(renderer.render(add_kernel(16), "test_kernel")))
  assert small.threads == 1 and 0 < small.work < CPU_THREAD_WORK
  big = CPUProgram("test_kernel", compiler.compile(renderer.render(add_kernel(1 << 22), "test_kernel")))
  assert big.work > CPU_THREAD_WORK
  # split, its loop is cut into up to CPU_PARTS parts per thread (each of >= CPU_THREAD_WORK) that any thread claims
  big.threads = 2
  assert big.trips == 1 << 22 and big.parts == min(CPU_PARTS * 2, big.work // CPU_THREAD_WORK) > 2
  a, b, o = np.random.randn(1 << 22).astype(np.float32), np.random.randn(1 << 22).astype(np.float32), np.zeros(1 << 22, np.float32)
  big(o.ctypes.data, a.ctypes.data, b.ctypes.data)
  np.testing.assert_array_equal(o, a + b)

def test_dropped_programs_are_unloaded(cc):
  # a program's code is unmapped with it (BEAM drops thousands of candidates; each kept ~10 mappings, up to the
  # process's vm.max_map_count); one that is still referenced keeps running
  import gc
  from tinygrad_cpu.runtime import CPUProgram
  renderer, compiler = cc
  lib = compiler.compile(renderer.render(add_kernel(16), "test_kernel"))
  maps = lambda: sum(1 for _ in open("/proc/self/maps"))
  kept = CPUProgram("test_kernel", lib)
  gc.collect()
  before = maps()
  for _ in range(50): CPUProgram("test_kernel", lib)
  gc.collect()
  assert maps() - before < 20
  a, b, o = np.arange(16, dtype=np.float32), np.ones(16, np.float32), np.zeros(16, np.float32)
  kept(o.ctypes.data, a.ctypes.data, b.ctypes.data)
  np.testing.assert_array_equal(o, a + 1)

def test_split_trips_exported(cc):
  # the split loop's trip count reaches the runtime where it is a constant; a variable's bound gives 0 (unknown)
  from tinygrad_cpu.runtime import CPUProgram
  renderer, compiler = cc
  assert CPUProgram("test_kernel", compiler.compile(renderer.render(add_kernel(1 << 21), "test_kernel"))).trips == 1 << 21
  if (prg := CPUProgram("test_kernel", compiler.compile(renderer.render(var_kernel(1 << 22), "test_kernel")))).work:
    assert prg.trips == 0 and prg.parts >= 1

def _last_finish(threads: int, sizes: list[int]) -> int:
  free = [0] * threads   # parts claimed in order by whichever thread is free first, every iteration one unit of time
  for s in sizes: free[free.index(min(free))] += s
  return max(free)

@pytest.mark.parametrize("threads", [2, 3, 4])
def test_part_count_finishes_threads_together(threads):
  from tinygrad_cpu.runtime import _part_count
  for most in (threads, 2 * threads, 4 * threads):
    for trips in range(1, 120):
      n = _part_count(threads, most, trips)
      assert 1 <= n <= min(max(most, threads), trips)
      # the shortest possible, ceil(trips / threads) (one part per thread always reaches it), with parts no coarser than needed
      assert _last_finish(threads, [trips * (c + 1) // n - trips * c // n for c in range(n)]) == -(-trips // threads), (most, trips, n)
  # matmul 2048's 18 row chunks on 2 threads: 9 each (4 parts per thread gave one thread 10), in more than 2 parts
  assert _part_count(2, 8, 18) > 2 and _part_count(2, 8, 0) == 8

def test_fork_child_runs_threaded_kernels(cc):
  # a fork child inherits the runtime's thread pool without its threads: it must start its own, not wait forever
  import multiprocessing as mp
  n = 4099
  a, b = np.random.randn(n).astype(np.float32), np.random.randn(n).astype(np.float32)
  o = np.zeros(n, np.float32)
  run(cc, add_kernel(n), o, a, b, threads=4)   # the parent's pool now exists, with live workers
  np.testing.assert_array_equal(o, a + b)
  def child(q):
    o2 = np.zeros(n, np.float32)
    run(cc, add_kernel(n), o2, a, b, threads=4)
    q.put(o2.tobytes())
  ctx = mp.get_context("fork")
  q = ctx.Queue()
  p = ctx.Process(target=child, args=(q,))
  p.start()
  try: got = q.get(timeout=60)
  finally:
    p.join(10)
    if p.is_alive(): p.kill()
  np.testing.assert_array_equal(np.frombuffer(got, np.float32), a + b)
  assert p.exitcode == 0

def _aligned32(n: int) -> np.ndarray:
  """n float32s starting at a 32-byte boundary (so element 1 is surely not 32-byte aligned)."""
  raw = np.zeros(n + 8, np.float32)
  k = (-raw.ctypes.data % 32) // 4
  return raw[k:k+n]

def vector_offset_kernel(n: int, lo: int) -> list[UOp]:
  """out[lo+8i : lo+8i+8] = in[lo+1+8i : ...] * 2 as float8 loads and stores, both starting off a 32-byte boundary."""
  out, inp, r, v8 = glob(0, dtypes.float32, n), glob(1, dtypes.float32, n), rng((n - lo - 9) // 8 + 1), dtypes.float32.vec(8)
  val = UOp(Ops.LOAD, v8, (inp.index(r * 8 + (lo + 1)),)) * UOp.const(v8, 2.0)
  return linear(out, inp, UOp(Ops.STORE, dtypes.void, (out.index(r * 8 + lo), val)), end(r))

@pytest.mark.parametrize("lo", [1, 3])
def test_vector_access_at_odd_offsets(cc, lo):
  # a float8 typedef GCC aligned to 32 bytes (attributes in the wrong order) made these aligned moves: SIGSEGV
  a, o = _aligned32(64), _aligned32(64)
  a[:] = np.arange(64, dtype=np.float32)
  src = run(cc, vector_offset_kernel(64, lo), o, a)
  m = (64 - lo - 9) // 8 * 8 + 8
  np.testing.assert_array_equal(o[lo:lo+m], a[lo+1:lo+1+m] * 2, err_msg=src)
  assert not o[:lo].any() and not o[lo+m:].any()
  if cc[1].__class__.__name__ != "LLVMCompiler" and platform.machine() in ("x86_64", "AMD64") and shutil.which("objdump"):
    asm = cc[1].disassemble(cc[1].compile(src))
    assert "movups" in asm and not re.search(r"movaps\s+\S*\(", asm), asm   # still vector moves, and none that needs alignment

@pytest.mark.parametrize("env,want", [({"NUM_CPU_THREADS": "1"}, 1), ({"NUM_CPU_THREADS": "1", "CPU_COUNT": "3"}, 3)])
def test_num_cpu_threads_is_public_tinygrads_name_for_cpu_count(env, want):
  # NUM_CPU_THREADS=1 (public tinygrad's) gives one thread, as CPU_COUNT=1 does; CPU_COUNT wins where both are set
  import os, subprocess, sys
  code = "import tinygrad_cpu.runtime as r; print(r.CPU_COUNT)"
  out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
  assert out.returncode == 0, out.stderr[-2000:]
  assert int(out.stdout.split()[-1]) == want
