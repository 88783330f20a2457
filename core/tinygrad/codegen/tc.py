"""Tensor cores: the TC action maps a matmul-shaped kernel onto a renderer's matrix-multiply-accumulate instruction.

A tensor core is a warp-wide instruction: `threads` lanes each hold a few elements of A (MxK), B (KxN) and C/D (MxN) in
registers, in a fixed layout. The action splits the kernel's M and N output axes and its K reduce axis into tiles of the
instruction's shape, adds a LOCAL range for the lane, and replaces the reduce body with one WMMA uop per K tile:
WMMA(a_0..a_{ea-1}, b_0..b_{eb-1}, c_0..c_{ec-1}) -> dtype_out.vec(ec), lane-wise D = A @ B + C. Each of the ec output
elements is reduced (summed over the K tiles) and stored at the place the layout gives it.

The layouts are data (`LAYOUTS`): functions (lane, element) -> (row, col) for A, B and C, written with + - * // % only,
so the same function builds the kernel's index arithmetic (on UOps) and the PYTHON device's emulation (on numpy).
"""
from __future__ import annotations
from dataclasses import dataclass
from typing import Any, Callable
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.dtype import dtypes
from tinygrad.renderer import TensorCore

Frag = Callable[[Any, int], tuple[Any, Any]]   # (lane, element) -> (row, col)

@dataclass(frozen=True)
class TCLayout:
  a: Frag
  b: Frag
  c: Frag

# mma.sync.m16n8k16 (sm_80+): group g = lane/4 and t = lane%4; A 16x16 in 8 halves, B 16x8 in 4, C/D 16x8 in 4 floats
def _m16n8k16_a(l: Any, i: int) -> tuple[Any, Any]: return l // 4 + 8 * ((i >> 1) & 1), (l % 4) * 2 + (i & 1) + 8 * (i >> 2)
def _m16n8k16_b(l: Any, i: int) -> tuple[Any, Any]: return (l % 4) * 2 + (i & 1) + 8 * (i >> 1), l // 4
def _m16n8k16_c(l: Any, i: int) -> tuple[Any, Any]: return l // 4 + 8 * (i >> 1), (l % 4) * 2 + (i & 1)

# RDNA3 v_wmma_f32_16x16x16_{f16,bf16} (wave32): lane l holds row l%16 of A and column l%16 of B, all 16 K values in
# order, so lanes l and l+16 hold the same A and B data; D: 8 floats per lane, row 2*i + l//16, column l%16
def _wmma_a(l: Any, i: int) -> tuple[Any, Any]: return l % 16, i
def _wmma_b(l: Any, i: int) -> tuple[Any, Any]: return i, l % 16
def _wmma_c(l: Any, i: int) -> tuple[Any, Any]: return l // 16 + 2 * i, l % 16

# CDNA v_mfma_f32_16x16x16{f16,bf16_1k} (wave64): lane l holds row l%16 of A and column l%16 of B at K = 4*(l//16) + i;
# D: 4 floats per lane, row 4*(l//16) + i, column l%16
def _mfma_a(l: Any, i: int) -> tuple[Any, Any]: return l % 16, l // 16 * 4 + i
def _mfma_b(l: Any, i: int) -> tuple[Any, Any]: return l // 16 * 4 + i, l % 16
def _mfma_c(l: Any, i: int) -> tuple[Any, Any]: return l // 16 * 4 + i, l % 16

