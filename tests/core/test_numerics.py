"""Integer/bool numerics that must match numpy on every renderer, and bad input that must raise a clear error."""
import shutil
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.dtype import to_numpy

def _dev(name: str) -> str:
  if name == "CPU:CLANG" and shutil.which("clang") is None: pytest.skip("clang not installed (the `clang` package); CPU:CLANG not checked")
  return name

# every C-like and LLVM renderer the CPU plugin has, and the exact interpreter
DEVICES = ["CPU:LLVM", "CPU:GCC", "CPU:CLANG", "PYTHON"]

@pytest.fixture(params=DEVICES)
def dev(request): return _dev(request.param)

# ---- shifts by the bit width or more, and by negative amounts: numpy's answer (0 for <<, the sign fill for >>) ----
SHIFT_DTYPES = [dtypes.int8, dtypes.uint8, dtypes.int16, dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64]

@pytest.mark.parametrize("dt", SHIFT_DTYPES, ids=str)
def test_shift_past_width_constant(dev, dt):
  bits = dt.itemsize * 8
  vals = [3, 5, 1, 0] if dtypes.is_unsigned(dt) else [3, -5, 1, 0]
  x = np.array(vals, dtype=to_numpy(dt))
  for c in (bits - 1, bits, bits + 8, 40, 100) + (() if dtypes.is_unsigned(dt) else (-1, -bits)):
    t = Tensor(x, device=dev)
    np.testing.assert_equal((t << c).numpy(), np.left_shift(x, np.array(c).astype(x.dtype)), err_msg=f"{dt} << {c}")
    np.testing.assert_equal((t >> c).numpy(), np.right_shift(x, np.array(c).astype(x.dtype)), err_msg=f"{dt} >> {c}")

@pytest.mark.parametrize("dt", [dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint8], ids=str)
def test_shift_past_width_tensor_amount(dev, dt):
  npdt = to_numpy(dt)
  bits = dt.itemsize * 8
  amts = [0, 1, bits - 1, bits, bits + 1, 2 * bits + 3] + ([] if dtypes.is_unsigned(dt) else [-1, -bits - 2])
  x = np.array([7 if dtypes.is_unsigned(dt) else -7] * len(amts) + [3] * len(amts), dtype=npdt)
  a = np.array(amts * 2, dtype=npdt)
  np.testing.assert_equal((Tensor(x, device=dev) << Tensor(a, device=dev)).numpy(), np.left_shift(x, a))
  np.testing.assert_equal((Tensor(x, device=dev) >> Tensor(a, device=dev)).numpy(), np.right_shift(x, a))

def test_shift_int32_by_40_repro(dev):
  # the report: LLVM returned a freed tensor's data (the shl was poison and the store dropped)
  assert (Tensor([3] * 4, dtype=dtypes.int32, device=dev) << 40).tolist() == [0] * 4
  assert (Tensor([-3] * 4, dtype=dtypes.int32, device=dev) >> 40).tolist() == [-1] * 4

def test_shift_constant_fold():
  # both operands constant: folded in Python (exec_alu), same answer
  assert (Tensor(3, dtype=dtypes.int32) << 40).item() == 0
  assert (Tensor(-3, dtype=dtypes.int32) >> -1).item() == -1
  assert (Tensor(3, dtype=dtypes.int32) << -1).item() == 0

# ---- bool arithmetic: + is or, * is and, as numpy and torch ----
B1, B2 = np.array([True, True, False, False]), np.array([True, False, True, False])

def test_bool_add_mul_max_min(dev):
  a, b = Tensor(B1, device=dev), Tensor(B2, device=dev)
  np.testing.assert_equal((a + b).numpy(), B1 + B2)
  np.testing.assert_equal((a * b).numpy(), B1 * B2)
  np.testing.assert_equal(a.maximum(b).numpy(), np.maximum(B1, B2))
  np.testing.assert_equal(a.minimum(b).numpy(), np.minimum(B1, B2))
  np.testing.assert_equal((a + b + a).numpy(), B1 + B2 + B1)

def test_bool_reductions(dev):
  t = Tensor(B1, device=dev)
  assert t.sum().dtype == dtypes.int32 and t.sum().item() == 2
  assert Tensor(np.ones(300, bool), device=dev).sum().item() == 300
  assert t.max().item() is True and t.min().item() is False and t.any().item() is True and t.all().item() is False

def test_bool_sub_raises():
  # numpy and torch refuse bool - bool (there is no bool result that means subtraction)
  with pytest.raises(TypeError, match="bool"): Tensor(B1) - Tensor(B2)

# the guard is a core pass, so every plugin's renderer gets it: check the rendered source of each (no hardware needed)
RENDERERS = [("tinygrad_nv.renderer", "CUDARenderer"), ("tinygrad_nv.renderer", "PTXRenderer"), ("tinygrad_amd.renderer", "HIPRenderer"),
             ("tinygrad_amd.renderer", "AMDLLVMRenderer"), ("tinygrad_metal.renderer", "MetalRenderer"),
             ("tinygrad_webgpu.renderer", "WGSLRenderer"), ("tinygrad_cpu.renderer", "ClangRenderer"), ("tinygrad_cpu.renderer", "LLVMRenderer")]

@pytest.mark.parametrize("mod,cls", RENDERERS, ids=[c for _, c in RENDERERS])
def test_shift_guard_rendered(mod, cls):
  from tinygrad.codegen import get_program
  from tinygrad.engine.schedule import create_schedule
  from tinygrad.uop import Ops
  ren = getattr(pytest.importorskip(mod), cls)()
  x, a = Tensor.empty(16, dtype=dtypes.int32, device="PYTHON"), Tensor.empty(16, dtype=dtypes.int32, device="PYTHON")
  for out in (x << a, x >> a):
    ast = next(ei.ast for ei in create_schedule([out.uop])[0] if ei.ast.op is Ops.SINK)
    prg = get_program(ast, ren)
    shift = next(u for u in prg.uops if u.op in (Ops.SHL, Ops.SHR))
    # the amount is masked to [0, 31] (defined everywhere, WGSL included) and the result chosen by the unsigned range test
    mask = shift.src[1].src[1]
    assert shift.src[1].op is Ops.AND and {m.arg for m in (mask.src if mask.op is Ops.VECTORIZE else (mask,))} == {31}, prg.src
    assert any(u.op is Ops.WHERE and shift in u.src for u in prg.uops), prg.src
    assert "31" in prg.src and "32" in prg.src, prg.src
