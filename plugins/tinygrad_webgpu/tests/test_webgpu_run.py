"""The WEBGPU runtime on a real adapter (llvmpipe in CI): packed dtypes, launch folding, validation errors, timing, refusals."""
import subprocess, sys
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.device import Device, CompileError
from tinygrad_webgpu.runtime import WebGPUProgram

def test_invalid_wgsl_is_a_compile_error_with_line_and_source(webgpu):
  src = "@compute @workgroup_size(1)\nfn k() {\n  let x: i32 = 1.5f;\n}\n"
  with pytest.raises(CompileError) as ei: WebGPUProgram(Device[webgpu], "k", src.encode())
  msg = str(ei.value)
  assert ":3:" in msg and "let x: i32 = 1.5f;" in ei.value.diagnostics + (ei.value.src or ""), msg
  assert "   3 | " in msg   # the numbered source listing
  assert (Tensor([1.0, 2.0], device=webgpu) * 3).tolist() == [3.0, 6.0]   # the device still works

@pytest.mark.parametrize("dt", [dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.uint16, dtypes.bool])
def test_packed_dtypes_round_trip_and_compute(webgpu, dt):
  rng = np.random.default_rng(0)
  npdt = {dtypes.uint8: np.uint8, dtypes.int8: np.int8, dtypes.int16: np.int16, dtypes.uint16: np.uint16, dtypes.bool: np.bool_}[dt]
  a = (rng.integers(0, 2, 37) if dt == dtypes.bool else rng.integers(np.iinfo(npdt).min, np.iinfo(npdt).max, 37, endpoint=True)).astype(npdt)
  b = np.roll(a, 1)
  ta, tb = Tensor(a, device=webgpu), Tensor(b, device=webgpu)
  np.testing.assert_equal(ta.numpy(), a)
  if dt == dtypes.bool: np.testing.assert_equal((ta ^ tb).numpy(), a ^ b)
  else:
    with np.errstate(over="ignore"): np.testing.assert_equal((ta * tb + ta).numpy(), a * b + a)   # wraps at its width
  # odd sizes and neighbours written by different invocations: every lane of every word survives
  np.testing.assert_equal(ta[1:].contiguous().numpy(), a[1:])

def test_bfloat16_is_packed_and_rounds_as_torch(webgpu):
  # WGSL has no bfloat16: it was refused ("dtype dtypes.bfloat16 is not supported on WEBGPU"; public tinygrad emulates it,
  # and its dtype suite casts every dtype through it). Now 16-bit lanes of u32 words, f32 registers rounded to nearest even
  torch = pytest.importorskip("torch")
  rng = np.random.default_rng(0)
  edge = [1.00390625, 1.01171875, -1.00390625, 3.4e38, 3.3961e38, -3.4e38, 1e-40, -1e-45, 0.0, -0.0, np.inf, -np.inf, 65504.0]
  x = np.concatenate([np.array(edge, np.float32), (rng.standard_normal(40) * 10.0 ** rng.integers(-6, 6, 40)).astype(np.float32)])
  tx, ref = Tensor(x, device=webgpu), torch.tensor(x)
  bits = lambda t: t.view(torch.int16).numpy().view(np.uint16)   # noqa: E731
  np.testing.assert_equal(tx.cast(dtypes.bfloat16).bitcast(dtypes.uint16).numpy(), bits(ref.bfloat16()))   # odd count: lanes of words
  b, rb = tx.cast(dtypes.bfloat16), ref.bfloat16()
  y, ry = Tensor(x[::-1].copy(), device=webgpu).cast(dtypes.bfloat16), torch.tensor(x[::-1].copy()).bfloat16()
  for got, want in [(b * y + b, rb * ry + rb), (b / y, rb / ry), (b - y, rb - ry), ((b * 3).sqrt(), (rb * 3).sqrt())]:
    np.testing.assert_equal(got.float().numpy(), want.float().numpy())   # each op rounded once (NaN where torch's is)
  np.testing.assert_equal(b.cast(dtypes.float16).numpy(), rb.half().numpy())
  np.testing.assert_equal(b[1:].contiguous().float().numpy(), rb[1:].float().numpy())
  assert Tensor([float("nan")], device=webgpu).cast(dtypes.bfloat16).bitcast(dtypes.uint16).tolist() == [0x7fc0]

