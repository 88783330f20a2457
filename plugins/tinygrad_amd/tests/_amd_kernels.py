"""Hand-built linearized kernels with launch indices, LDS and a barrier (codegen makes none with shared memory yet)."""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import AddrSpace, dtypes
from _cpu_kernels import glob, linear

def special(name: str, n: int) -> UOp: return UOp(Ops.SPECIAL, dtypes.int32, (UOp.const(dtypes.int32, n),), name)

def lds_reverse_kernel(groups: int = 2, threads: int = 4) -> list[UOp]:
  """out[g*T+l] = in[g*T + T-1-l]: each thread stores its element in LDS, waits at the barrier, reads its mirror's."""
  out, inp = glob(0, dtypes.float32, groups*threads), glob(1, dtypes.float32, groups*threads)
  g, l = special("gidx0", groups), special("lidx0", threads)
  smem = UOp(Ops.DEFINE_LOCAL, dtypes.float32.ptr(threads, AddrSpace.LOCAL), (), "temp0")
  st = smem.index(l).store(inp.index(g * threads + l).load())
  bar = UOp(Ops.BARRIER, dtypes.void, (st,))
  mirror = UOp(Ops.LOAD, dtypes.float32, (smem.index(UOp.const(dtypes.int32, threads - 1) - l), bar))
  return linear(out, inp, g, l, smem, st, bar, out.index(g * threads + l).store(mirror))

def global_index_kernel(n: int = 8) -> list[UOp]:
  """out[i] = i with i an `i` launch index (group * group size + item)."""
  out = glob(0, dtypes.int32, n)
  i = special("i0", n)
  return linear(out, out.index(i).store(i))
