# mypy: disable-error-code="misc"
"""Tensor methods, reductions (sum/max/mean/var/argmax/logsumexp/softmax) and cumulative ops."""
from __future__ import annotations
import math
from typing import TYPE_CHECKING, Callable, Sequence
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, smax, sint, sint_le, all_bound, reduce_identity
from tinygrad.dtype import DType, dtypes, to_dtype, sum_acc_dtype, OPMATH_F32, uint_of_size
from tinygrad.helpers import prod, ceildiv, SPLIT_REDUCEOP, all_int
from tinygrad.mixin.common import AxisError, EmptyReductionError, _CHUNK, _ACC_RUN, _has_dtype
from tinygrad.mixin.elementwise import _opmath
from tinygrad import multi as _multi
if TYPE_CHECKING: from tinygrad.tensor import Tensor


def _index_dtype(n: sint) -> DType:
  # an index into an axis of n: int32 (public tinygrad's), int64 where n passes int32 (a cast to int32 wrapped negative)
  return dtypes.int64 if smax(n) > dtypes.max(dtypes.int32) else dtypes.int32

CUM_BLOCK = 16       # elements of a running op's block (Tensor._cumalu): its scan costs that many operations per element
CUM_SUM_BLOCK = 32   # the same for a running sum, whose block scan is vectorized
LCSE_BLOCK = 16      # the same for logcumsumexp
CUM_WINDOW = 256     # the longest axis a running op scans as one window (all of a symbolic one, which no block divides)
CUM_WORK = 1 << 20   # operations of a whole-axis scan (n per element) below which it is not blocked

def _small_scan(x: Tensor, n: sint) -> bool:
  # a running op along x's last axis (of n) cheap enough whole to stay one kernel: blocked it takes three more launches
  return isinstance(n, int) and n <= CUM_WINDOW and all_int(x.shape) and prod(x.shape) * n < CUM_WORK

def _max_of_two(a: Tensor, b: Tensor) -> Tensor:
  # max(a, b) as a max over a new axis of 2, for its gradient: a NaN takes it (maximum's passes it whole to both sides of a
  # NaN, torch's: a block scan's NaN carry gave the gradient to the elements it covers too), a tie splits it
  return a.unsqueeze(-1).cat(b.expand(a.shape).unsqueeze(-1), dim=-1)._max(-1)

def _combine(op: Ops) -> Callable[[Tensor, Tensor], Tensor]:
  # a reduce by op as an op on two tensors: how a scan (_cumalu, scatter_reduce's sorted runs) joins partial results
  return {Ops.ADD: Tensor.add, Ops.MUL: Tensor.mul, Ops.MAX: Tensor.maximum}[op]

class ReduceMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- reductions ----
  def _resolve_dim(self: Tensor, dim: int, extra: bool = False) -> int:
    total = self.ndim + int(extra)
    lo, hi = -max(1, total), max(1, total) - 1
    if not isinstance(dim, int): raise TypeError(f"an axis must be an int, got {dim!r} ({type(dim).__name__})")
    if not lo <= dim <= hi: raise AxisError(f"axis {dim} is out of range for a tensor of shape {self.shape} (valid: {lo}..{hi})")
    return dim + total if dim < 0 else dim
  def _axes(self: Tensor, axis: int | Sequence[int] | None) -> tuple[int, ...]:
    if axis is None: return tuple(range(self.ndim))
    axes = tuple(self._resolve_dim(a) for a in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(set(axes)) != len(axes): raise ValueError(f"repeated axis in {axis} for a tensor of shape {self.shape}")
    return tuple(a for a in axes if self.ndim)
  def _reduce(self: Tensor, op: Ops, axis: int | Sequence[int] | None = None, keepdim: bool = False, split_ok: bool = True) -> Tensor:
    axes = self._axes(axis)
    new_shape = tuple(1 if i in axes else s for i, s in enumerate(self.shape)) if keepdim else tuple(s for i, s in enumerate(self.shape) if i not in axes)
    # a reduce over an empty axis stays in the graph (the engine folds it to the identity), so gradients still reach self
    split = self._split_reduce(op, axes) if split_ok else None
    return (split if split is not None else Tensor(self.uop.r(op, axes))).reshape(new_shape)._own(self)   # axes of size 1: a copy
  def _split_reduce(self: Tensor, op: Ops, axes: tuple[int, ...]) -> Tensor | None:
    # a reduce of R elements runs as chunks, each summed by one accumulator, then a reduce of the chunk results (itself
    # split again when needed): chunks of at most _CHUNK keep float32 sums at numpy's pairwise accuracy (one accumulator
    # stalls at 2**24: ones(30000001).sum() gave 16777216), and k >= 8 chunks of a big reduce to few outputs run in
    # parallel (threads, GPU work-groups). None when a plain reduce is fine
    if not all_int(self.shape): return None   # a symbolic size has no fixed chunking: one reduce (one kernel serves every value)
    red = prod(self.shape[a] for a in axes)
    # (a float sum of statistics, past _ACC_RUN terms into at most 256 outputs, is split too: an accumulator lane adding
    # thousands of same-signed values drifts one way, rounding after rounding; BatchNorm's variance over 128x20x20 in a CNN
    # was 3.9e-5 off, torch's 5e-7. Not a matmul's or conv's reduce, whose many outputs keep both cores busy unsplit)
    long_float_sum = op is Ops.ADD and dtypes.is_float(self.dtype) and red > _ACC_RUN and self.numel() // red <= 256
    if not SPLIT_REDUCEOP or red <= _CHUNK and (red < 1 << 15 or self.numel() // red > 16) and not long_float_sum: return None
    kept = tuple(i for i in range(self.ndim) if i not in axes)
    # chunks of whole trailing axes where 8 or more of them fit the bounds below (a batch statistic over (n, h, w): one chunk
    # per image): each axis keeps its own loop, affine in a strided view. Cut from the merged axes, a chunk's index was a
    # div/mod of the view's rows (BatchNorm over a conv's valid columns: scalar loads, 2 ms per statistic in the MNIST CNN)
    sizes = [self.shape[a] for a in axes]
    if (j := next((j for j in reversed(range(1, len(axes))) if 256 <= prod(sizes[j:]) <= _CHUNK and prod(sizes[:j]) >= 8), 0)):
      x = self.permute(kept + axes)
      return Tensor(x.uop.r(op, tuple(range(len(kept) + j, x.ndim)))).contiguous()._reduce(op, tuple(range(len(kept), len(kept) + j)))
    # prefer an exact split (no padding: the loads stay unmasked): k parallel chunks, else a chunk size dividing R
    k = next((d for d in (256, 128, 64, 32, 16, 8) if red % d == 0 and 256 <= red // d <= _CHUNK), 0)
    c = red // k if k else next((d for d in range(_CHUNK, _CHUNK // 4, -1) if red % d == 0), _CHUNK)
    # a float sum's chunks are short (512 to _ACC_RUN terms, the shortest that divides R): the codegen may give a chunk
    # one scalar accumulator (1- and 2-byte loads, x.float() of uint8 or float16, are not vectorized), whose run of
    # 39062 terms put 10M ones * 0.1 6e-4 off and the variance of 10M uint8 pixels 1.2e-4 (numpy's pairwise: 1e-7; a
    # run of 4096 terms: 4e-5)
    if op is Ops.ADD and dtypes.is_float(self.dtype) and c > 512:
      c = next((d for d in range(512, _ACC_RUN + 1) if red % d == 0), _ACC_RUN)
    m = ceildiv(red, c)
    x = self.permute(kept + axes).reshape(*(self.shape[i] for i in kept), red)
    if m * c != red:
      x = x.pad(((0, 0),) * len(kept) + ((0, m * c - red),), value=reduce_identity(op, self.dtype))
    x = x.reshape(*(self.shape[i] for i in kept), m, c)
    return Tensor(x.uop.r(op, (x.ndim-1,))).contiguous()._reduce(op, x.ndim-2)
  def _acc_dtype(self: Tensor) -> DType:
    # ints and bools: int64 (uint64 for uint64), as torch; the 32-bit kind on a device without int64 (WEBGPU)
    if not (dtypes.is_int(self.dtype) or dtypes.is_bool(self.dtype)): return sum_acc_dtype(self.dtype)
    return sum_acc_dtype(self.dtype, self.dtype.itemsize == 8 or _has_dtype(self.device, dtypes.int64))
  def sum(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False, dtype: DType | str | None = None) -> Tensor:
    """Sum over `axis` (all when None). Ints and bools accumulate in and return int64 (uint64 stays uint64), as torch (on a
    device without int64, such as WEBGPU, int32/uint32); float16/bfloat16 accumulate in float32 and return their own dtype."""
    acc = to_dtype(dtype) if dtype is not None else self._acc_dtype()
    # a float16/bfloat16/fp8 dtype= is the result's dtype, its elements summed in float32 and rounded once, as torch's and
    # as without dtype=: accumulated in float16, 4096 x 0.1 stalled at 256 (torch 409.5), in bfloat16 at 32
    narrow = dtype is not None and acc in OPMATH_F32
    ret = (self.cast(acc).cast(sum_acc_dtype(acc)) if narrow else self.cast(acc))._reduce(Ops.ADD, axis, keepdim)
    # a sum starts from +0.0 (torch, numpy): over axes of size 1 the reduce is a reshape, which kept -0.0 ([-0.0].sum() gave -0.0)
    if dtypes.is_float(acc) and all(isinstance(s := self.shape[a], int) and s == 1 for a in self._axes(axis)): ret = ret + 0.0
    return ret.cast(self.dtype) if dtype is None and self.dtype in OPMATH_F32 else ret.cast(acc) if narrow else ret
  def _pick(self: Tensor, x: Tensor, axis: int | Sequence[int], dtype: DType) -> Tensor:
    """The sum over `axis` of the one-hot selection `self.where(x, 0)` (self a mask with at most one True along `axis`:
    indexing, gather, Embedding) in `dtype`, never split into chunks: whole, the codegen turns it into one load per picked
    element, O(picks), where the chunks of a split reduce would each sum their part of the axis (a few picks out of 100000:
    20000x the work). Sharded on `axis`, the shards' picks are selected by which one hit (multi.pick), not added."""
    v = self.where(x, x._const(0, shape=())).cast(dtype)
    if v.uop.op is not Ops.MULTI: return v._reduce(Ops.ADD, axis, split_ok=False)
    axes = v._axes(axis)
    mask = self._broadcast_to(v.shape).uop
    return Tensor(_multi.pick(v.uop, mask, axes)).reshape(tuple(s for i, s in enumerate(v.shape) if i not in axes))._own(v)
  def prod(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False, dtype: DType | str | None = None) -> Tensor:
    """Product over `axis` (ints and bools in int64 as sum, floats in their own dtype, unless `dtype` is given;
    float16/bfloat16 multiply in float32 and round once, as their cumprod)."""
    acc = to_dtype(dtype) if dtype is not None else self.dtype if dtypes.is_float(self.dtype) else self._acc_dtype()
    # (float16 products rounded at every step: 300 x 1.01 was 17.70, float32's 18.45, and unlike cumprod(0)[-1])
    if dtype is None and self.dtype in OPMATH_F32: return self.float()._reduce(Ops.MUL, axis, keepdim).cast(self.dtype)
    # (a float16/bfloat16 dtype= as sum's: the elements cast to it, multiplied in float32, rounded once)
    if acc in OPMATH_F32: return self.cast(acc).float()._reduce(Ops.MUL, axis, keepdim).cast(acc)
    return self.cast(acc)._reduce(Ops.MUL, axis, keepdim)
  def _nonempty(self: Tensor, op: str, axis: int | Sequence[int] | None) -> None:
    # max/min/argmax have no value over nothing (torch raises too): an empty reduced axis is an error, not -inf/+inf
    for a in self._axes(axis):
      n = self.shape[a]
      # a size over bound Variables is checked at their values (x[:n].max(0) at n=0 gave -inf, argmax INT_MIN), and a
      # TinyJit capture records n >= 1 (sint_le) so a replay at n=0 raises JitError rather than return them
      if (n == 0) if isinstance(n, int) else (n.vmin < 1 and all_bound(n) and not sint_le(1, n)):
        raise EmptyReductionError(f"{op} over axis {a} of shape {self.shape}: the axis is empty and {op} has no identity; reduce a "
                                  f"non-empty axis, or give empty rows a value first (e.g. x.pad(..., value=-inf) before {op})")
  def _max(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    # max with the dtype's minimum over an empty axis (for the library's own reductions that mask or handle that case)
    return self._reduce(Ops.MAX, axis, keepdim)
  def max(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Maximum over `axis`; an empty reduced axis raises EmptyReductionError (an IndexError and a ValueError, as torch)."""
    self._nonempty("max", axis)
    return self._reduce(Ops.MAX, axis, keepdim)
  def _window_max(self: Tensor, valid: Tensor, axes: tuple[int, ...]) -> Tensor:
    # the max over `axes` of rows whose positions outside `valid` hold the dtype's minimum as a fill, where the fill is not
    # a view gradient.py's max rule sees through (scatter_reduce's rows of src and self): the value is the plain max, its
    # gradient split among the valid positions equal to it (the NaN ones where it is NaN), none to the fill, which tied an
    # -inf max and lost its share. (The gradient path is a select folded away in the kernel: it costs the forward nothing
    # where the max fuses into its consumer, and a kernel per reduce in it where not, so views of a pad use the rule)
    ret = self._max(axes)
    if not dtypes.is_float(self.dtype): return ret
    m = ret.detach().reshape(tuple(1 if i in self._axes(axes) else s for i, s in enumerate(self.shape)))
    hit = valid._broadcast_to(self.shape) & ((self == m) | (self.isnan() & m.isnan()))
    # (the custom gradient's path: never computed forward, the select of the value folds it away)
    return (hit.where(self, 0.0).sum(axes) / hit.sum(axes).cast(self.dtype))._with_grad(ret.detach(), "same")
  def min(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Minimum over `axis` (an empty reduced axis raises, as max)."""
    self._nonempty("min", axis)
    return self._inverse()._max(axis, keepdim)._inverse()
  def any(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """True where any element along `axis` is nonzero (False over an empty axis)."""
    return self.bool()._max(axis, keepdim)
  def all(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """True where every element along `axis` is nonzero."""
    return self.logical_not().any(axis, keepdim).logical_not()
  def _count(self: Tensor, axis: int | Sequence[int] | None) -> int: return prod(self.shape[a] for a in self._axes(axis))
  def mean(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """Arithmetic mean over `axis` (ints give float32, as public tinygrad, divided from their exact int64 sum; an empty
    reduction gives NaN)."""
    out_dt = self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float
    if self.dtype in (dtypes.int64, dtypes.uint64):
      # their int64 sum wraps past 2**63 (numpy's mean does not: it sums in float64): the high and low 32-bit halves are
      # summed apart (each exact below 2**31 elements) and joined in the float. int64's high half is rounded to nearest, so
      # the low one is signed and small values are all low half (their sum exact: [-3, 5] is not 2**32 - 2**32 + 2)
      if self.dtype == dtypes.uint64: hi_x = self >> 32
      else: hi_x = (self >> 32) + ((self >> 31) & 1)
      lo_x = self - (hi_x << 32)   # (wraps back into range where hi_x << 32 wraps)
      hi, lo = hi_x.sum(axis, keepdim), lo_x.sum(axis, keepdim)
      return (hi.cast(out_dt) * 2.0 ** 32 + lo.cast(out_dt)) / self._count(axis)
    return (self.cast(self._acc_dtype()).sum(axis, keepdim) / self._count(axis)).cast(out_dt)
  @_opmath   # (float16/bfloat16 in float32, rounded once, as torch: their squares' sum (and N) overflow at 65504)
  def var(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    """Variance over `axis`, dividing by N - correction (tinygrad's default correction=1). Ints give float32, as mean."""
    v, s = self._var_scaled(axis, keepdim, correction)
    return v * s * s
  def _pow2_scale(self: Tensor, axis: int | Sequence[int] | None) -> Tensor:
    # 2**floor(log2(max |x|)) over `axis` (kept), from the exponent bits: a scale dividing exactly. 1 where the max is
    # inf or NaN (they pass through as they are), the smallest normal where it is 0 or subnormal
    it = uint_of_size(self.dtype.itemsize)
    mant = dtypes.finfo(self.dtype)[1]
    expo = ((1 << (self.dtype.itemsize * 8 - 1)) - 1) >> mant << mant
    e = self.abs()._max(axis, keepdim=True).bitcast(it) & expo   # (-inf over an empty axis: 1)
    one = self._const(1.0).bitcast(it)
    return (e == expo).where(one, e.maximum(1 << mant)).bitcast(self.dtype).detach()
  def _var_scaled(self: Tensor, axis: int | Sequence[int] | None, keepdim: bool, correction: int) -> tuple[Tensor, Tensor]:
    # (v, s) with the variance v * s * s, s a power of two: the two passes run on x / s (exact), so float32's squares of
    # deviations past 1.8e19 no longer overflow (var([3e19, 1e19, -2e19, 0], correction=0) was inf, torch 3.25e38; var of
    # [1e30, 2e30] inf - inf = NaN) nor those under 1e-19 underflow (std of values near 1e-30 was 0); std is sqrt(v) * s
    if dtypes.is_int(self.dtype) and isinstance(n := self._count(axis), int) and n > 0:
      # the deviations from the first element, exact in int64 (int32 on a device without it) before the float: float32 of
      # [2**30 + 1, 2**30 + 3] is [2**30, 2**30] (variance 0, numpy's 2). Where the difference may wrap, the float's
      first = self[tuple(slice(0, 1) if i in self._axes(axis) else slice(None) for i in range(self.ndim))]
      wide = dtypes.int64 if self.dtype.itemsize == 8 or _has_dtype(self.device, dtypes.int64) else dtypes.int32
      d = self.cast(wide) - first.cast(wide)
      if self.dtype.itemsize >= wide.itemsize:
        d = ((df := self.cast(dtypes.float32) - first.cast(dtypes.float32)).abs() >= 2.0 ** (wide.itemsize * 8 - 2)).where(df, d)
      return d.cast(dtypes.float32)._var_scaled(axis, keepdim, correction)
    n = self._count(axis) - correction
    s = self._float()._pow2_scale(axis)   # (ints over an empty or symbolic axis: as float32)
    x = self / s
    # correction >= N divides by 0: the paths through the mean and through sum(d) (inf times deviations summing to 0) made
    # every gradient NaN; without them it is 2(x - mean)/0: +-inf by the deviation's sign, NaN at the mean (torch: +inf
    # for both signs)
    by_zero = isinstance(n, int) and n <= 0
    d = x - (x.mean(axis, keepdim=True).detach() if by_zero else x.mean(axis, keepdim=True))
    # corrected two-pass: the float32 mean is off by some ulps (300 copies of 65535.0: by 0.15), and every deviation by
    # as much; sum(d)**2/N takes that back out (a constant tensor's variance was 0.022, torch's and numpy's 0). Never
    # below 0 (rounding), whose root would be NaN
    fix = d.sum(axis, keepdim).square() / self._count(axis)
    ss = d.square().sum(axis, keepdim) - (fix.detach() if by_zero else fix)
    ss = (ss < 0).where(0.0, ss)
    # a symbolic count stays symbolic (max in the kernel): a TinyJit replay may have another value
    return ss / (n.maximum(0) if isinstance(n, UOp) else max(0, n)), s.reshape(ss.shape)
  @_opmath   # (float16/bfloat16: the float32 variance's root rounded once; the variance rounded first was 1 ulp off in 1 of 8)
  def std(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> Tensor:
    """Standard deviation over `axis`; its gradient is 0 where it is 0 (torch's; sqrt's 1/(2*0) times 0 was NaN)."""
    v, s = self._var_scaled(axis, keepdim, correction)
    return (v == 0).where(v.detach(), v).sqrt() * s
  def var_mean(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> tuple[Tensor, Tensor]:
    """(var, mean) over `axis`."""
    return self.var(axis, keepdim, correction), self.mean(axis, keepdim)
  def std_mean(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False, correction: int = 1) -> tuple[Tensor, Tensor]:
    """(std, mean) over `axis`."""
    return self.std(axis, keepdim, correction), self.mean(axis, keepdim)
  def argmax(self: Tensor, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum along `axis` (of the flattened tensor when None); NaN counts as the maximum. int32 as
    public tinygrad, int64 where the axis is longer than int32 indexes (it wrapped to a negative index)."""
    if axis is None: return self.flatten().argmax(0).reshape((1,) * self.ndim if keepdim else ())
    ax = self._resolve_dim(axis)
    if self.ndim == 0: return self.flatten().argmax(0)   # a 0-d tensor's axis 0/-1 is itself (as torch): 0, keepdim or not
    n = self.shape[ax]
    self._nonempty("argmax", ax)
    hit = self == self.max(ax, keepdim=True)
    if dtypes.is_float(self.dtype): hit = hit | self.isnan()
    # count down from n so the max picks the first hit
    rev = Tensor.arange(n, 0, -1, dtype=_index_dtype(n), device=self.device).reshape(*[n if i == ax else 1 for i in range(self.ndim)])   # (not default_int: it may be uint8)
    return (n - hit.where(rev, 0).max(ax, keepdim)).cast(_index_dtype(n))
  def argmin(self: Tensor, axis: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum along `axis` (int32, or int64 as argmax)."""
    self._nonempty("argmin", axis)
    return self._inverse().argmax(axis, keepdim)
  @_opmath   # (float16/bfloat16 in float32, rounded once: the sum of exps overflows float16 past 65504)
  def logsumexp(self: Tensor, axis: int | Sequence[int] | None = None, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) over `axis`, computed stably."""
    x = self._float()   # (ints as floats first: x - max in int8 wrapped, logsumexp([-100, 100, 5]) was 156)
    m = x._max(axis, keepdim=True).detach()   # the shift's gradient is 0 exactly: none through max (its rounding noise)
    m = m.isinf().where(0, m)
    ret = (x - m).exp().sum(axis, keepdim=True).log() + m
    return ret if keepdim else ret.reshape(tuple(s for i, s in enumerate(self.shape) if i not in self._axes(axis)))
  def softmax(self: Tensor, axis: int = -1, dtype: DType | str | None = None) -> Tensor:
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    # (ints as floats first: x - max in int8 wrapped, softmax([-100, 100, 5]) was [1, 5e-25, 0])
    return (self.cast(dtype) if dtype is not None else self)._float()._softmax(axis)
  @_opmath   # (float16/bfloat16 in float32, rounded once, as torch: their row sum overflowed past 65504, every probability 0)
  def _softmax(self: Tensor, axis: int) -> Tensor:
    # no gradient through the shift (0 exactly, as torch's); x - max(x) is <= 0 or NaN: exp's upper clamp is not needed
    e = (self - self._max(axis, keepdim=True).detach())._float()._exp(nonpos=True)
    return e * e.sum(axis, keepdim=True).reciprocal()
  def log_softmax(self: Tensor, axis: int = -1, dtype: DType | str | None = None) -> Tensor:
    """log(softmax(x)) along `axis`, computed stably."""
    return (self.cast(dtype) if dtype is not None else self)._float()._log_softmax(axis)   # (ints as floats: as softmax)
  @_opmath   # (float16/bfloat16 in float32, rounded once, as softmax)
  def _log_softmax(self: Tensor, axis: int) -> Tensor:
    ss = self - self._max(axis, keepdim=True).detach()
    return ss - ss._float()._exp(nonpos=True).sum(axis, keepdim=True).log()

  # ---- cumulative ----
  def _cumalu(self: Tensor, axis: int, op: Ops) -> Tensor:
    ax = self._resolve_dim(axis)
    if self.ndim == 0: return self._own(self)
    x = self.transpose(ax, -1)
    n = x.shape[-1]
    # (a max as _max_of_two, for its gradient)
    ident, combine = reduce_identity(op, self.dtype), _max_of_two if op is Ops.MAX else _combine(op)
    reduce: Callable[..., Tensor] = {Ops.ADD: Tensor.sum, Ops.MUL: Tensor.prod, Ops.MAX: Tensor.max}[op]
    pre: list[tuple[int, int] | None] = [None] * (x.ndim - 1)
    # a block's scan costs B operations per element (every prefix of it is reduced whole): blocks of 256 ran a 1000x1000
    # cumsum in 100-200 ms. A sum's block is a reduce of the block masked by k <= j (its loads run along memory, vectorized:
    # 1000x1000 in ~1 ms), the others' a window of the block padded with the identity (scalar loads under the pad's gate)
    # (a symbolic length keeps one window up to 256 elements: its blocks would need a pad by a symbolic amount)
    masked = op is Ops.ADD and isinstance(n, int)
    B, over = (CUM_SUM_BLOCK, CUM_BLOCK) if masked else (CUM_BLOCK, 2 * CUM_BLOCK) if isinstance(n, int) else (CUM_WINDOW, CUM_WINDOW)
    def scan(t: Tensor) -> Tensor:   # the running op along t's last axis, every prefix reduced whole
      m = t.shape[-1]
      if masked and m == B:
        k = Tensor.arange(m, device=self.device)
        return (k.reshape(m, 1) <= k.reshape(1, m)).where(t.unsqueeze(-1), 0).sum(-2)   # [.., k, j]: t_k where k <= j
      return reduce(t.pad([None] * (t.ndim - 1) + [(m-1, 0)], value=ident)._pool((m,)), -1)
    # a size over bound Variables is decided at their value, and a TinyJit capture records the branch (UOp.__bool__): the
    # window of n-1 padding had no form at n = 0 (x[:, :n].cumsum(1) raised 'padding (n-1) >= 0 does not hold')
    if (n == 0) if isinstance(n, int) else (n.vmin < 1 and all_bound(n) and bool(n < 1)): ret = reduce(x.unsqueeze(-1), -1)
    elif n > over and not _small_scan(x, n):
      # blocks of B: scan inside each block, then add the scan of the block totals shifted by one block
      nb = ceildiv(n, B)
      blocks = scan(x.pad(pre + [(0, nb*B - n)], value=ident).reshape(*x.shape[:-1], nb, B))
      totals = blocks.shrink(tuple(pre + [None, (B-1, B)])).reshape(*x.shape[:-1], nb)
      carry = totals._cumalu(-1, op).pad(pre + [(1, -1)], value=ident)
      # the first block takes no carry: a max with the -inf fill split the gradient of an -inf prefix with it (half lost)
      first = Tensor.arange(nb, device=self.device).reshape(nb, 1) == 0
      ret = first.where(blocks, combine(blocks, carry.unsqueeze(-1))).reshape(*x.shape[:-1], nb*B).shrink(tuple(pre + [(0, n)]))
    else: ret = scan(x)
    if op is Ops.MAX and dtypes.is_float(self.dtype):
      # its max reduces tagged: a NaN running max passes its gradient to the NaN, as torch's cummax (a plain max's NaN over
      # the row gave NaN to every element before the first NaN too: their outputs' windows see it). Rebuilt sources first:
      # a reduce may read another (a block's scan reads the blocks before)
      from tinygrad.gradient import NAN_MAX
      done: dict[UOp, UOp] = {}
      for u in ret.uop.toposort(gate=lambda u: u is not x.uop):
        src = tuple(done.get(s, s) for s in u.src)
        tag = NAN_MAX if u.op is Ops.REDUCE_AXIS and u.arg[0] is Ops.MAX and u.tag is None and u is not x.uop else u.tag
        done[u] = u if src == u.src and tag is u.tag else UOp(u.op, u.dtype, src, u.arg, tag)
      ret = Tensor(done[ret.uop])
    return ret.transpose(ax, -1)._own(self)
  @_opmath
  def cumsum(self: Tensor, axis: int = 0) -> Tensor:
    """Running sum along `axis` (ints and bools in int64, as sum; float16/bfloat16 in float32, each value rounded once)."""
    return (self if dtypes.is_float(self.dtype) else self.cast(self._acc_dtype()))._cumalu(axis, Ops.ADD)
  @_opmath
  def cumprod(self: Tensor, axis: int = 0) -> Tensor:
    """Running product along `axis` (ints and bools in int64, as prod; float16/bfloat16 in float32 as cumsum)."""
    return (self if dtypes.is_float(self.dtype) else self.cast(self._acc_dtype()))._cumalu(axis, Ops.MUL)
  def cummax(self: Tensor, axis: int = 0) -> tuple[Tensor, Tensor]:
    """(values, indices) of the running maximum along `axis`, as public tinygrad and torch. An index (int32, int64 past
    int32 as argmax) is the last position at or before i holding the running max (torch's choice on ties)."""
    ax = self._resolve_dim(axis)
    if self.ndim == 0: return self._own(self), self._const(0, dtypes.int32)
    values = self._cumalu(ax, Ops.MAX)
    # the last j <= i with x_j == max(x_0..x_i) is the last j <= i where x_j equals its own running max (or is NaN: the
    # running max is NaN from the first NaN on, and torch's index is the last NaN)
    n = self.shape[ax]
    pos = Tensor.arange(n, device=self.device).reshape(*[n if i == ax else 1 for i in range(self.ndim)])
    at_max = (self == values) | self.isnan() if dtypes.is_float(self.dtype) else self == values
    return values, at_max.where(pos, 0)._cumalu(ax, Ops.MAX).cast(_index_dtype(n))
  def cummin(self: Tensor, axis: int = 0) -> tuple[Tensor, Tensor]:
    """(values, indices) of the running minimum along `axis` (indices as cummax)."""
    values, indices = self._inverse().cummax(axis)
    return values._inverse(), indices
  def _logcumsumexp_small(self: Tensor) -> Tensor:
    # along the last axis (n <= 256): m_i + log sum_{j<=i} exp(x_j - m_i), m the running max (0 where infinite)
    n = self.shape[-1]
    m = self._cumalu(-1, Ops.MAX)
    shift = m.isinf().where(0, m)
    idx = Tensor.arange(n, device=self.device)
    lower = idx.reshape(1, n) <= idx.reshape(n, 1)   # [i, j]: j <= i
    # a prefix holding +inf is +inf: its terms are its infinities (1 each, the rest 0) and its gradient the running max's
    # (the limit, 1 to the infinity). Through e**(inf - 0) it was inf/inf = NaN, and past 256 elements a block total of
    # +inf passed that NaN to every element of its block (torch: NaN at the infinity only)
    top = (m == math.inf).unsqueeze(-1)
    terms = top.where((self.unsqueeze(-2) == math.inf) & lower, (lower & top.logical_not()).where(self.unsqueeze(-2) - shift.unsqueeze(-1), -math.inf).exp())
    return terms.sum(-1).log() + (m == math.inf).where(m, shift)
  @_opmath   # (float16/bfloat16 in float32, rounded once, as logsumexp: in half a third of the prefixes were off by ulps)
  def logcumsumexp(self: Tensor, axis: int = 0) -> Tensor:
    """log(cumsum(exp(x))) along `axis`, stable: each prefix is shifted by its own running max (exp never overflows, early
    small terms are not flushed by a later large one). Blocks of 16 are scanned pairwise, then combined with logaddexp."""
    ax = self._resolve_dim(axis)
    x = self._float()
    if self.ndim == 0: return x
    x = x.transpose(ax, -1)
    n = x.shape[-1]
    pre: list[tuple[int, int] | None] = [None] * (x.ndim - 1)
    # (blocks of B: a block's scan costs ~B exps per element, 256 took 1.3-2.6 s over 1000x1000 (16: 0.11 s; torch 33 ms); a
    # symbolic length keeps one block up to 256, as its pad would be symbolic)
    B = LCSE_BLOCK if isinstance(n, int) else CUM_WINDOW
    if n == 0: ret = x
    elif n <= B or _small_scan(x, n): ret = x._logcumsumexp_small()
    else:
      nb = ceildiv(n, B)
      blocks = x.pad(pre + [(0, nb * B - n)], value=-math.inf).reshape(*x.shape[:-1], nb, B)._logcumsumexp_small()
      totals = blocks.shrink(tuple(pre + [None, (B-1, B)])).reshape(*x.shape[:-1], nb)
      carry = totals.pad(pre + [(1, -1)], value=-math.inf).logcumsumexp(-1)   # everything before each block
      ret = blocks.logaddexp(carry.unsqueeze(-1)).reshape(*x.shape[:-1], nb * B).shrink(tuple(pre + [(0, n)]))
    return ret.transpose(ax, -1)