# odd sizes: the core's reduce split (SPLIT_REDUCEOP) needs a divisor from 8 up, so these stay one long loop per invocation
@pytest.mark.parametrize("shape,axis", [((262147,), None), ((70001, 3), None), ((3, 301, 299), (1, 2)), ((3, 70001), 0)])
def test_reduce_loops_past_65535_trips(webgpu, shape, axis):
  # llvmpipe ends an invocation's loops after 65535 back-edges in total (nested or not): without the renderer's unrolling
  # these sums stopped early (262147 ones summed to 65535)
  a = np.random.default_rng(0).integers(-4, 5, shape).astype(np.int32)
  np.testing.assert_equal(Tensor(a, device=webgpu).sum(axis=axis).numpy(), a.sum(axis=axis))
  assert Tensor.ones(262147, device=webgpu).sum().item() == 262147

def test_launch_beyond_one_dispatch_dimension(webgpu):
  dev = Device[webgpu]
  n = dev.limits["max-compute-workgroups-per-dimension"] * dev.renderer.workgroup_size + 3
  a = (np.arange(n) % 1000).astype(np.float32)
  np.testing.assert_equal((Tensor(a, device=webgpu) + 1).numpy(), a + 1)   # the last invocations land in dispatch row y=1

def test_timing_and_batching(webgpu):
  from tinygrad.engine.realize import get_runner
  from tinygrad.engine.schedule import create_schedule
  a = Tensor.ones(1024, device=webgpu).contiguous().realize()
  sched, _ = create_schedule([(a * 2).uop])
  ei = [e for e in sched if e.ast.op.name == "SINK"][-1]
  from tinygrad.engine.realize import lower_schedule
  step = lower_schedule([ei])[0]
  et = step.run(wait=True)
  assert isinstance(et, float) and 0 <= et < 1
  x = a
  for _ in range(100): x = (x + 1).realize()   # > WEBGPU_BATCH kernels, read once
  assert x.numpy()[0] == 101

def test_unsupported_dtype_is_a_type_error(webgpu):
  # float64 always; int64/uint64 where the adapter lacks shader-int64
  for dt in [dtypes.float64] + [d for d in (dtypes.int64, dtypes.uint64) if d not in Device[webgpu].renderer.supported_dtypes]:
    with pytest.raises(TypeError, match="is not supported on WEBGPU") as ei: (Tensor.ones(4, dtype=dt, device=webgpu) + 1).realize()
    assert dt.name in str(ei.value)

def test_pipelines_are_cached_per_source(webgpu):
  dev = Device[webgpu]
  (Tensor.ones(5, device=webgpu) * 7).realize()
  n = len(dev.pipelines)
  src = next(iter(dev.pipelines))
  WebGPUProgram(dev, "x", src.encode())
  assert len(dev.pipelines) == n
  assert dev.description and "WEBGPU" in repr(dev)

