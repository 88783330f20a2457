"""Rules and helpers every GPU-style renderer shares (NV, AMD, ...): thread blocks for the launch, lane-wise vector ALU,
and the launch-size arithmetic. Plugins put these in their own `extra_matcher`; the core applies nothing from here."""
from __future__ import annotations
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.uop.upat import UPat, PatternMatcher
from tinygrad.dtype import PtrDType
from tinygrad.helpers import prod

def split_launch(sink: UOp, target: int, local_max: tuple[int, ...]) -> UOp | None:
  """Codegen gives one thread per block (gidx only): split gidx0 of size N into (N/L blocks) x (L threads) for the
  largest power of two L <= target dividing N. Kernels with shared memory or their own local indices are left alone."""
  nodes = sink.toposort()
  if any(u.op is Ops.DEFINE_LOCAL or (u.op is Ops.SPECIAL and u.arg[0] == "l") for u in nodes): return None
  g0 = next((u for u in nodes if u.op is Ops.SPECIAL and u.arg == "gidx0" and u.src[0].op is Ops.CONST), None)
  if g0 is None: return None
  n = g0.src[0].arg
  amt = next((a for a in (target >> i for i in range(target.bit_length())) if a <= local_max[0] and n % a == 0 and a > 1), 1)
  if amt == 1: return None
  gid = UOp(Ops.SPECIAL, g0.dtype, (UOp.const(g0.dtype, n // amt),), "gidx0")
  lid = UOp(Ops.SPECIAL, g0.dtype, (UOp.const(g0.dtype, amt),), "lidx0")
  return sink.substitute({g0: gid * amt + lid})

def pm_split_launch(target: int, local_max: tuple[int, ...]) -> PatternMatcher:
  return PatternMatcher([(UPat(Ops.SINK, name="sink"), lambda sink: split_launch(sink, target, local_max))])   # gidx0 -> gidx0*L+lidx0

def _devectorize(x: UOp) -> UOp | None:
  if x.dtype.count == 1: return None
  return UOp(Ops.VECTORIZE, x.dtype, tuple(UOp(x.op, x.dtype.scalar(), tuple(s.gep(i) for s in x.src), x.arg) for i in range(x.dtype.count)))

# for languages whose vector types have no operators (CUDA's float4, HIP's ext_vector_type compares and ?:)
pm_devectorize_alu = PatternMatcher([
  (UPat(GroupOp.ALU, name="x"), _devectorize),                # a+b on float4 -> float4(a.x+b.x, ...)
  (UPat(Ops.CAST, name="x"), lambda x: None if isinstance(x.dtype, PtrDType) else _devectorize(x)),   # (float4)int4 lane-wise
])

def launch_threads(uops: list[UOp]) -> int:
  """Threads per block of a linearized kernel: the product of its local (lidx) sizes."""
  return prod(u.src[0].arg for u in uops if u.op is Ops.SPECIAL and u.arg[0] == "l" and u.src[0].op is Ops.CONST)

def launch_threads_ok(lc: tuple[int, ...], block_max: tuple[int, ...], threads_max: int) -> bool:
  """A block shape the device accepts: each dimension within its limit, and the product within threads per block."""
  return all(1 <= a <= b for a, b in zip(lc, block_max)) and prod(lc) <= threads_max
