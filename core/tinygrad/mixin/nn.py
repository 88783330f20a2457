# mypy: disable-error-code="misc"
"""Tensor methods, linear algebra and nn functions: dot/matmul, linear, norms, pooling and unpooling, convolution and its
transpose, attention, interpolation, and the activations the losses build on (logsigmoid, softmin)."""
from __future__ import annotations
import functools, math
from typing import TYPE_CHECKING, Any, Callable, Literal, Sequence, overload
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, sint_le, smax, shape_str, vals_str, _view, reduce_identity
from tinygrad.dtype import DType, dtypes, to_dtype, least_upper_dtype, sum_acc_dtype, OPMATH_F32
from tinygrad.helpers import ContextVar, make_tuple, flatten, ceildiv, all_int, prod, argfix, MATMUL_PACK, MATMUL_PACK_BYTES, CONV_PAD_COPY, CONV_FLAT, CONV_S2D, CONV_DW_VEC
from tinygrad.mixin.common import _broadcast_shape, _check_positive, _CHUNK, _ACC_RUN, ArgumentError, AssertedArgumentError, _has_dtype
from tinygrad.mixin.indexing import _check_oob
from tinygrad.mixin.elementwise import _opmath
if TYPE_CHECKING:
  from tinygrad.tensor import Tensor

_Win = int | tuple[int, ...]   # a window argument: one int for every spatial dim, or one per dim

# (device, itemsize, m, k, n, along_k, the flags' version) -> _matmul_panel's answer: asked for every matmul, it cost ~3 us
# of a@b's build (the device's renderer looked up)
_PANEL_MEMO: dict[tuple, int] = {}

def _matmul_panel(device: str, itemsize: int, m: int, k: int, n: int, along_k: bool = False) -> int:
  """The panel width (elements) the device's renderer wants a big matmul's right operand copied into (0: used in place).
  along_k: the operand's rows run along k (a transposed view, nn.Linear's weight.T, attention's keys): read in place no
  axis of it is contiguous in n, so it is packed whatever its size, n padded up to a multiple of the panel where needed."""
  key = (device, itemsize, m, k, n, along_k, ContextVar.version)
  if (p := _PANEL_MEMO.get(key)) is None:
    if len(_PANEL_MEMO) >= 4096: _PANEL_MEMO.clear()
    p = _PANEL_MEMO[key] = _matmul_panel_for(device, itemsize, m, k, n, along_k)
  return p

# multiply-adds (see _matmul_panel_for) from which a matmul of odd columns is packed: TinyJit replays of 64x64 @ 64x75
# 50-68 -> 24-28 us, 255x255 @ 255x17 417-427 -> 42-49 us; below it an eager call's second kernel (~30 us) costs more
ODD_N_WORK = 1 << 18
PACK_ROWS = 32   # rows from which a matmul's row-major right operand is packed (see _matmul_panel_for)