# Apple simdgroup_matrix 8x8 (simdgroup_multiply_accumulate, 32 lanes): A, B and C alike, lane l holds row
# (l//2)%4 + 4*(l//16) and the two adjacent columns 2*(l%2) + 4*((l//8)%2) + i, i = thread_elements() index
def _simd8x8(l: Any, i: int) -> tuple[Any, Any]: return (l // 2) % 4 + 4 * (l // 16), 2 * (l % 2) + 4 * ((l // 8) % 2) + i

# names hold no "_": a WMMA uop's name is layout_input_output (wmma_name)
LAYOUTS: dict[str, TCLayout] = {"m16n8k16": TCLayout(_m16n8k16_a, _m16n8k16_b, _m16n8k16_c),
                                "wmma16x16x16": TCLayout(_wmma_a, _wmma_b, _wmma_c),
                                "mfma16x16x16": TCLayout(_mfma_a, _mfma_b, _mfma_c),
                                "simd8x8x8": TCLayout(_simd8x8, _simd8x8, _simd8x8)}

# NVIDIA's fp16 and bf16 mma with fp32 accumulation; dims are (N, M, K), elements per thread (A, B, C)
NV_TENSOR_CORES = [TensorCore((8, 16, 16), 32, dt, dtypes.float, (8, 4, 4), swizzle="m16n8k16") for dt in (dtypes.half, dtypes.bfloat16)]
# AMD's (here, not in the plugin, so the PYTHON device can emulate them): RDNA3 WMMA and CDNA MFMA, fp16/bf16 in, fp32 out
AMD_WMMA_TENSOR_CORES = [TensorCore((16, 16, 16), 32, dt, dtypes.float, (16, 16, 8), swizzle="wmma16x16x16") for dt in (dtypes.half, dtypes.bfloat16)]
AMD_MFMA_TENSOR_CORES = [TensorCore((16, 16, 16), 64, dt, dtypes.float, (4, 4, 4), swizzle="mfma16x16x16") for dt in (dtypes.half, dtypes.bfloat16)]
# Apple's simdgroup_matrix (MSL 2.3+, GPU family Apple7+ or Mac2): half->float first, so a heuristic pick of a half matmul
# keeps a float accumulator; half->half only when asked for (TC action). bfloat8x8 needs MSL 3.1 (macOS 14), which the
# renderer cannot check at render time, so it is not declared
METAL_TENSOR_CORES = [TensorCore((8, 8, 8), 32, di, do, (2, 2, 2), swizzle="simd8x8x8")
                      for di, do in ((dtypes.float, dtypes.float), (dtypes.half, dtypes.float), (dtypes.half, dtypes.half))]

_SHORT = {dtypes.half: "f16", dtypes.bfloat16: "bf16", dtypes.float: "f32"}
def wmma_name(tc: TensorCore) -> str:
  """`m16n8k16_f16_f32`: the layout, then the input and output types (PTX spellings)."""
  return f"{tc.swizzle}_{_SHORT.get(tc.dtype_in, tc.dtype_in.name)}_{_SHORT.get(tc.dtype_out, tc.dtype_out.name)}"

def _strip_cast(u: UOp) -> UOp: return u.src[0] if u.op is Ops.CAST else u

def _franges(u: UOp, kind: AxisType) -> set[UOp]: return {r for r in u.toposort() if r.op is Ops.RANGE and r.arg[1] is kind}

def apply_tc(sink: UOp, tc: TensorCore, threads_ok: bool) -> UOp:
  """The kernel with its reduce done by `tc`; raises KernelOptError (and changes nothing) when the kernel does not fit."""
  from tinygrad.codegen.opt import KernelOptError
  if not threads_ok: raise KernelOptError("TC needs a GPU-style launch (the lanes of a warp): this renderer has no local threads")
  layout = LAYOUTS.get(str(tc.swizzle))
  if layout is None: raise KernelOptError(f"tensor core layout {tc.swizzle!r} is not known; known: {', '.join(LAYOUTS)}")
  reduces = [u for u in sink.toposort() if u.op is Ops.REDUCE]
  if len(reduces) != 1 or reduces[0].arg is not Ops.ADD or len(reduces[0].src) != 2:
    raise KernelOptError("TC needs exactly one sum over one reduce axis (a matmul)")
  red = reduces[0]
  k = red.src[1]
  body = red.src[0]
  if body.op is Ops.CAST: body = body.src[0]
  if body.op is not Ops.MUL: raise KernelOptError(f"TC needs a reduce of a product, got a reduce of {body.op}")
  x, y = (_strip_cast(s) for s in body.src)
  if x.dtype != tc.dtype_in or y.dtype != tc.dtype_in:
    raise KernelOptError(f"TC {wmma_name(tc)} takes {tc.dtype_in.name} inputs, the kernel multiplies {x.dtype} by {y.dtype}")
  gx, gy = _franges(x, AxisType.GLOBAL), _franges(y, AxisType.GLOBAL)
  ms, ns = gx - gy, gy - gx
  if len(ms) != 1 or len(ns) != 1: raise KernelOptError("TC needs one output axis per operand (M in A only, N in B only)")
  (m,), (n,) = ms, ns
  if k not in x.toposort() or k not in y.toposort(): raise KernelOptError("TC needs both operands to depend on the reduce axis")
  tn, tm, tk = tc.dims
  ea, eb, ec = tc.elements_per_thread
  sizes = {"M": (m, tm), "N": (n, tn), "K": (k, tk)}
  for name, (r, t) in sizes.items():
    if not isinstance(r.src[0].arg, int) or r.src[0].arg % t != 0:
      raise KernelOptError(f"TC {wmma_name(tc)}: axis {name} of size {r.src[0].arg} is not a multiple of {t}")
  axis = 1 + max(r.arg[0] for r in sink.toposort() if r.op is Ops.RANGE)
  lane = UOp.range(tc.threads, axis, AxisType.LOCAL, m.dtype)   # the kernel's index type (int64 past 2**31: codegen/index64.py)
  mo, no = UOp.range(m.src[0].arg // tm, m.arg[0], AxisType.GLOBAL, m.dtype), UOp.range(n.src[0].arg // tn, n.arg[0], AxisType.GLOBAL, n.dtype)
  ko = UOp.range(k.src[0].arg // tk, k.arg[0], AxisType.REDUCE, k.dtype)
  def at(frag: Frag, i: int, rr: UOp, ro: UOp, rt: int, cr: UOp, co: UOp, ct: int) -> dict[UOp, UOp]:
    row, col = frag(lane, i)
    return {rr: ro * rt + row, cr: co * ct + col}
  a = [x.substitute(at(layout.a, i, m, mo, tm, k, ko, tk)) for i in range(ea)]
  b = [y.substitute(at(layout.b, i, k, ko, tk, n, no, tn)) for i in range(eb)]
  c = [UOp.const(tc.dtype_out, 0.0)] * ec
  wmma = UOp(Ops.WMMA, tc.dtype_out.vec(ec), tuple(a + b + c), (wmma_name(tc), tc.dims, tc.threads, (ea, eb)))
  outs = []
  for i in range(ec):
    acc = UOp(Ops.REDUCE, tc.dtype_out, (wmma.gep(i), ko), Ops.ADD)
    sub = at(layout.c, i, m, mo, tm, n, no, tn)
    sub[red] = acc if red.dtype == tc.dtype_out else acc.cast(red.dtype)
    outs += [s.substitute(sub) if red in s.toposort() else s for s in sink.src]
  return UOp(Ops.SINK, dtypes.void, tuple(dict.fromkeys(outs)), sink.arg)

def wmma_emulate(arg: tuple, a: list[Any], b: list[Any], c: list[Any], lane: Any, nlocal: int, np: Any) -> list[Any]:
  """The PYTHON device's WMMA (`arg` as apply_tc builds it): `a`, `b`, `c` hold each element's values over all threads,
  which run in lockstep with warps of `threads` consecutive thread indices; returns D = A @ B + C per element, per warp."""
  layout, threads = LAYOUTS[arg[0].split("_")[0]], arg[2]
  if nlocal % threads: raise RuntimeError(f"PYTHON device: WMMA {arg[0]} needs blocks of whole {threads}-thread warps, got {nlocal} threads")
  lanes = len(lane)
  warp, wl = lane // threads, lane % threads
  def gather(frag: Frag, vals: list[Any], what: str) -> Any:
    idx = [frag(wl, i) for i in range(len(vals))]
    mat = np.zeros((lanes // threads, 1 + max(int(np.max(r)) for r, _ in idx), 1 + max(int(np.max(c)) for _, c in idx)), dtype=np.float32)
    full = [np.broadcast_to(np.asarray(v, dtype=np.float32), (lanes,)) for v in vals]
    for (r, cc), v in zip(idx, full): mat[warp, r, cc] = v
    # a layout may hold an element in several lanes (RDNA3: lanes l and l+16): the kernel must give them equal values
    for (r, cc), v in zip(idx, full):
      if not np.array_equal(mat[warp, r, cc], v, equal_nan=True):
        raise RuntimeError(f"PYTHON device: WMMA {arg[0]}: lanes holding the same element of {what} were given different values")
    return mat
  d = gather(layout.a, a, "A") @ gather(layout.b, b, "B") + gather(layout.c, c, "C")
  return [d[(warp, *layout.c(wl, i))] for i in range(len(c))]

def heuristic_tc(sink: UOp, ren: Any) -> tuple[UOp, list]:
  """The heuristics' tensor core: `sink` with the renderer's first tensor core that fits it applied, and that TC action
  as a list ([] and `sink` itself when none fits, USE_TC=0 or NOOPT)."""
  from tinygrad.codegen.opt import Opt, OptOps, KernelOptError
  from tinygrad.helpers import NOOPT, USE_TC
  if NOOPT or not USE_TC: return sink, []
  for i, tc in enumerate(ren.tensor_cores):
    try: return apply_tc(sink, tc, ren.has_local), [Opt(OptOps.TC, 0, i)]
    except KernelOptError: continue
  return sink, []

def tensor_cores(sink: UOp, ren: Any, opts: list | None) -> UOp:
  """The codegen pass: apply the TC actions in `opts`, or (opts None) the heuristics' tensor core (heuristic_tc)."""
  from tinygrad.codegen.opt import OptOps, KernelOptError
  if opts is None: return heuristic_tc(sink, ren)[0]
  for o in opts:
    if o.op is not OptOps.TC: continue
    if not 0 <= o.arg < len(ren.tensor_cores):
      raise KernelOptError(f"TC {o.arg}: this renderer has {len(ren.tensor_cores)} tensor cores"
                           + (f" ({', '.join(wmma_name(t) for t in ren.tensor_cores)})" if ren.tensor_cores else ""))
    sink = apply_tc(sink, ren.tensor_cores[o.arg], ren.has_local)
  return sink
