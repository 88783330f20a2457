# mypy: disable-error-code="misc"
"""Tensor methods, linear algebra and nn functions: dot/matmul, linear, layernorm, pooling, convolution."""
from __future__ import annotations
import functools
from typing import TYPE_CHECKING, Any, Callable, Sequence
from tinygrad.dtype import DType, dtypes, to_dtype, least_upper_dtype
from tinygrad.helpers import make_tuple, flatten, ceildiv, all_int, MATMUL_PACK, MATMUL_PACK_BYTES
from tinygrad.mixin.common import _broadcast_shape, _check_positive
if TYPE_CHECKING: from tinygrad.tensor import Tensor

def _matmul_panel(device: str, itemsize: int, m: int, k: int, n: int) -> int:
  """The panel width (elements) the device's renderer wants a big matmul's right operand copied into (0: used in place)."""
  from tinygrad.device import Device, DeviceError
  if not MATMUL_PACK or not all_int((m, k, n)) or m < 16 or k * n * itemsize < MATMUL_PACK_BYTES.value: return 0
  try: p = Device[device].renderer.matmul_pack // itemsize
  except DeviceError: return 0   # an unopenable device: the plain form (realizing it raises the reason)
  while p > 4 and n % p: p //= 2   # narrower panels where n is not a multiple of the widest (1000: 8)
  return p if p > 1 and n % p == 0 and n > p else 0


class NNMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- linear algebra and nn ----
  def dot(self: Tensor, w: Tensor, dtype: DType | str | None = None) -> Tensor:
    """Matrix product with batching/broadcasting over leading dims (1-d operands as numpy): one reduce over a broadcast product."""
    if self.ndim == 0 or w.ndim == 0: raise ValueError(f"matmul: both operands need at least 1 dimension, got shapes {self.shape} and {w.shape}")
    a = self.unsqueeze(0) if self.ndim == 1 else self
    b = w.unsqueeze(-1) if w.ndim == 1 else w
    if a.shape[-1] != b.shape[-2]:
      raise ValueError(f"matmul: shapes {self.shape} and {w.shape} do not match: contracted dims {a.shape[-1]} != {b.shape[-2]}")
    try: _broadcast_shape(a.shape[:-2], b.shape[:-2])
    except ValueError: raise ValueError(f"matmul: batch dims of shapes {self.shape} and {w.shape} cannot broadcast") from None
    out_dt = least_upper_dtype(a.dtype, b.dtype) if dtype is None else to_dtype(dtype)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    if (p := _matmul_panel(self.device, b.dtype.itemsize, m, k, n)):
      # b copied into n/p panels of (k, p), each contiguous: the kernel reads one panel in order while row blocks of a pass
      bp = b.reshape(*b.shape[:-2], k, n // p, p).transpose(-3, -2).contiguous().transpose(-1, -2)   # (..., n/p, p, k)
      ret = (a.reshape(*a.shape[:-2], m, 1, 1, k) * bp.unsqueeze(-4)).sum(-1, dtype=dtype).cast(out_dt)
      ret = ret.reshape(*ret.shape[:-2], n)
    else: ret = (a.reshape(*a.shape[:-2], m, 1, k) * b.transpose(-1, -2).reshape(*b.shape[:-2], 1, n, k)).sum(-1, dtype=dtype).cast(out_dt)
    if self.ndim == 1: ret = ret.squeeze(-2)
    if w.ndim == 1: ret = ret.squeeze(-1)
    return ret
  def matmul(self: Tensor, x: Tensor, reverse: bool = False, dtype: DType | str | None = None) -> Tensor:
    """self @ x (reverse: x @ self)."""
    return x.dot(self, dtype) if reverse else self.dot(x, dtype)
  def linear(self: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """self @ weight + bias (weight is (in, out); a 1-d weight multiplies elementwise)."""
    x = self * weight if weight.ndim == 1 else self.dot(weight)
    return x + bias if bias is not None else x
  def sequential(self: Tensor, ll: Sequence[Callable[[Tensor], Tensor]]) -> Tensor:
    """Apply each callable in turn."""
    return functools.reduce(lambda x, f: f(x), ll, self)
  def layernorm(self: Tensor, axis: int | Sequence[int] = -1, eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over `axis` (population variance)."""
    y = self - self.mean(axis, keepdim=True)
    return y * (y * y).mean(axis, keepdim=True).add(eps).rsqrt()
  def _pool(self: Tensor, k_: Sequence[int], stride: int | Sequence[int] = 1, dilation: int | Sequence[int] = 1) -> Tensor:
    """Sliding windows over the last len(k_) dims as movement ops: (..., *in) -> (..., *out, *k_)."""
    nk = len(k_)
    if self.ndim < nk: raise ValueError(f"pool: kernel {tuple(k_)} has more dims than shape {self.shape}")
    s_, d_ = make_tuple(stride, nk), make_tuple(dilation, nk)
    pre, i_ = self.shape[:-nk], self.shape[-nk:]
    if any(d * (k - 1) + 1 > i for k, d, i in zip(k_, d_, i_)):
      raise ValueError(f"pool: kernel {tuple(k_)} with dilation {d_} is larger than the input {i_}")
    o_ = [(i - d * (k - 1) - 1) // s + 1 for i, d, k, s in zip(i_, d_, k_, s_)]
    npre, keep = len(pre), [None] * len(pre)
    if all(k <= s for k, s in zip(k_, s_)) and all(d == 1 for d in d_):
      # windows don't overlap: split each axis into (out, stride) and keep the first k of each stride
      x = self.pad(keep + [(0, max(0, o * s - i)) for i, o, s in zip(i_, o_, s_)]).shrink(keep + [(0, o * s) for o, s in zip(o_, s_)])
      x = x.reshape(*pre, *flatten((o, s) for o, s in zip(o_, s_))).shrink(keep + flatten(((0, o), (0, k)) for o, k in zip(o_, k_)))
      return x.permute(*range(npre), *[npre + 2*j for j in range(nk)], *[npre + 2*j + 1 for j in range(nk)])
    # overlapping windows: tile the axis and cut it into k rows of length L = f*i + d (L = d mod i), so row a starts a*d
    # elements further; every stride-th column of the first o*s then holds window element a of each output position
    L_ = [max(1, ceildiv(o * s - d, i)) * i + d for i, o, s, d in zip(i_, o_, s_, d_)]
    x = self.repeat(*[1] * npre, *[ceildiv(k * L, i) for k, L, i in zip(k_, L_, i_)])
    x = x.shrink(keep + [(0, k * L) for k, L in zip(k_, L_)]).reshape(*pre, *flatten((k, L) for k, L in zip(k_, L_)))
    x = x.shrink(keep + flatten(((0, k), (0, o * s)) for k, o, s in zip(k_, o_, s_))).reshape(*pre, *flatten((k, o, s) for k, o, s in zip(k_, o_, s_)))
    x = x.shrink(keep + flatten(((0, k), (0, o), (0, 1)) for k, o in zip(k_, o_))).reshape(*pre, *flatten((k, o) for k, o in zip(k_, o_)))
    return x.permute(*range(npre), *[npre + 2*j + 1 for j in range(nk)], *[npre + 2*j for j in range(nk)])
  @staticmethod
  def _pool_pads(padding: int | Sequence[int], dims: int) -> list[int]:
    """Padding as a flat torch-order list (last dim first) for `dims` spatial dims."""
    if isinstance(padding, int): return [padding] * (2 * dims)
    if len(padding) == dims: return [p for p in reversed(padding) for _ in range(2)]
    if len(padding) == 2 * dims: return list(padding)
    raise ValueError(f"padding {tuple(padding)} must be an int, {dims} ints (one per spatial dim) or {2*dims} ints (before/after, last dim first)")
  def _ceil_pads(self: Tensor, k_: tuple[int, ...], s_: tuple[int, ...], d_: tuple[int, ...], pads: list[int]) -> list[int]:
    # ceil_mode: extra padding at the end so a last partial window counts, unless it would start in the right padding
    pads = list(pads)
    for j, (k, s, d) in enumerate(zip(k_, s_, d_)):
      ax = self.ndim - len(k_) + j
      slot = 2 * (len(k_) - 1 - j)
      i, pb, pa = self.shape[ax], pads[slot], pads[slot + 1]
      span = i + pb + pa - d * (k - 1) - 1
      o = ceildiv(span, s) + 1
      if (o - 1) * s >= i + pb: o -= 1
      pads[slot + 1] += max(0, (o - 1) * s + d * (k - 1) + 1 - (i + pb + pa))
    return pads
  @staticmethod
  def _window_args(op: str, kernel_size: Any, stride: Any, dilation: Any) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    k_ = _check_positive(op, "kernel_size", tuple(make_tuple(kernel_size, 2)))
    s_ = _check_positive(op, "stride", tuple(make_tuple(stride if stride is not None else k_, len(k_))))
    return k_, s_, _check_positive(op, "dilation", tuple(make_tuple(dilation, len(k_))))
  def max_pool2d(self: Tensor, kernel_size: int | tuple[int, ...] = (2, 2), stride: int | tuple[int, ...] | None = None, dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] = 0, ceil_mode: bool = False) -> Tensor:
    """Max over sliding windows of the last len(kernel_size) dims (stride defaults to the kernel size)."""
    k_, s_, d_ = Tensor._window_args("max_pool2d", kernel_size, stride, dilation)
    pads = Tensor._pool_pads(padding, len(k_))
    if ceil_mode: pads = self._ceil_pads(k_, s_, d_, pads)
    x = self.pad(pads, value=dtypes.min(self.dtype))._pool(k_, s_, d_)
    return x.max(tuple(range(-len(k_), 0)))
  def avg_pool2d(self: Tensor, kernel_size: int | tuple[int, ...] = (2, 2), stride: int | tuple[int, ...] | None = None, dilation: int | tuple[int, ...] = 1,
                 padding: int | tuple[int, ...] = 0, ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    """Mean over sliding windows of the last len(kernel_size) dims (stride defaults to the kernel size)."""
    k_, s_, d_ = Tensor._window_args("avg_pool2d", kernel_size, stride, dilation)
    pads = Tensor._pool_pads(padding, len(k_))
    axes = tuple(range(-len(k_), 0))
    full = self._ceil_pads(k_, s_, d_, pads) if ceil_mode else pads
    if count_include_pad and not ceil_mode: return self.pad(pads)._pool(k_, s_, d_).mean(axes)
    total = self.pad(full)._pool(k_, s_, d_).sum(axes)
    ones = Tensor.ones(self.shape[-len(k_):], device=self.device)
    if count_include_pad: ones = ones.pad(pads)  # padding counts; the ceil_mode overhang does not
    extra = [f - p for f, p in zip(full, pads)] if count_include_pad else full
    count = ones.pad(extra)._pool(k_, s_, d_).sum(axes)
    return (total / count).cast(self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float)
  def conv2d(self: Tensor, weight: Tensor, bias: Tensor | None = None, groups: int = 1, stride: int | tuple[int, ...] = 1, dilation: int | tuple[int, ...] = 1,
             padding: int | tuple[int, ...] = 0, dtype: DType | str | None = None) -> Tensor:
    """Convolution (cross-correlation) over the spatial dims: input (N, Cin, *spatial), weight (Cout, Cin/groups, *kernel)."""
    if self.ndim != weight.ndim or self.ndim < 3: raise ValueError(f"conv2d: input {self.shape} and weight {weight.shape} need the same number of dims (>= 3)")
    (bs, cin_), (cout, cin), hw = self.shape[:2], weight.shape[:2], weight.shape[2:]
    _check_positive("conv2d", "groups", (groups,))
    if groups * cin != cin_: raise ValueError(f"conv2d: input channels {cin_} != groups ({groups}) * weight in-channels ({cin}) for input {self.shape}, weight {weight.shape}")
    if cout % groups: raise ValueError(f"conv2d: out channels {cout} not divisible by groups {groups}")
    nd = len(hw)
    _check_positive("conv2d", "stride", tuple(make_tuple(stride, nd)))
    _check_positive("conv2d", "dilation", tuple(make_tuple(dilation, nd)))
    x = self.pad(Tensor._pool_pads(padding, nd))._pool(hw, stride, dilation)  # (bs, cin_, *out, *hw)
    rcout, oyx = cout // groups, x.shape[2:2 + nd]
    x = x.reshape(bs, groups, cin, 1, *oyx, *hw).expand(bs, groups, cin, rcout, *oyx, *hw)
    x = x.permute(0, 1, 3, *[4 + j for j in range(nd)], 2, *[4 + nd + j for j in range(nd)])  # (bs, groups, rcout, *out, cin, *hw)
    w = weight.reshape(1, groups, rcout, *[1] * nd, cin, *hw)
    ret = (x * w).sum(tuple(range(-1 - nd, 0)), dtype=dtype).reshape(bs, cout, *oyx)
    return ret if bias is None else ret + bias.reshape(1, -1, *[1] * nd)