def _matmul_panel_for(device: str, itemsize: int, m: int, k: int, n: int, along_k: bool) -> int:
  from tinygrad.device import Device, DeviceError
  # (half the size where the panels are one cache line wide, below)
  if not MATMUL_PACK or not all_int((m, k, n)) or m < 16: return 0
  from tinygrad.codegen.opt import panel_bytes, UNROLL_WORK
  # small: read in place. Below MATMUL_PACK_BYTES, or with fewer than PACK_ROWS rows, which read a row-major operand too
  # few times for its copy to pay (17x1000 @ 1000x1000: 730-800 us packed, 470-550 in place; at 32 rows the same, from 64
  # packing wins); a transposed one is packed (in place it has no vector axis), and MATMUL_PACK_BYTES=0 packs every
  # operand of 16 rows or more (the packed form's tests at odd sizes).
  # odd: a product of at least ODD_N_WORK multiply-adds whose columns have no 4-wide vector divisor (99, 197, 17) runs a
  # scalar kernel in place (512x512 @ 512x197: 12 against 254 GFLOPS at 192 columns), whatever its size: packed, its
  # columns are padded to the widest panel, of at least a vector, that adds at most a quarter
  small = (k * n * itemsize <= MATMUL_PACK_BYTES.value // 2 or (m < PACK_ROWS and MATMUL_PACK_BYTES.value > 0)) and not along_k
  odd = not along_k and m * k * n >= ODD_N_WORK and n >= 4
  if small and not odd: return 0
  try: ren = Device[device if isinstance(device, str) else device[0]].renderer   # (sharded: the first's)
  except DeviceError: return 0   # an unopenable device: the plain form (realizing it raises the reason)
  pb = panel_bytes(ren)
  p = pb // itemsize
  # (so are columns whose vectors are narrower than half the width, where padding to a vector adds at most a quarter: 196
  # columns ran 3.5x 192's time. Attention's 4-wide heads are left alone: packed, the probabilities were stored instead of
  # recomputed in the product with v)
  lanes = ren.vector_bytes // itemsize
  if odd and lanes >= 4 and (n % 4 or (n % (lanes // 2) and (ceildiv(n, lanes) * lanes - n) * 4 <= n)):
    while p > lanes and ceildiv(n, p) * p - n > n // 4: p //= 2
    return p   # (at one vector wide, the padding is less than a vector)
  if small: return 0
  # a tile one cache line wide (AVX2's 16 floats) reads one line of an operand in place per k step, each from another
  # row: a big matmul (UNROLL_WORK multiply-adds) packs it from half of MATMUL_PACK_BYTES (matmul 512 on a Zen 3: its
  # kernel 2.9 -> 2.0 ms packed, the pack ~0.1 ms). AVX-512's 4-line panels read in place ran within 40 us of packed
  # ones at 512, less than the pack's own kernel costs
  half = pb <= ren.matmul_pack and m * k * n >= UNROLL_WORK
  if k * n * itemsize <= MATMUL_PACK_BYTES.value // (2 if half else 1) and not along_k: return 0
  # the widest panel dividing n, narrower ones where it does not; a transposed operand is padded instead, to a panel of
  # at least matmul_pack bytes, where that adds at most a quarter more columns, and so is one no such panel divides (1000
  # in 64-wide panels, not 8-wide ones: 1024x1024 @ 1024x1000 12.8 -> 7.4 ms)
  divides = any(n % (p >> i) == 0 for i in range(p.bit_length()) if (p >> i) * itemsize >= ren.matmul_pack)
  while p > 1:
    if (along_k or not divides) and n % p and n >= 4 * p and p * itemsize >= ren.matmul_pack: return p
    if n % p == 0: return p if n > p else 0
    if p <= 4: return 0
    p //= 2
  return 0

def _rows_along_k(b: UOp) -> bool:
  # b (..., k, n) is a permuted view whose k axis is its source's innermost one (weight.T, k.transpose(-1, -2))
  return b.op is Ops.PERMUTE and b.arg[-2] == len(b.arg) - 1 and b.arg[-1] != len(b.arg) - 1


def _movement_base(u: UOp, shape: tuple[int, ...]) -> UOp | None:
  # the first node of `shape` under u's movement ops (the conv's window view of its input, or the weight's reshape), past a
  # half conv's cast of its operands to float32 (_product_dtype): the gradient is cast back to the operand's dtype
  # (only there, right under the product: a cast lower down is the caller's, whose own gradient rule must run)
  if u.op is Ops.CAST and dtypes.is_float(u.dtype) and dtypes.is_float(u.src[0].dtype) and u.dtype.itemsize > u.src[0].dtype.itemsize: u = u.src[0]
  while u.shape != shape:
    if u.op not in GroupOp.Movement and u.op is not Ops.CONTIGUOUS: return None   # (the flattened form's copy)
    u = u.src[0]
  return u

def _product_dtype(a: DType, b: DType, dtype: DType | str | None) -> tuple[DType, DType | None]:
  """(the dtype of a product of a and b, the wider float dtype its factors are cast to first or None): float16/bfloat16 are
  multiplied in their sum's float32, where each product is exact (11 + 11 or 8 + 8 bits), as torch does; dtype= given,
  that dtype's products (its accumulator, as asked)."""
  pdt = least_upper_dtype(a, b)
  if dtype is None: return pdt, (sum_acc_dtype(pdt) if dtypes.is_float(pdt) and sum_acc_dtype(pdt).itemsize > pdt.itemsize else None)
  # an asked wider dtype, or a float one for int operands: int8 products wrapped before an int32/float32 sum of them
  wide = to_dtype(dtype)
  return pdt, (wide if dtypes.is_float(wide) and not dtypes.is_float(pdt) or wide.itemsize > pdt.itemsize and dtypes.is_float(wide) == dtypes.is_float(pdt) else None)

def _conv_flat(sp: tuple, o_: tuple, s_: tuple) -> bool:
  # the flattened form (conv2d) for 2-d stride-1 convs whose dropped columns are at most a third of the work
  return bool(CONV_FLAT) and len(sp) == 2 and all(s == 1 for s in s_) and all_int(sp) and 2 * sp[1] <= 3 * o_[1]

def _conv_unflat(y: Tensor, sp: tuple, o_: tuple) -> Tensor:
  # (bs, c, P) of the flattened form -> (bs, c, oh, ow): rows of Wp values, each cut to its ow valid columns
  if y.ndim != 3 or len(o_) != 2: return y
  bs, c, _ = y.shape
  return y.shrink(((0, bs), (0, c), (0, o_[0] * sp[1]))).reshape(bs, c, o_[0], sp[1]).shrink(((0, bs), (0, c), (0, o_[0]), (0, o_[1])))

def _flat_grad_base(g: UOp, bs: int, cout: int, sp: tuple, o_: tuple) -> Tensor | None:
  # the flattened form's output gradient as the autograd builds it from the valid one's (bs, cout, oh, ow): columns padded
  # to the row width Wp, rows flattened, the tail padded to P. That valid gradient itself, when g is exactly this: cutting
  # it back out of g left a reshape of a shrink of a reshape of a pad, whose div/mod the index folding does not undo (the
  # next conv's padded copy of it ran at 0.3 GFLOPS with dozens of divisions per element)
  from tinygrad.tensor import Tensor
  if len(o_) != 2 or (base := _movement_base(g, (bs, cout, *o_))) is None or (flat := _movement_base(g, (bs, cout, prod(g.shape) // (bs * cout)))) is None: return None
  t = Tensor(base, requires_grad=False).pad(((0, 0), (0, 0), (0, 0), (0, sp[1] - o_[1]))).reshape(bs, cout, o_[0] * sp[1])
  if flat.shape[-1] > t.shape[-1]: t = t.pad(((0, 0), (0, 0), (0, flat.shape[-1] - t.shape[-1])))
  return Tensor(base, requires_grad=False) if t.uop is flat else None

def conv_backward(red: UOp, g: UOp) -> list[tuple[UOp, UOp]] | None:
  """The gradients of a conv's tagged reduce (conv2d) as [(padded input, d input), (weight, d weight)], each one conv:
  d input is the transposed conv (dy dilated by the stride and padded by the kernel, the weight flipped with in/out
  channels swapped), d weight the conv of the input with dy over the batch (batch and channels swapped, stride and
  dilation exchanged). None when the product is not the conv's (the generic gradient runs)."""
  from tinygrad.tensor import Tensor
  _, xshape, wshape, s_, d_, groups, flat = red.tag
  a, b = red.src[0].src
  xb, wb = _movement_base(a, xshape), _movement_base(b, wshape)
  if xb is None or wb is None: xb, wb = _movement_base(b, xshape), _movement_base(a, wshape)
  if xb is None or wb is None: return None
  (bs, cin_), sp, (cout, cin), hw = xshape[:2], xshape[2:], wshape[:2], wshape[2:]
  nd, rc = len(hw), cout // groups
  o_ = tuple((i - d * (k - 1) - 1) // s + 1 for i, d, k, s in zip(sp, d_, hw, s_))
  X, W, dy = Tensor(xb, requires_grad=False), Tensor(wb, requires_grad=False), Tensor(g, requires_grad=False)
  if flat: dy = v if (v := _flat_grad_base(g, bs, cout, sp, o_)) is not None else _conv_unflat(dy.reshape(bs, cout, -1), sp, o_)
  else: dy = dy.reshape(bs, cout, *o_)
  sdims = tuple(range(2, 2 + nd))
  # dy dilated: each spatial axis (o) -> (o, s) with zeros after each value, cut to (o-1)*s+1
  dyd = dy
  for j, (o, s) in enumerate(zip(o_, s_)):
    if s == 1: continue
    ax = 2 + j
    dyd = dyd.reshape(*dyd.shape[:ax + 1], 1, *dyd.shape[ax + 1:]).pad([(0, 0)] * (ax + 1) + [(0, s - 1)] + [(0, 0)] * (nd - 1 - j))
    dyd = dyd.reshape(*dyd.shape[:ax], o * s, *dyd.shape[ax + 2:]).shrink([(0, n) for n in dyd.shape[:ax]] + [(0, (o - 1) * s + 1)] +
                                                                          [(0, n) for n in dyd.shape[ax + 2:]])
  pads = flatten((d * (k - 1), i - (o - 1) * s - 1) for i, o, s, d, k in reversed(list(zip(sp, o_, s_, d_, hw))))
  wt = W.reshape(groups, rc, cin, *hw).permute(0, 2, 1, *[3 + j for j in range(nd)]).reshape(cin_, rc, *hw).flip(sdims)
  dx = dyd.conv2d(wt, groups=groups, dilation=d_, padding=tuple(pads))
  if CONV_DW_VEC and all_int((bs, cin, rc, *sp, *hw)) and max(cin, rc, groups if cin == rc == 1 else 1) >= CONV_DW_VEC:
    dw = _conv_dweight_vec(X, dy, groups, hw, s_, d_)
  else:
    xt = X.reshape(bs, groups, cin, *sp).permute(2, 1, 0, *[3 + j for j in range(nd)]).reshape(cin, groups * bs, *sp)
    dyt = dy.reshape(bs, groups, rc, *o_).permute(1, 2, 0, *[3 + j for j in range(nd)]).reshape(cout, bs, *o_)
    dw = xt.conv2d(dyt, groups=groups, stride=d_, dilation=s_)   # (cin, cout, >= kernel)
    dw = dw.shrink([(0, cin), (0, cout)] + [(0, k) for k in hw]).reshape(cin, groups, rc, *hw).permute(1, 2, 0, *[3 + j for j in range(nd)])
  return [(xb, dx.uop.cast(xb.dtype)), (wb, dw.reshape(wshape).uop.cast(wb.dtype))]

def _channels_last(t: Tensor, nd: int) -> Tensor:
  # (bs, groups, c, *sp) copied with its channels innermost, returned as the same-shaped view of that copy
  if t.shape[1] * t.shape[2] == 1: return t
  return t.permute(0, *range(3, 3 + nd), 1, 2).contiguous().permute(0, nd + 1, nd + 2, *range(1, nd + 1))

_DW_CHUNK_BYTES = 1 << 20   # the input and dy bytes of one batch chunk of a conv's weight gradient (_conv_dweight_vec)
def _conv_dweight_vec(X: Tensor, dy: Tensor, groups: int, hw: tuple, s_: tuple, d_: tuple) -> Tensor:
  """d weight as one reduce over (batch, *out) of dy times the input's windows, with a channel axis (the wider of cin and
  cout per group; the groups of a depthwise conv) innermost in the output and in a channels-last copy of the operand
  that has it: the heuristics vectorize that axis (stride 1 in the store and the copy, 0 in the other operand) and block
  the other channel axis in registers. As the conv of the input with dy over the batch, the output was (cout, cin, kh,
  kw) with a reduce over dy's whole image per value: scalar loads along the pixels (the MNIST CNN's 5x5 32->32: 9 GFLOPS).
  Returns (groups, cout/groups, cin/groups, *kernel)."""
  bs, nd = X.shape[0], len(hw)
  cin, rc = X.shape[1] // groups, dy.shape[1] // groups
  o_ = dy.shape[2:]
  vec_in = cin >= rc
  depthwise = cin == rc == 1
  x = X.reshape(bs, groups, cin, *X.shape[2:])
  g = dy.reshape(bs, groups, rc, *o_)
  if vec_in or depthwise: x = _channels_last(x, nd)
  if not vec_in or depthwise: g = _channels_last(g, nd)
  win = x._pool(hw, s_, d_)   # (bs, groups, cin, *o_, *hw)
  win = win.permute(0, *range(3, 3 + 2 * nd), 1, 2)   # (bs, *o_, *hw, groups, cin)
  g = g.permute(0, *range(3, 3 + nd), 1, 2)   # (bs, *o_, groups, rc)
  ones = [1] * nd
  if vec_in:   # (bs, *o_, rc, *hw, groups, cin)
    prod_ = win.reshape(bs, *o_, 1, *hw, groups, cin) * g.permute(0, *range(1, 1 + nd), nd + 2, nd + 1).reshape(bs, *o_, rc, *ones, groups, 1)
  else:        # (bs, *o_, cin, *hw, groups, rc)
    prod_ = win.permute(0, *range(1, 1 + nd), 2 * nd + 2, *range(1 + nd, 1 + 2 * nd), 2 * nd + 1).reshape(bs, *o_, cin, *hw, groups, 1) * g.reshape(bs, *o_, 1, *ones, groups, rc)
  # the reduce is cut along the batch into kb chunks, each summed into its own partial dw (a kernel of its own, the chunk
  # axis outermost), the partials summed after: every output tile rereads its chunk's input and dy, so a chunk is kept to
  # _DW_CHUNK_BYTES (it stays in a core's L2 across the tiles; one reduce over the MNIST CNN's whole batch streamed 6.5 MB
  # per tile from L3: 140 GFLOPS, 298 chunked) and to _CHUNK terms per accumulator. The generic split merges (batch, *out)
  # into one axis and cuts that, leaving div/mod in every load's index (scalar loads again)
  per_image = (X.shape[1] * prod(X.shape[2:]) + dy.shape[1] * prod(o_)) * X.dtype.itemsize
  kb = next((d for d in range(1, bs + 1) if bs % d == 0 and bs // d * prod(o_) <= _CHUNK and bs // d * per_image <= _DW_CHUNK_BYTES), bs)
  # but where the kb partials would be over 4x the whole batch's input and dy (a big weight over small images: hlb_cifar10's
  # 512x512 3x3 conv over 4x4 pixels made 4 partials of 9.4 MB from 2 MB, 37.7 MB of a training step's peak), the cache
  # saves less than the partials cost: only as many chunks as the accumulators' _CHUNK terms need
  if kb * groups * cin * rc * prod(hw) > 4 * bs * per_image // X.dtype.itemsize:
    kb = next((d for d in range(1, bs + 1) if bs % d == 0 and bs // d * prod(o_) <= _CHUNK), bs)
  if kb > 1: prod_ = prod_.reshape(kb, bs // kb, *prod_.shape[1:]).sum(tuple(range(1, 2 + nd))).contiguous()
  # stored in this order (the vector channel innermost): permuted in place, the store would run along the kernel taps
  dw = prod_.sum(tuple(range(1 + nd)) if kb == 1 else 0).contiguous()   # (other channel, *hw, groups, vector channel)
  hw_ax = [1 + j for j in range(nd)]
  return dw.permute(nd + 1, 0, nd + 2, *hw_ax) if vec_in else dw.permute(nd + 1, nd + 2, 0, *hw_ax)

def _conv_space_to_depth(xp: Tensor, weight: Tensor, bias: Tensor | None, groups: int, s_: tuple[int, ...], dtype: DType | str | None) -> Tensor:
  """A strided conv (dilation 1) as a stride-1 conv over the input's phases: input row s*o + k with tap k = q*s + p is
  row o + q of phase p, so the phases become channels (cin*m, m = min(s, k) phases per dim) and the kernel ceil(k/s) taps
  of them. The stride-1 conv's loads run along memory (vectorized, register-tiled, the flattened form) where the strided
  one's stride-s loads were scalar (a 3x3 stride-2 conv: 1.78x the multiply-adds, the 7x7 stem 1.31x, 1x1 ones none)."""
  (bs, cin_), (cout, cin), hw, sp = xp.shape[:2], weight.shape[:2], weight.shape[2:], xp.shape[2:]
  nd = len(hw)
  m_ = tuple(min(s, k) for s, k in zip(s_, hw))
  q_ = tuple(ceildiv(k, s) for s, k in zip(s_, hw))
  o_ = tuple((i - k) // s + 1 for i, k, s in zip(sp, hw, s_))
  keep2 = [(0, bs), (0, cin_)]
  # rows cut (or zero-padded) to s*(o + q - 1): exactly the rows the phases' stride-1 windows reach
  x = xp.pad([(0, 0)] * 2 + [(0, max(0, s * (o + q - 1) - i)) for s, o, q, i in zip(s_, o_, q_, sp)])
  x = x.shrink(keep2 + [(0, s * (o + q - 1)) for s, o, q in zip(s_, o_, q_)])
  x = x.reshape(bs, cin_, *flatten((o + q - 1, s) for s, o, q in zip(s_, o_, q_)))
  x = x.shrink(keep2 + flatten(((0, o + q - 1), (0, m)) for o, q, m in zip(o_, q_, m_)))
  x = x.permute(0, 1, *[3 + 2 * j for j in range(nd)], *[2 + 2 * j for j in range(nd)]).reshape(bs, cin_ * prod(m_), *[o + q - 1 for o, q in zip(o_, q_)])
  w = weight.pad([(0, 0)] * 2 + [(0, s * q - k) for s, q, k in zip(s_, q_, hw)]).reshape(cout, cin, *flatten((q, s) for s, q in zip(s_, q_)))
  w = w.shrink([(0, cout), (0, cin)] + flatten(((0, q), (0, m)) for q, m in zip(q_, m_)))
  w = w.permute(0, 1, *[3 + 2 * j for j in range(nd)], *[2 + 2 * j for j in range(nd)]).reshape(cout, cin * prod(m_), *q_)
  return x.conv2d(w, bias, groups=groups, dtype=dtype)

def _dot_uop(a: Tensor, b: Tensor, dtype: DType | str | None, p: int) -> UOp | None:
  """The graph Tensor.dot's ops below build, built on UOps, for the common case: b 2-d, one device, one dtype its own sum's
  (float32), a reduce short enough to stay unsplit. Skips their checks and views' bookkeeping (a@b built
  in ~25 instead of ~45 us of CPU, with the nodes' shapes and devices stored as they are built: ops._view). None: use the
  Tensor ops (the same node: tests/core/test_matmul_graph.py)."""
  au, bu = a.uop, b.uop
  adt = au.dtype
  if dtype is not None or len(bs := bu.shape) != 2 or adt != bu.dtype or sum_acc_dtype(adt) != adt or not isinstance(dev := au.device, str) \
     or dev != bu.device or not all_int(ash := au.shape) or not all_int(bs): return None
  lead, (m, k), n = ash[:-2], ash[-2:], bs[1]
  if k > min(_ACC_RUN, _CHUNK): return None
  one = (1,) * len(lead)
  def expand(u: UOp, shape: tuple[int, ...], full: tuple[int, ...]) -> UOp: return u.reshape(shape).expand(full)
  npad = ceildiv(n, p) * p if p else n
  if p:   # the packed form: b as npad/p contiguous panels of (p, k), zero columns past n
    panels = (bu.pad(((0, 0), (0, npad - n))) if npad != n else bu).reshape((k, npad // p, p)).permute((1, 0, 2))
    bp = _view(Ops.CONTIGUOUS, panels, None, panels.shape).permute((0, 2, 1)).reshape((1, npad // p, p, k))
    full = lead + (m, npad // p, p, k)
    x, y = expand(au, lead + (m, 1, 1, k), full), expand(bp, one + bp.shape, full)
  else:
    full = lead + (m, n, k)
    x, y = expand(au, lead + (m, 1, k), full), expand(bu.permute((1, 0)).reshape((1, n, k)), one + (1, n, k), full)
  # (x * y: the node the operator builds, made here with its shape and device: the operator's checks and the rules' lookups
  # cost ~3 us of the build)
  prod_ = UOp(Ops.MUL, adt, (x, y))
  prod_.__dict__["_shape"], prod_.__dict__["_device"] = full, dev
  out = prod_.r(Ops.ADD, (len(full) - 1,)).reshape(full[:-1])
  if not p: return out
  out = out.reshape(lead + (m, npad))
  # (realized before the cut, as dot's Tensor ops: see there)
  return _view(Ops.CONTIGUOUS, out, None, out.shape).shrink(tuple((0, s) for s in lead + (m, n))) if npad != n else out

class NNMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- linear algebra and nn ----
  def dot(self: Tensor, w: Tensor, dtype: DType | str | None = None) -> Tensor:
    """Matrix product with batching/broadcasting over leading dims (1-d operands as numpy): one reduce over a broadcast product."""
    if self.ndim == 0 or w.ndim == 0: raise ArgumentError(f"matmul: both operands need at least 1 dimension, got shapes {self.shape} and {w.shape}")
    a = self.unsqueeze(0) if self.ndim == 1 else self
    b = w.unsqueeze(-1) if w.ndim == 1 else w
    if a.shape[-1] != b.shape[-2]:
      raise ArgumentError(f"matmul: shapes {shape_str(self.shape)} and {shape_str(w.shape)} do not match: contracted dims "
                          f"{shape_str(a.shape[-1])} != {shape_str(b.shape[-2])}{vals_str(self.shape, w.shape)}")
    try: _broadcast_shape(a.shape[:-2], b.shape[:-2])
    except ValueError: raise ArgumentError(f"matmul: batch dims of shapes {self.shape} and {w.shape} cannot broadcast") from None
    out_dt = least_upper_dtype(a.dtype, b.dtype) if dtype is None else to_dtype(dtype)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    # float16/bfloat16 operands are multiplied in their sum's float32, where each product is exact (11 + 11 or 8 + 8 bits),
    # as torch does: a product rounded to the half type first left ~40% of the outputs off the correctly rounded value (a
    # cast inside the kernel: the loads stay half; a tensor core takes the cast operands as the half inputs they are)
    pdt, wide = _product_dtype(a.dtype, b.dtype, dtype)
    up = (lambda t: t.cast(wide)) if wide is not None else (lambda t: t)
    p = _matmul_panel(self.device, b.dtype.itemsize, m, k, n, _rows_along_k(b.uop))
    if (fast := _dot_uop(a, b, dtype, p)) is not None: ret = Tensor(fast)
    elif p:
      # b copied into n/p panels of (k, p), each contiguous: the kernel reads one panel in order while row blocks of a pass
      npad = ceildiv(n, p) * p
      if npad != n: b = b.pad([(0, 0)] * (b.ndim - 1) + [(0, npad - n)])   # zero columns, cut off the (realized) result
      bp = b.reshape(*b.shape[:-2], k, npad // p, p).transpose(-3, -2).contiguous().transpose(-1, -2)   # (..., n/p, p, k)
      ret = (up(a.reshape(*a.shape[:-2], m, 1, 1, k)) * up(bp.unsqueeze(-4))).sum(-1, dtype=dtype).cast(out_dt)
      ret = ret.reshape(*ret.shape[:-2], npad)
      # realized before the cut: folded into the kernel, the cut would leave it a 197-wide axis of 16-wide panels (scalar)
      if npad != n: ret = ret.contiguous().shrink([(0, s) for s in ret.shape[:-1]] + [(0, n)])
    else: ret = (up(a.reshape(*a.shape[:-2], m, 1, k)) * up(b.transpose(-1, -2).reshape(*b.shape[:-2], 1, n, k))).sum(-1, dtype=dtype).cast(out_dt)
    if self.ndim == 1: ret = ret.squeeze(-2)
    if w.ndim == 1: ret = ret.squeeze(-1)
    return ret
  def matmul(self: Tensor, x: Tensor, reverse: bool = False, dtype: DType | str | None = None) -> Tensor:
    """self @ x (reverse: x @ self)."""
    return x.dot(self, dtype) if reverse else self.dot(x, dtype)
  def linear(self: Tensor, weight: Tensor, bias: Tensor | None = None, dtype: DType | str | None = None) -> Tensor:
    """self @ weight + bias (weight is (in, out); a 1-d weight multiplies elementwise); dtype: all three cast to it first, as
    public tinygrad's."""
    if dtype is not None:
      dt = to_dtype(dtype)
      return self.cast(dt).linear(weight.cast(dt), bias.cast(dt) if bias is not None else None)
    x = self * weight if weight.ndim == 1 else self.dot(weight)
    return x + bias if bias is not None else x
  def sequential(self: Tensor, ll: Sequence[Callable[[Tensor], Tensor]]) -> Tensor:
    """Apply each callable in turn."""
    return functools.reduce(lambda x, f: f(x), ll, self)
  @_opmath   # (float16/bfloat16 in float32, rounded once, as torch: y*y overflows float16 past |y| = 256)
  def layernorm(self: Tensor, axis: int | Sequence[int] = -1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over `axis` (population variance)."""
    dev, _, var = self._centered(axis)
    return dev * var.add(eps).rsqrt()
  def _centered(self: Tensor, axis: int | Sequence[int]) -> tuple[Tensor, Tensor, Tensor]:
    # (x - mean, mean, population variance) over `axis`, kept, by the corrected two-pass (as var) for the normalisations
    # (layernorm, BatchNorm's batch, ONNX's): the deviations from the float32 mean carry its rounding (1000 copies of
    # 1000.1: 0.0011, 18 ulps), which a normalisation scaled up to O(1) (0.33 there, torch's 0); their own mean m takes it
    # back out of the deviations and of the variance. The first mean is detached: mean + m has the mean's gradient, and
    # the result is the same function of x for any shift
    m0 = self.mean(axis, keepdim=True).detach()
    y = self - m0
    m = y.mean(axis, keepdim=True)
    var = (y * y).mean(axis, keepdim=True) - m * m
    return y - m, m0 + m, (var < 0).where(0.0, var)   # (never below 0: rounding)
  def _pool(self: Tensor, k_: Sequence[int], stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1) -> Tensor:
    """Sliding windows over the last len(k_) dims as movement ops: (..., *in) -> (..., *out, *k_)."""
    nk = len(k_)
    if self.ndim < nk: raise ArgumentError(f"pool: kernel {tuple(k_)} has more dims than shape {self.shape}")
    s_, d_ = make_tuple(stride, nk), make_tuple(dilation, nk)
    pre, i_ = self.shape[:-nk], self.shape[-nk:]
    if any(d * (k - 1) + 1 > i for k, d, i in zip(k_, d_, i_)):
      raise ArgumentError(f"pool: kernel {tuple(k_)} with dilation {d_} is larger than the input {i_}")
    o_ = [(i - d * (k - 1) - 1) // s + 1 for i, d, k, s in zip(i_, d_, k_, s_)]
    npre, keep = len(pre), [None] * len(pre)
    # (a symbolic kernel takes this path only if it fits every value: cumsum's k=n decided at n=1 pinned a TinyJit capture to it)
    if all(smax(k) <= s for k, s in zip(k_, s_)) and all(d == 1 for d in d_):
      # windows don't overlap: split each axis into (out, stride) and keep the first k of each stride
      # (padding the shrinks cut away again: a view of self, as torch's unfold, where pad() would be a value of its own)
      x = self._pad_view(tuple([(0, 0)] * npre + [(0, max(0, o * s - i)) for i, o, s in zip(i_, o_, s_)])).shrink(keep + [(0, o * s) for o, s in zip(o_, s_)])
      x = x.reshape(*pre, *flatten((o, s) for o, s in zip(o_, s_))).shrink(keep + flatten(((0, o), (0, k)) for o, k in zip(o_, k_)))
      return x.permute(*range(npre), *[npre + 2*j for j in range(nk)], *[npre + 2*j + 1 for j in range(nk)])
    # overlapping windows: tile the axis and cut it into k rows of length L = f*i + d (L = d mod i), so row a starts a*d
    # elements further; every stride-th column of the first o*s then holds window element a of each output position
    # (a symbolic length takes a count that holds for every value: o*s-d <= i+s-d*k-1, so f <= 1+ceildiv(s-d*k-1, i.vmin);
    # max(1, ceildiv(o*s-d, i)) was decided at the bound value and the shrinks below failed for others)
    f_ = [max(1, ceildiv(o * s - d, i)) if isinstance(i, int) else 1 + max(0, ceildiv(s - d * k - 1, max(1, int(i.vmin))))
          for i, o, s, d, k in zip(i_, o_, s_, d_, k_)]
    L_ = [f * i + d for f, i, d in zip(f_, i_, d_)]
    # (a symbolic length: k*L <= k*(f+1)*i as d <= i, a count the shrink below provably fits, where ceildiv(k*L, i) is not)
    x = self._tile([*[1] * npre, *[ceildiv(k * L, i) if isinstance(i, int) else k * (f + (1 if sint_le(d, i) else d))
                                   for k, L, i, d, f in zip(k_, L_, i_, d_, f_)]])
    x = x.shrink(keep + [(0, k * L) for k, L in zip(k_, L_)]).reshape(*pre, *flatten((k, L) for k, L in zip(k_, L_)))
    x = x.shrink(keep + flatten(((0, k), (0, o * s)) for k, o, s in zip(k_, o_, s_))).reshape(*pre, *flatten((k, o, s) for k, o, s in zip(k_, o_, s_)))
    x = x.shrink(keep + flatten(((0, k), (0, o), (0, 1)) for k, o in zip(k_, o_))).reshape(*pre, *flatten((k, o) for k, o in zip(k_, o_)))
    return x.permute(*range(npre), *[npre + 2*j + 1 for j in range(nk)], *[npre + 2*j for j in range(nk)])
  @staticmethod
  def _pool_pads(padding: int | Sequence[int], dims: int) -> list[int]:
    """Padding as a flat torch-order list (last dim first) for `dims` spatial dims."""
    if isinstance(padding, int): return [padding] * (2 * dims)
    # (a string was read as its characters: 'same' as 4 pads, "invalid literal for int() ... 's'")
    if isinstance(padding, str): raise ValueError(f"padding {padding!r} must be an int or a tuple of ints here, as public tinygrad's; nn.Conv2d takes 'same' and 'valid'")
    if len(padding) == dims: return [p for p in reversed(padding) for _ in range(2)]
    if len(padding) == 2 * dims: return list(padding)
    raise ValueError(f"padding {tuple(padding)} must be an int, {dims} ints (one per spatial dim) or {2*dims} ints (before/after, last dim first)")
  def _ceil_pads(self: Tensor, k_: tuple[int, ...], s_: tuple[int, ...], d_: tuple[int, ...], pads: list[int]) -> list[int]:
    # ceil_mode: the end padding set so a last partial window counts and no window starts in the right padding (public
    # tinygrad's rule; torch's one-window check is the same where it allows the padding, at most half the kernel). It only
    # grew the padding, so a padding past that kept floor mode's windows of padding alone: max -inf, avg 0/0 = NaN
    pads = list(pads)
    for j, (k, s, d) in enumerate(zip(k_, s_, d_)):
      ax = self.ndim - len(k_) + j
      slot = 2 * (len(k_) - 1 - j)
      i, pb, pa = self.shape[ax], pads[slot], pads[slot + 1]
      o = min(ceildiv(i + pb + pa - d * (k - 1) - 1, s), (i + pb - 1) // s) + 1
      pads[slot + 1] = (o - 1) * s + d * (k - 1) + 1 - (i + pb)
      # (the row ends inside the left padding, every window padding alone (n=1, k=1, s=3, padding (2, 0)): the input is
      # cropped whole and the left padding shortened, where a crop past the input raised a shrink error)
      if i + pads[slot + 1] < 0: pads[slot], pads[slot + 1] = pb + i + pads[slot + 1], -i
    return pads
  @staticmethod
  def _window_args(op: str, kernel_size: Any, stride: Any, dilation: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    k_ = _check_positive(op, "kernel_size", tuple(make_tuple(kernel_size, 2)))
    s_ = _check_positive(op, "stride", tuple(make_tuple(stride if stride is not None else k_, len(k_))))
    return k_, s_, _check_positive(op, "dilation", tuple(make_tuple(dilation, len(k_))))
  @overload
  def max_pool2d(self: Tensor, kernel_size: _Win = (2, 2), stride: _Win | None = None, dilation: _Win = 1, padding: _Win = 0, ceil_mode: bool = False,
                 return_indices: Literal[False] = False) -> Tensor: ...
  @overload
  def max_pool2d(self: Tensor, kernel_size: _Win = (2, 2), stride: _Win | None = None, dilation: _Win = 1, padding: _Win = 0, ceil_mode: bool = False, *,
                 return_indices: Literal[True]) -> tuple[Tensor, Tensor]: ...
  def max_pool2d(self: Tensor, kernel_size: _Win = (2, 2), stride: _Win | None = None, dilation: _Win = 1, padding: _Win = 0, ceil_mode: bool = False,
                 return_indices: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Max over sliding windows of the last len(kernel_size) dims (stride defaults to the kernel size). return_indices:
    also the flat index (within each plane of the last len(kernel_size) input dims) of the max, as torch: the first one in
    window order where several are equal, the last NaN where the window has NaNs. The indices are int32 as public
    tinygrad's (torch's are int64), int64 for a plane of more than 2**31 - 1 elements."""
    k_, s_, d_ = Tensor._window_args("max_pool2d", kernel_size, stride, dilation)
    pads = Tensor._pool_pads(padding, len(k_))
    if ceil_mode: pads = self._ceil_pads(k_, s_, d_, pads)
    axes = tuple(range(-len(k_), 0))
    x = self.pad(pads, value=reduce_identity(Ops.MAX, self.dtype))._pool(k_, s_, d_)
    ret = x.max(axes)
    if not return_indices: return ret
    # count the plane's positions down from P, so the largest candidate is the first max; padding gets the minimum. A NaN
    # at position q counts P + 1 + q, above every max: the window's last NaN wins, as torch's (its scan takes every NaN)
    plane = self.shape[-len(k_):]
    P = prod(plane)
    idt = dtypes.int32 if P <= dtypes.max(dtypes.int32) else dtypes.int64
    kdt = dtypes.int32 if 2 * P + 1 <= dtypes.max(dtypes.int32) else dtypes.int64
    idx = Tensor.arange(P, 0, -1, dtype=kdt, device=self.device).reshape(plane).pad(pads, value=dtypes.min(kdt))._pool(k_, s_, d_)
    key = (x == ret.reshape(*ret.shape, *[1] * len(k_))).where(idx, 0)
    if dtypes.is_float(self.dtype): key = x.isnan().where(2 * P + 1 - idx, key)
    key = key.max(axes)
    idx = (key > P).where(key - (P + 1), P - key)
    # a window of padding only (a dilation stepping over a small plane) has no max to point at: torch's index is where its
    # scan starts, the first position at or past 0 in each dim (P minus the padding's key was -2**31 + 5)
    if all_int(plane) and all_int(ret.shape) and (holes := self._pool_holes(k_, s_, d_, pads, ret.shape[-len(k_):], kdt)) is not None:
      idx = holes[0].where(holes[1], idx)
    return ret, idx.cast(idt)
  def _pool_holes(self: Tensor, k_: tuple[int, ...], s_: tuple[int, ...], d_: tuple[int, ...], pads: list[int], out: tuple[int, ...],
                  dt: DType) -> tuple[Tensor, Tensor] | None:
    """The pooling windows that hold no input element, as a bool mask over the output plane, and torch's flat index for
    them: each dim's first window position >= 0 (where its scan starts). None where every window holds one."""
    plane, nd = self.shape[-len(k_):], len(k_)
    hole, start, found = Tensor(False, device=self.device), Tensor(0, dtype=dt, device=self.device), False
    for j, (n, o_n, k, s, d) in enumerate(zip(plane, out, k_, s_, d_)):
      starts = [o * s - pads[2 * (nd - 1 - j)] for o in range(o_n)]
      empty = [not any(0 <= st + t * d < n for t in range(k)) for st in starts]
      shape = [o_n if i == j else 1 for i in range(nd)]
      hole = hole | Tensor(empty, device=self.device).reshape(shape)
      start = start + Tensor([(st + ceildiv(max(0, -st), d) * d) * prod(plane[j + 1:]) for st in starts], dtype=dt, device=self.device).reshape(shape)
      found = found or any(empty)
    return (hole, start) if found else None
  def max_unpool2d(self: Tensor, indices: Tensor, kernel_size: _Win = (2, 2), stride: _Win | None = None, dilation: _Win = 1, padding: _Win = 0,
                   output_size: Sequence[int] | None = None) -> Tensor:
    """The partial inverse of max_pool2d: each value of self (N, C, *spatial) put at its flat index (from max_pool2d's
    return_indices) in a zero (N, C, *output) plane; output_size (the spatial dims, or the whole shape) settles the size
    when several fit, else it is (in - 1)*stride - pad_before - pad_after + dilation*(kernel - 1) + 1. Indices met more
    than once (overlapping windows) take the mean of their values, and each of them gets the whole gradient, as torch."""
    if self.ndim < 3: raise ValueError(f"max_unpool2d: input {self.shape} needs (N, C, *spatial)")
    if indices.shape != self.shape: raise ValueError(f"max_unpool2d: indices {indices.shape} must have the input's shape {self.shape}")
    if not dtypes.is_int(indices.dtype): raise TypeError(f"max_unpool2d: indices need an int dtype, got {indices.dtype}")
    (bs, c), sp = self.shape[:2], self.shape[2:]
    nd = len(sp)
    k_ = _check_positive("max_unpool2d", "kernel_size", tuple(make_tuple(kernel_size, nd)))
    s_ = _check_positive("max_unpool2d", "stride", tuple(make_tuple(stride if stride is not None else k_, nd)))
    d_ = _check_positive("max_unpool2d", "dilation", tuple(make_tuple(dilation, nd)))
    if len(k_) != nd: raise ValueError(f"max_unpool2d: kernel_size {k_} needs one size per spatial dim of {self.shape}")
    if output_size is None:
      pads = Tensor._pool_pads(padding, nd)   # last dim first
      out = tuple((i - 1) * s - pads[2*(nd-1-j)] - pads[2*(nd-1-j)+1] + d * (k - 1) + 1 for j, (i, k, s, d) in enumerate(zip(sp, k_, s_, d_)))
    else: out = tuple(output_size)[-nd:]
    n_out = prod(out)
    _check_oob("max_unpool2d", indices, n_out, 2, False)
    hit = indices.reshape(bs, c, prod(sp), 1) == Tensor.arange(n_out, device=self.device)
    total, count = hit.where(self.reshape(bs, c, prod(sp), 1), 0).sum(2), hit.sum(2)
    # total - total*(count-1)/count is the mean, while the subtracted part is held out of the gradient; only where an index
    # is met more than once (else an inf value would give inf*0 = nan)
    ret = total - (count > 1).where(total * (count - 1) / count.maximum(1), 0).detach()
    return ret.cast(self.dtype).reshape(bs, c, *out)
  def avg_pool2d(self: Tensor, kernel_size: int | tuple[int, ...] = (2, 2), stride: int | tuple[int, ...] | None = None, dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last len(kernel_size) dims (stride defaults to the kernel size)."""
    k_, s_, d_ = Tensor._window_args("avg_pool2d", kernel_size, stride, dilation)
    pads = Tensor._pool_pads(padding, len(k_))
    axes = tuple(range(-len(k_), 0))
    full = self._ceil_pads(k_, s_, d_, pads) if ceil_mode else pads
    if count_include_pad and not ceil_mode: return self.pad(pads)._pool(k_, s_, d_).mean(axes)
    # (float16/bfloat16: the sum kept in float32 and divided there, one rounding as torch's; rounded twice a fifth of the
    # windows' means were an ulp off)
    total = self.pad(full)._pool(k_, s_, d_).sum(axes, dtype=self._acc_dtype() if self.dtype in OPMATH_F32 else None)
    ones = Tensor.ones(self.shape[-len(k_):], device=self.device)
    if count_include_pad: ones = ones.pad(pads, value=1)  # padding counts; the ceil_mode overhang does not
    extra = [f - p for f, p in zip(full, pads)] if count_include_pad else full
    count = ones.pad(extra)._pool(k_, s_, d_).sum(axes)
    return (total / count).cast(self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float)
  def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | tuple[int, ...] = 1, dilation: int | tuple[int, ...] = 1,
             padding: int | tuple[int, ...] = 0, dtype: DType | str | None = None) -> Tensor:
    """Convolution (cross-correlation) over the spatial dims: input (N, Cin, *spatial), weight (Cout, Cin/groups, *kernel)."""
    if self.ndim != weight.ndim or self.ndim < 3: raise AssertedArgumentError(f"conv2d: input {self.shape} and weight {weight.shape} need the same number of dims (>= 3)")
    (bs, cin_), (cout, cin), hw = self.shape[:2], weight.shape[:2], weight.shape[2:]
    _check_positive("conv2d", "groups", (groups,))
    if groups * cin != cin_: raise AssertedArgumentError(f"conv2d: input channels {cin_} != groups ({groups}) * weight in-channels ({cin}) for input {self.shape}, weight {weight.shape}")
    if cout % groups: raise ValueError(f"conv2d: out channels {cout} not divisible by groups {groups}")
    # (a bias of another size broadcast against the output channels: one value added to all of them); torch raises
    if bias is not None and prod(bias.shape) != cout: raise ArgumentError(f"conv2d: bias of shape {bias.shape} needs one value per output channel ({cout},)")
    nd = len(hw)
    _check_positive("conv2d", "stride", tuple(make_tuple(stride, nd)))
    _check_positive("conv2d", "dilation", tuple(make_tuple(dilation, nd)))
    s_, d_, pads = tuple(make_tuple(stride, nd)), tuple(make_tuple(dilation, nd)), Tensor._pool_pads(padding, nd)
    xp, rcout = self.pad(pads), cout // groups
    # an empty batch or channel axis: the plain windowed product (the faster forms and conv_backward's convs divide by and
    # reshape over those sizes: a batch of 0 crashed the padded or strided conv's backward)
    empty = all_int(xp.shape) and 0 in xp.shape[:2]
    if CONV_S2D and not empty and any(s > 1 for s in s_) and all(d == 1 for d in d_) and all_int(xp.shape[2:]) and all_int(hw):
      return _conv_space_to_depth(xp, weight, bias, groups, s_, dtype)
    sp, copy = xp.shape[2:], prod(hw) * rcout >= CONV_PAD_COPY and not empty
    o_ = tuple((i - d * (k - 1) - 1) // s + 1 for i, d, k, s in zip(sp, d_, hw, s_))
    pix: tuple[int, ...]   # the output pixel axes: the flattened padded image's (one), else the output's
    if _conv_flat(sp, o_, s_) and copy:
      # stride 1: the conv runs over the flattened padded image, output p reads input p + ky*dy*Wp + kx*dx, so every load
      # is affine with stride 1 in p and one long pixel axis (a multiple of 16) is vectorized whatever the width; columns
      # p%Wp >= ow are computed and dropped (Wp/ow of the work). The copy holds the zero border and whole zero rows below
      # it for the tail past the end: its kernel runs over (rows, Wp), affine loads (a tail of L - Hp*Wp on the flattened
      # image made its one axis a div/mod of the source's rows: scalar loads, 1.8 ms for the CNN's 128x32x28x28)
      P = ceildiv(o_[0] * sp[1], 16) * 16
      L = P + d_[0] * (hw[0] - 1) * sp[1] + d_[1] * (hw[1] - 1)
      # (planes a whole number of 64-byte lines apart where that adds at most a quarter: a 1x1 conv's vector loads are
      # aligned then, as with L itself; ViT's patch embedding at 210 per plane ran 0.38 instead of 0.32 ms)
      rows = next((r for r in range(ceildiv(L, sp[1]), ceildiv(L * 5, 4 * sp[1]) + 1) if r * sp[1] % 16 == 0), ceildiv(L, sp[1]))
      flat = xp.pad(((0, 0), (0, 0), (0, rows - sp[0]), (0, 0))).contiguous() if any(pads) or rows > sp[0] else xp
      v = flat.reshape(bs, cin_, rows * sp[1])._pool((hw[1],), 1, d_[1]).permute(0, 1, 3, 2)._pool((hw[0],), 1, d_[0] * sp[1])   # (bs, cin_, kw, >= P, kh)
      x, pix = v.permute(0, 1, 3, 4, 2).shrink(((0, bs), (0, cin_), (0, P), (0, hw[0]), (0, hw[1]))), (P,)   # (bs, cin_, P, kh, kw)
    else:
      # the padded input copied once: the conv's loads then have no per-lane border gates (they stay vector loads) and an
      # elementwise producer (the last layer's bn/relu) runs once per input element, not once per (cout, kh, kw) too
      if any(pads) and copy: xp = xp.contiguous()
      x, pix = xp._pool(hw, s_, d_), o_   # (bs, cin_, *out, *hw)
    np_ = len(pix)
    x = x.reshape(bs, groups, cin, 1, *pix, *hw).expand(bs, groups, cin, rcout, *pix, *hw)
    x = x.permute(0, 1, 3, *[4 + j for j in range(np_)], 2, *[4 + np_ + j for j in range(nd)])  # (bs, groups, rcout, *pix, cin, *hw)
    w = weight.reshape(1, groups, rcout, *[1] * np_, cin, *hw)
    # float16/bfloat16 products in their float32 sum's dtype, rounded once at the end (as Tensor.dot and torch): each product
    # rounded to half first left ~30-40% of a half conv's outputs off the correctly rounded value. A cast inside the kernel:
    # the loads and the padded copies stay half. dtype= given: its products and sum, as asked
    pdt, up = _product_dtype(x.dtype, w.dtype, dtype)
    # (each cast right under the product, where conv_backward looks past it: w's after its broadcast)
    ret = ((x.cast(up) * w.expand(x.shape).cast(up)) if up is not None else x * w).sum(tuple(range(-1 - nd, 0)), dtype=dtype)
    u = ret.uop
    if u.op is Ops.RESHAPE and u.src[0].op is Ops.REDUCE_AXIS and u.src[0].src[0].op is Ops.MUL and not empty:
      # tagged so autograd takes conv_backward's convs instead of differentiating the window view (a 4x4 reduce with div/mod
      # indices); one reduce straight off the product only: a split reduce keeps the generic gradient
      ret = Tensor(u.replace(src=(u.src[0].replace(tag=("conv", tuple(xp.shape), tuple(weight.shape), s_, d_, groups, len(pix) != nd)),)))
    # the operands' dtype (int sums are int64: an int8 conv's result wraps to int8, as its matmul's), or the asked one
    out_dt = pdt if dtype is None else to_dtype(dtype)
    if ret.dtype != out_dt: ret = ret.cast(out_dt)
    ret = ret.reshape(bs, cout, *pix)
    # the flattened form is realized as it is (else the scheduler folds the cut into the kernel's ranges and undoes it);
    # what follows (the bias, bn, relu, the next conv's padded copy) reads the valid columns of it. (The bias added in the
    # flat form had a gradient summed over the padded flat one, a gate and a mod per element: the CNN's first conv 6 ms)
    if np_ != nd: ret = _conv_unflat(ret.contiguous(), sp, o_)
    return ret + bias.reshape(1, -1, *[1] * nd) if bias is not None else ret
  def conv_transpose2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: _Win = 1, dilation: _Win = 1,
                       padding: _Win = 0, output_padding: _Win = 0) -> Tensor:
    """Transposed convolution over the spatial dims (any number, like conv2d): input (N, Cin, *spatial), weight
    (Cin, Cout/groups, *kernel) as torch. The input is spread out by the stride (stride-1 zeros between elements) and
    convolved with the flipped kernel, padded by dilation*(kernel-1) - padding (output_padding more at the end)."""
    if self.ndim != weight.ndim or self.ndim < 3: raise ValueError(f"conv_transpose2d: input {self.shape} and weight {weight.shape} need the same number of dims (>= 3)")
    (bs, cin), hw = self.shape[:2], weight.shape[2:]
    nd = len(hw)
    _check_positive("conv_transpose2d", "groups", (groups,))
    if weight.shape[0] != cin: raise ValueError(f"conv_transpose2d: input channels {cin} != weight.shape[0] {weight.shape[0]} for input {self.shape}, weight {weight.shape}")
    if cin % groups: raise ValueError(f"conv_transpose2d: input channels {cin} not divisible by groups {groups}")
    s_ = _check_positive("conv_transpose2d", "stride", tuple(make_tuple(stride, nd)))
    d_ = _check_positive("conv_transpose2d", "dilation", tuple(make_tuple(dilation, nd)))
    op_ = tuple(make_tuple(output_padding, nd))
    if any(not 0 <= o < max(s, d) for o, s, d in zip(op_, s_, d_)):   # torch raises RuntimeError
      raise RuntimeError(f"conv_transpose2d: output_padding {op_} must be >= 0 and smaller than the stride {s_} or the dilation {d_}")
    pads = Tensor._pool_pads(padding, nd)   # last dim first
    # (as torch: an output of size 0 or less is an error naming the sizes, not the inner conv's about its window)
    out = [(i - 1) * s - pads[2*(nd-1-j)] - pads[2*(nd-1-j)+1] + d * (k - 1) + o + 1
           for j, (i, s, d, k, o) in enumerate(zip(self.shape[2:], s_, d_, hw, op_))]
    if all_int(out) and all_int(self.shape[2:]) and all(i > 0 for i in self.shape[2:]) and any(n <= 0 for n in out):
      raise ArgumentError(f"conv_transpose2d: input spatial size {tuple(self.shape[2:])} with kernel {tuple(hw)}, stride {s_}, padding "
                          f"{padding}, dilation {d_} and output_padding {op_} gives output size {tuple(out)}: too small")
    x = self
    if any(s > 1 for s in s_):
      # (.., i) -> (.., i, 1) -> pad to (.., i, s) -> (.., i*s) -> cut the trailing s-1 zeros
      x = x.reshape(bs, cin, *flatten((i, 1) for i in x.shape[2:])).pad([None, None, *flatten((None, (0, s - 1)) for s in s_)])
      x = x.reshape(bs, cin, *[i * s for i, s in zip(self.shape[2:], s_)]).shrink([None, None, *[(0, (i - 1) * s + 1) for i, s in zip(self.shape[2:], s_)]])
    # weight (cin, cout/g, *k) -> (g, cin/g, cout/g, *k) -> (g, cout/g, cin/g, *k), kernel flipped: (cout, cin/g, *k)
    w = weight.reshape(groups, cin // groups, *weight.shape[1:]).transpose(1, 2).flip(*range(3, 3 + nd))
    w = w.reshape(groups * weight.shape[1], cin // groups, *hw)
    cpads = flatten((d * (k - 1) - pads[2*j], d * (k - 1) - pads[2*j+1] + o) for j, (k, d, o) in enumerate(zip(reversed(hw), reversed(d_), reversed(op_))))
    return x.conv2d(w, bias, groups=groups, dilation=d_, padding=tuple(cpads))

  # ---- attention, interpolation ----
  def scaled_dot_product_attention(self: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                   is_causal: bool = False, enable_gqa: bool = False, *, scale: float | None = None) -> Tensor:
    """softmax(self @ key^T * scale + mask) @ value, self the query (..., L, E), key (..., S, E), value (..., S, Ev); scale
    defaults to 1/sqrt(E). attn_mask: bool (True attends) or float (added); is_causal: the lower-triangular (L, S) mask.
    A row with nothing to attend to gives zeros, as torch. enable_gqa: key/value heads (dim -3) are repeated to the query's.
    dropout_p goes through Tensor.dropout (so only while Tensor.training)."""
    if min(self.ndim, key.ndim, value.ndim) < 2: raise ValueError(f"scaled_dot_product_attention: query {self.shape}, key {key.shape}, value {value.shape} need >= 2 dims")
    if not 0 <= dropout_p <= 1: raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got {dropout_p}")
    if is_causal and attn_mask is not None: raise RuntimeError("scaled_dot_product_attention: attn_mask cannot be given with is_causal=True; pass one of them")
    # an int mask (a tokenizer's 0/1 attention_mask) was added to the scores as numbers, attending everywhere: torch raises
    if attn_mask is not None and not (attn_mask.dtype == dtypes.bool or dtypes.is_float(attn_mask.dtype)):
      raise TypeError(f"scaled_dot_product_attention: attn_mask must be bool (True attends) or float (added), got {attn_mask.dtype}; "
                      "for a 0/1 int mask pass mask.bool()")
    if enable_gqa and self.ndim >= 3:
      hq, hk, hv = self.shape[-3], key.shape[-3], value.shape[-3]
      if hk == 0 or hv == 0 or hq % hk or hq % hv: raise RuntimeError(f"scaled_dot_product_attention: key/value heads {hk}/{hv} must divide the query heads {hq} (enable_gqa)")
      key, value = key._repeat_heads(hq // hk), value._repeat_heads(hq // hv)
    L, S = self.shape[-2], key.shape[-2]
    qk = self.matmul(key.transpose(-2, -1), dtype=least_upper_dtype(self.dtype, key.dtype, dtypes.float32))
    qk = qk * (1 / math.sqrt(self.shape[-1]) if scale is None else scale)
    if is_causal: attn_mask = Tensor.arange(S, device=self.device) <= Tensor.arange(L, device=self.device).reshape(L, 1)
    if attn_mask is not None: qk = attn_mask.where(qk, -math.inf) if attn_mask.dtype == dtypes.bool else qk + attn_mask
    # the scores stay in the product's float32 through the softmax, the probabilities are cast to the query's dtype: float16
    # scores rounded first lost their digits (logits near 30 are 1/32 apart: 10-20x torch's error) and overflowed past 65504
    # (inf - inf: a NaN row where torch's is finite)
    if attn_mask is None: p = qk.softmax(-1)
    else:
      # a row masked everywhere: softmax of zeros instead (no NaN, no gradient), then zeros out
      dead = qk._max(-1, keepdim=True) == -math.inf
      p = dead.where(0, dead.where(0, qk).softmax(-1))
    p = p.cast(self.dtype).dropout(dropout_p)
    return p @ value
  def _repeat_heads(self: Tensor, r: int) -> Tensor:
    # (..., H, S, E) -> (..., H*r, S, E), each head r times in a row (torch's repeat_interleave on dim -3)
    if r == 1: return self
    *pre, h, s, e = self.shape
    return self.unsqueeze(-3).expand(*pre, h, r, s, e).reshape(*pre, h * r, s, e)
  def interpolate(self: Tensor, size: Sequence[int], mode: str = "linear", align_corners: bool = False) -> Tensor:
    """Resize the last len(size) dims to `size` (any leading dims), as torch's F.interpolate: mode "nearest" (torch's
    default), "nearest-exact", or "linear" (bilinear/trilinear by the number of dims). Positions are computed in float32
    (linear: float64 for a float64 tensor) as torch does; align_corners (linear only) maps the corner pixels onto each other. uint8 "linear" is torch's own
    fixed-point scheme (int16 weights, each axis rounded back to uint8, the last axis first), so its bytes match torch's;
    other ints' "linear" (torch has none) is public tinygrad's: exact positions, float32 lerps, truncated once."""
    if not isinstance(size, (tuple, list)) or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in size) or not 0 < len(size) <= self.ndim:
      raise ValueError(f"interpolate: size {size!r} must be a tuple of 1..{self.ndim} ints >= 1 (one per trailing dim of {self.shape})")
    if mode not in ("nearest", "nearest-exact", "linear"): raise ValueError(f"interpolate: mode {mode!r} is not one of nearest, nearest-exact, linear (bilinear/trilinear: linear)")
    if align_corners and mode != "linear": raise ValueError(f"interpolate: align_corners is only for mode 'linear', not {mode!r}")
    x = self
    resized = sum(o != s for o, s in zip(size, self.shape[-len(size):]))
    for j, out in reversed(list(enumerate(size))) if dtypes.is_int(self.dtype) else enumerate(size):   # (ints: public tinygrad's order, last axis first)
      ax = self.ndim - len(size) + j
      n = self.shape[ax]
      if out == n: continue   # the identity, in every mode
      if n == 0: raise ValueError(f"interpolate: cannot resize the empty axis {ax} of {self.shape} to {out}")
      if mode == "linear" and self.dtype == dtypes.uint8:
        x = x._lerp_uint8(ax, out, align_corners)
        continue
      if mode == "linear" and dtypes.is_int(self.dtype):
        x = x._lerp_int(ax, out, align_corners, exact=resized == 1)
        continue
      # (torch's linear takes a float64 tensor's positions and weights in float64: float32's were 1e-8 relative off)
      pdt = dtypes.float64 if mode == "linear" and self.dtype == dtypes.float64 else dtypes.float32
      pos = Tensor.arange(out, dtype=pdt, device=self.device)
      if mode == "linear":
        if align_corners: src = pos * ((n - 1) / (out - 1) if out > 1 else 0.0)
        else: src = ((pos + 0.5) * (n / out) - 0.5).maximum(0)
        lo = src.floor().cast(dtypes.int32).minimum(n - 1)
        a, b = x._take_along(ax, lo), x._take_along(ax, (lo + 1).minimum(n - 1))
        # ints, float16 and bfloat16 in float32, cast back once at the end as torch's (each axis' blend rounded to float16
        # left half the values of a bilinear resize an ulp or more off torch's)
        if not dtypes.is_float(a.dtype) or a.dtype.itemsize < 4: a, b = a.cast(dtypes.float32), b.cast(dtypes.float32)
        frac = (src - lo.cast(pdt)).reshape([out if i == ax else 1 for i in range(self.ndim)]).cast(a.dtype)
        # torch's weighted sum: a + (b - a) * frac was NaN between a finite tap and an infinite one (inf - inf), not inf
        x = a * (1 - frac) + b * frac
      else:
        src = (pos + 0.5) * (n / out) if mode == "nearest-exact" else pos * (n / out)
        x = x._take_along(ax, src.floor().cast(dtypes.int32).minimum(n - 1))
    return (x if x.dtype == self.dtype else x.cast(self.dtype))._own(self)   # the same size: a copy, as torch's

  def _lerp_int(self: Tensor, ax: int, out: int, align_corners: bool, exact: bool = False) -> Tensor:
    # ints (torch has no linear resize of them but uint8's): public tinygrad's, each position an exact fraction num/den
    # and a float32 lerp a + (b - a) * frac, truncated to the dtype once at the end. Positions in float32 and torch's
    # a*(1-frac) + b*frac put exact values an ulp low, truncated one off: 35 -> 7 at 1/14 is 33, it gave 32. `exact` (the
    # one axis resized): the blend in int32, a + (b - a) * r / den truncated toward 0, where it fits: the float lerp's frac
    # an ulp high still made -48 -> 50 at 4/14 (-20) -19.99999, truncated to -19
    n = self.shape[ax]
    pos = Tensor.arange(out, dtype=dtypes.int32, device=self.device)
    num, den = (pos * (n - 1), out - 1) if align_corners and out > 1 else (pos * 0, 1) if align_corners else ((pos * 2 + 1) * n - out, 2 * out)
    num = num.clip(0, (n - 1) * den)
    lo = num // den
    shape = [out if i == ax else 1 for i in range(self.ndim)]
    a, b = self._take_along(ax, lo), self._take_along(ax, (lo + 1).minimum(n - 1))
    # (in int32 where |b - a| * r fits, int64 where the device has it and it fits there, else the float lerp below)
    span = (2 << 8 * self.dtype.itemsize) * den   # (a bound of |b - a| * r)
    wide = None if not exact else dtypes.int32 if span < 2**31 else dtypes.int64 if span < 2**63 and _has_dtype(self.device, dtypes.int64) else None
    if wide is not None:
      t = (b.cast(wide) - a.cast(wide)) * (num % den).reshape(shape).cast(wide)
      q = t // den   # (floor, rem = t - q * den in [0, den))
      v = a.cast(wide) + q
      return (v + ((t - q * den != 0) & (v < 0)).cast(wide)).cast(self.dtype)   # (a negative non-integer truncates up)
    frac = ((num % den).cast(dtypes.float32) / den).reshape(shape)
    # b - a in the ints where public tinygrad takes it (signed, 4 bytes or more); narrower ones and unsigned in float32,
    # exact, where theirs wrapped (int8 127 - -128 was -1)
    signed4 = dtypes.is_int(a.dtype) and a.dtype.itemsize >= 4 and not dtypes.is_unsigned(a.dtype)
    diff = (b - a).cast(dtypes.float32) if signed4 else b.cast(dtypes.float32) - a.cast(dtypes.float32)
    return a.cast(dtypes.float32) + diff * frac
  def _lerp_uint8(self: Tensor, ax: int, out: int, align_corners: bool) -> Tensor:
    # torch's uint8 bilinear: per output position the two taps' float weights (a triangle filter, normalised), scaled to
    # ints with the most bits that keep the largest below 2**15, summed in int32 with half an ulp and shifted back
    n = self.shape[ax]
    scale = ((n - 1) / (out - 1) if out > 1 else 0.0) if align_corners else n / out
    delta = 0.5 if align_corners else 0.0
    taps: list[tuple[int, list[float]]] = []
    for i in range(out):
      center = scale * (i + 0.5 - delta)
      lo = max(int(center - 0.5 + delta), 0)
      ws = [max(0.0, 1 - abs(k + lo - center + 0.5 - delta)) for k in range(max(0, min(min(int(center + 1.5 + delta), n) - lo, 2)))]
      total = sum(ws)
      taps.append((lo, [w / total if total else w for w in ws] + [0.0] * (2 - len(ws))))
    wmax, prec = max(max(w) for _, w in taps), 0
    while prec < 22 and int(0.5 + wmax * (1 << (prec + 1))) < 1 << 15: prec += 1
    w0, w1 = ([int(w[k] * (1 << prec) + (0.5 if w[k] >= 0 else -0.5)) for _, w in taps] for k in (0, 1))
    lo_t = Tensor([lo for lo, _ in taps], dtype=dtypes.int32, device=self.device)
    a, b = self._take_along(ax, lo_t).cast(dtypes.int32), self._take_along(ax, (lo_t + 1).minimum(n - 1)).cast(dtypes.int32)
    shape = [out if i == ax else 1 for i in range(self.ndim)]
    w0_t, w1_t = (Tensor(w, dtype=dtypes.int32, device=self.device).reshape(shape) for w in (w0, w1))
    return ((a * w0_t + b * w1_t + (1 << (prec - 1))) >> prec).clip(0, 255).cast(dtypes.uint8)
  def _take_along(self: Tensor, ax: int, idx: Tensor) -> Tensor:
    # the rows idx (1-d) of axis ax: a gather with idx broadcast over the other dims
    return self.gather(ax, idx.reshape([idx.shape[0] if i == ax else 1 for i in range(self.ndim)]).expand(
      [idx.shape[0] if i == ax else s for i, s in enumerate(self.shape)]))

  # ---- activations and normalisations ----
  @_opmath
  def logsigmoid(self: Tensor) -> Tensor:
    """log(sigmoid(x)) = min(x, 0) - log(1 + e**-|x|), without overflow and with the gradient 1/2 at 0."""
    x = self._float()
    pos = x > 0
    m, n = pos.where(x, 0), pos.where(0, x)   # max(x, 0) and min(x, 0), each with the gradient of its own side
    return n - (n - m).exp()._log1p()   # (log(1 + e) lost e's digits: logsigmoid(15) was 17% off, logsigmoid(30) 0)
  def softmin(self: Tensor, axis: int = -1, dtype: DType | str | None = None) -> Tensor:
    """softmax(-x) along `axis`."""
    return (-(self.cast(dtype) if dtype is not None else self)._float()).softmax(axis)   # (-int8(-128) wraps to -128)
  @_opmath   # (float16/bfloat16 in float32, rounded once, as torch's norm: the sum of squares overflowed past 65504, every value 0)
  def normalize(self: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """x / max(||x||_p, eps) along `dim`, as torch.nn.functional.normalize (p: any number or +-inf; 0 counts the nonzeros)."""
    if math.isnan(p): raise ArgumentError(f"normalize: p must be a number or +-inf, got {p}")
    x = self._float()
    d = x._resolve_dim(dim)
    # the +-inf norm is a max (min) with no value over an empty dim: torch raises, this gave an empty result
    if math.isinf(p): x._nonempty(f"normalize(p={p})", d)
    a = x * x.sign()   # |x| with torch's gradient 0 at 0 (Tensor.abs gives -1 there)
    if p == math.inf: norm = a._max(d, keepdim=True)
    elif p == -math.inf: norm = -(-a)._max(d, keepdim=True)
    elif p == 0: norm = (x != 0).sum(d, keepdim=True).cast(x.dtype)
    else:
      # p < 1: pow's slope at a zero element is inf (times |x|'s 0: a NaN gradient over the vector, torch's passes nothing
      # there), so zeros take |x|**p without pow: 0 for 0 < p < 1, and for p < 0 inf (the norm 0)
      nz = a > 0
      s = (x * x if p == 2 else a if p == 1 else a.pow(p) if p > 1 else nz.where(nz.where(a, 1).pow(p), 0 if p > 0 else math.inf)).sum(d, keepdim=True)
      big = s.detach().pow(1 / p) >= eps
      norm = big.where(big.where(s, 1).pow(1 / p), eps)   # the root only of sums away from 0: its gradient there is inf
    return x / norm.maximum(eps)
  def batchnorm(self: Tensor, weight: Tensor | None, bias: Tensor | None, mean: Tensor, invstd: Tensor, axis: int | Sequence[int] = 1) -> Tensor:
    """(x - mean) * weight * invstd + bias, the statistics given per channel of `axis` (public tinygrad's functional form;
    an invstd with fewer dims than `axis` broadcasts as it is)."""
    axes = tuple(self._resolve_dim(a) for a in argfix(axis))
    shape = tuple(s if i in axes else 1 for i, s in enumerate(self.shape))
    x = self - mean.reshape(shape)
    if weight is not None: x = x * weight.reshape(shape)
    x = x * (invstd.reshape(shape) if invstd.ndim == len(axes) else invstd)
    return x if bias is None else x + bias.reshape(shape)
