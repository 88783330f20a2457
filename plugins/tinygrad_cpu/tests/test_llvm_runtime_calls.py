"""Casts LLVM lowers to calls into the compiler's runtime library resolve when an LLVM object is loaded (an unresolved one
jumps to address 0: a segfault, found by ONNX's Cast tests)."""
import os, subprocess, sys
import numpy as np
import pytest

PROG = """
import numpy as np
from tinygrad import Tensor, dtypes, Device
x = np.array([1.5, -2.25, 65504.0, 65520.0, 1e-8, 6e-8, -7e4, 0.1], dtype=np.float64)
print(Device[Device.DEFAULT].compiler_name, *map(repr, Tensor(x).cast(dtypes.float16).numpy().astype(np.float64).tolist()))
"""

@pytest.mark.parametrize("cc", ["LLVM", "CLANG"])
def test_float64_to_float16_cast(cc):
  # a subprocess: the failure this guards against is a crash, not an exception
  r = subprocess.run([sys.executable, "-c", PROG], env={**os.environ, "DEV": f"CPU:{cc}"}, capture_output=True, text=True, timeout=300)
  if cc == "CLANG" and "not available" in r.stderr: pytest.skip("clang not found: apt-get install clang")
  assert r.returncode == 0, r.stderr[-2000:]
  name, *got = r.stdout.split()
  assert name == cc
  with np.errstate(over="ignore"): want = np.array([1.5, -2.25, 65504.0, 65520.0, 1e-8, 6e-8, -7e4, 0.1], dtype=np.float64).astype(np.float16).astype(np.float64)
  np.testing.assert_array_equal(np.array([float(v) for v in got]), want)

def test_kernel_that_only_stores_bfloat16():
  # the float->bfloat16 helper is defined whenever it is called, also in a kernel that never loads bfloat16 (an arange,
  # a cast of float32 results): LLVM rejected such a kernel with "use of undefined value '@__f2b'" (found by ONNX's Range)
  from tinygrad import Tensor, dtypes
  np.testing.assert_array_equal(Tensor.arange(0, 10, 3, dtype=dtypes.bfloat16, device="CPU:LLVM").numpy(), [0, 3, 6, 9])
  np.testing.assert_array_equal((Tensor([1.0, 2.5, 3.25], device="CPU:LLVM") * 2).cast(dtypes.bfloat16).numpy(), [2, 5, 6.5])