def test_buffer_over_the_binding_limit_is_refused_with_the_limit(webgpu):
  # kernels bind whole buffers: max-storage-buffer-binding-size (128 MiB on llvmpipe) caps a buffer, not just max-buffer-size
  lim = Device[webgpu].limits
  limit = min(lim["max-buffer-size"], lim["max-storage-buffer-binding-size"])
  with pytest.raises(MemoryError, match=f"over this adapter's limit of {limit} bytes"): Tensor.empty(limit // 4 + 1, device=webgpu).realize()
  assert (Tensor([1.0], device=webgpu) + 1).tolist() == [2.0]

def test_kernel_whose_buffer_load_folds_away(webgpu):
  # every output reads only padding, so the optimized kernel no longer loads x: buffer i must still be binding i
  x, w, b = np.full((1, 1, 1, 1), 5, np.float32), np.full((1, 1, 1, 1), 2, np.float32), np.array([0.5], np.float32)
  got = Tensor(x, device=webgpu).conv2d(Tensor(w, device=webgpu), Tensor(b, device=webgpu), padding=1, stride=2).numpy()
  np.testing.assert_equal(got, np.full((1, 1, 2, 2), 0.5, np.float32))

def test_int64_where_the_adapter_has_shader_int64(webgpu):
  if "shader-int64" not in Device[webgpu].features: pytest.skip("this adapter lacks shader-int64: int64 is refused (test above)")
  a = np.array([2**40 + 5, -2**62, 7, -(2**63), 2**63 - 1, -9], np.int64)
  b = np.array([3, 7, -2, 1, 2**31, 4], np.int64)
  ta, tb = Tensor(a, device=webgpu), Tensor(b, device=webgpu)
  with np.errstate(over="ignore"):
    np.testing.assert_equal((ta * tb + 1).numpy(), a * b + 1)   # wraps at 64 bits
  np.testing.assert_equal((ta // tb).numpy(), a // b)   # floor division, exact at 64 bits
  np.testing.assert_equal(ta.maximum(tb).numpy(), np.maximum(a, b))
  np.testing.assert_equal((ta.cast(dtypes.uint64) >> 3).numpy(), a.view(np.uint64) >> np.uint64(3))
  np.testing.assert_equal(Tensor(a[:3], device=webgpu).cast(dtypes.float32).numpy(), a[:3].astype(np.float32))
  np.testing.assert_equal(Tensor.arange(5, device=webgpu).cast(dtypes.int64).sum().item(), 10)

@pytest.mark.parametrize("src", [dtypes.int8, dtypes.int16, dtypes.int32])
def test_a_signed_int_widened_to_int64_compares_and_indexes(webgpu, src):
  # naga's i64(i32) then a signed compare gave false for every element on lavapipe (i64(3i) < 12li), and an index tensor
  # cast to int64 in the kernel read 0 everywhere (onnx GridSample's taps were all 0): the cast sign-extends through u64
  if "shader-int64" not in Device[webgpu].features: pytest.skip("this adapter lacks shader-int64: int64 is refused")
  v = np.array([3, 5, 0, 11, -2, -20, 100, -100, 127], dtype={dtypes.int8: np.int8, dtypes.int16: np.int16, dtypes.int32: np.int32}[src])
  t, ref = Tensor(v, device=webgpu).cast(dtypes.int64), v.astype(np.int64)
  for f in (lambda a: a < 12, lambda a: a > 3, lambda a: a <= 0, lambda a: a >= 11, lambda a: a == 5):
    np.testing.assert_equal(f(t).numpy(), f(ref))
  x = np.arange(300, dtype=np.float32)
  np.testing.assert_equal(Tensor(x, device=webgpu)[t].numpy(), x[ref])

def test_listing_shows_the_adapter(webgpu, capsys):
  from tinygrad.__main__ import main
  main(["list", "--no-check"])   # the device is open already (fixture): the listing shows its adapter
  line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("WEBGPU"))
  assert Device[webgpu].description in line, line

def test_kernels_after_a_device_reset(webgpu):
  # Device.reset() reopens WEBGPU as a new wgpu device: a cached runner bound to the old one must not be reused
  assert (Tensor([1.0, 2.0], device=webgpu) * 5).tolist() == [5.0, 10.0]
  Device.reset()
  assert (Tensor([1.0, 2.0], device=webgpu) * 5).tolist() == [5.0, 10.0]

@pytest.mark.parametrize("opts", ["LOCAL:0:4", "GROUP:0:16", "GROUPTOP:0:8,LOCAL:0:2", "LOCAL:1:8,LOCAL:0:4,UPCAST:1:2", "gpu"])
def test_threads_in_a_block(webgpu, opts):
  # LOCAL/GROUP kernels (workgroup = block, var<workgroup> partials, workgroupBarrier) against numpy, odd sizes included;
  # "gpu": the GPU heuristics, as a discrete adapter (has_threads False) would get them
  from tinygrad.helpers import Context
  from tinygrad.engine.realize import method_cache
  rng = np.random.default_rng(0)
  x, m, v = rng.standard_normal((12, 48)).astype(np.float32), rng.standard_normal((32, 40)).astype(np.float32), rng.standard_normal(97).astype(np.float32)
  ren = Device[webgpu].renderer
  had = ren.has_threads
  method_cache.clear()
  try:
    if opts == "gpu": ren.has_threads = False
    with Context(OPTS="" if opts == "gpu" else opts):
      t, tm = Tensor(x, device=webgpu), Tensor(m, device=webgpu)
      np.testing.assert_allclose(t.sum(1).numpy(), x.sum(1), rtol=1e-5, atol=1e-5)
      np.testing.assert_allclose(t.max(0).numpy(), x.max(0))
      np.testing.assert_allclose((t.sum(1, keepdim=True) * 2 + t).numpy(), x.sum(1, keepdims=True) * 2 + x, rtol=1e-5, atol=1e-5)
      np.testing.assert_allclose((tm @ tm.T).numpy(), m @ m.T, rtol=1e-4, atol=1e-4)
      np.testing.assert_allclose(Tensor(v, device=webgpu).exp2().numpy(), np.exp2(v), rtol=1e-5)
      e = np.exp(x - x.max(1, keepdims=True))
      np.testing.assert_allclose(t.softmax(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-6)
  finally:
    ren.has_threads = had
    method_cache.clear()

def test_tensor_freed_in_a_reference_cycle_leaves_no_released_buffer_in_the_cache(webgpu):
  # a tensor freed by the cyclic GC (held by a traceback's frame, as a failed test's) had its GPUBuffer released by wgpu's
  # own finalizer and then cached for reuse: the next kernel writing a buffer of that size aborted the interpreter in
  # create_bind_group (wgpu-native: "invalid bind group entry"). In a subprocess, as that aborted
  code = ("import gc\nfrom tinygrad import Tensor\n"
          f"def make():\n  box = [Tensor([1.0, 2.0, 3.0], device='{webgpu}').realize()]\n  box.append(box)\n"
          f"make()\ngc.collect()\nprint((Tensor.ones(3, device='{webgpu}').contiguous() * 2).tolist())\n")
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
  assert r.returncode == 0 and r.stdout.strip() == "[2.0, 2.0, 2.0]", f"rc {r.returncode}: {r.stdout}{r.stderr[-2000:]}"

def test_empty_index_kernels_compile(webgpu):
  # kernels over a size-0 index divide their index math by 0 or loop 0 times; their bounds were unknown, so they kept int64
  # indices and WGSL (no shader-int64 here) rejected them ('data0[0li]', 'ridx3 < 2li'); now they narrow to int32
  x = Tensor(np.ones((1, 1), np.float32), device=webgpu, requires_grad=True)
  x[Tensor([[-1], [0]], device=webgpu), Tensor([False], device=webgpu)].sum().backward()
  assert x.grad.tolist() == [[0.0]]
  a = np.arange(45, dtype=np.uint8).reshape(3, 5, 3)
  out = Tensor(a, device=webgpu).scatter_reduce(0, Tensor.empty(1, 4, 0, dtype=dtypes.int32, device=webgpu),
                                                Tensor.ones(2, 5, 1, dtype=dtypes.uint8, device=webgpu), "amax")
  np.testing.assert_equal(out.numpy(), a)
