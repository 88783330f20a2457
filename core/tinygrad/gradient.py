"""Reverse-mode autodiff on the tensor-level UOp graph, and the Tensor-facing backward/gradient/no_grad/train.

`compute_gradient` walks the graph once in reverse topological order (iterative: no recursion limit) and applies the
per-op derivative rules of `pm_gradient`. Each rule gets the node and its incoming gradient as `ctx` and returns one
gradient per source (None: that source gets no gradient). Gradients of a node used several times are summed.

Ties: MAX (binary and REDUCE_AXIS MAX) splits the gradient equally among the tied inputs, like tinygrad.
PROD (REDUCE_AXIS MUL): the product of the other inputs, as torch (prod/x where x != 0; so 0 at a 0 among several).
"""
from __future__ import annotations
import math, weakref, contextlib, gc, itertools
from typing import TYPE_CHECKING, Any, cast
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, substitute_all, reduce_identity
from tinygrad.uop.upat import UPat, PatternMatcher
from tinygrad.dtype import DType, dtypes, sum_acc_dtype
from tinygrad.helpers import argsort
from tinygrad.engine.buffers import reshape_base, reshape_chain
if TYPE_CHECKING:
  from tinygrad.tensor import Tensor

# ---- tensor-level constants: CONST(DEVICE) reshaped and expanded to a node's shape ----
_dev_cache: weakref.WeakKeyDictionary[UOp, str] = weakref.WeakKeyDictionary()
def _device(u: UOp) -> str:
  # walk down the first-source chain; memoise the whole path so a graph costs O(nodes) in total
  path: list[UOp] = []
  while u not in _dev_cache:
    if u.op is Ops.DEVICE:
      _dev_cache[u] = u.arg
      break
    if u.op is Ops.COPY: u2 = u.src[1]
    elif u.op is Ops.BUFFER: u2 = u.src[1]
    elif u.src: u2 = u.src[0]
    else: raise ValueError(f"{u.op} has no device")
    path.append(u)
    u = u2
  dev = _dev_cache[u]
  for p in path: _dev_cache[p] = dev
  return dev

def const_like(x: UOp, v: Any) -> UOp:
  """A tensor-level constant `v` with the dtype, device and shape of tensor node `x`."""
  c = UOp.const(x.dtype, v, src=(UOp(Ops.DEVICE, arg=x.device if x.op is Ops.MULTI else _device(x)),))
  return c.reshape((1,)*len(x.shape)).expand(x.shape)

def _max_grad(x: UOp, y: UOp, g: UOp) -> UOp:
  # the gradient of max(x, y) w.r.t. x: none where x loses, half of it on a tie, else all of it (torch's: a NaN on either side
  # passes it to both)
  return x.alu(Ops.CMPLT, y).where(const_like(g, 0), x.eq(y).where(g * const_like(g, 0.5), g))

def _is_fill(u: UOp, dtype: DType) -> bool:
  """u is a broadcast constant of the max's identity (the dtype's minimum: -inf for floats)."""
  while u.op in (Ops.RESHAPE, Ops.EXPAND): u = u.src[0]
  return u.op is Ops.CONST and u.arg == reduce_identity(Ops.MAX, dtype)

def _from_input(x: UOp) -> UOp | None:
  """True where an element of x (movement ops over a select with a branch of the max's identity: max_pool2d's and cummax's
  padding, Tensor.pad(value=-inf)'s form, a masked fill of -inf) comes from the input, False where it is that fill; None
  where x is no such view. Only the identity: a fill of another value (x.pad((1, 1)) of zeros, where(m, x, 0)) ties a max
  of that value as an element does in torch, which splits the gradient with it."""
  chain: list[UOp] = []
  u = x
  while u.op in GroupOp.Movement:
    chain.append(u)
    u = u.src[0]
  if u.op is not Ops.WHERE: return None
  if _is_fill(u.src[2], x.dtype) and not _is_fill(u.src[1], x.dtype): real = u.src[0]
  elif _is_fill(u.src[1], x.dtype) and not _is_fill(u.src[2], x.dtype): real = u.src[0].alu(Ops.CMPNE, const_like(u.src[0], True))
  else: return None
  for n in reversed(chain): real = getattr(real, n.op.name.lower())(n.arg)
  return real

# a REDUCE_AXIS MAX tagged NAN_MAX (cummax's) passes a NaN max's gradient to its NaNs, as torch's cummax (and max(dim)) does;
# an untagged one gives NaN over the row, as torch's amax and public tinygrad's max
NAN_MAX = "nan_max"

def _reduce_max_grad(ret: UOp, x: UOp, g: UOp, axes: tuple[int, ...]) -> UOp:
  # the gradient flows to every position equal to the max, split equally among ties. A fill of -inf (max_pool2d's and
  # cummax's padding) is no tie: it has nowhere to pass a share, which was lost where it tied an -inf max
  m = ret.expand(x.shape)
  nan_max = m.alu(Ops.CMPNE, m)
  mask = x.eq(m) | (x.alu(Ops.CMPNE, x) & nan_max) if ret.tag == NAN_MAX else x.eq(m)
  if x.op is not Ops.MULTI and (real := _from_input(x)) is not None: mask = real.where(mask, const_like(mask, False))
  cnt = mask.where(const_like(x, 1.0), const_like(x, 0.0)).r(Ops.ADD, axes)
  eg = (g / cnt.cast(g.dtype)).expand(x.shape)
  # a NaN max matches no input (untagged): NaN over its row, as torch's amax, by a select (g/0 * 0 was it, but WGSL's compiler
  # folds y*0 to 0). A max that is the fill matches none either, and no input gets a gradient ((x > 0).where(x, 0).max() of
  # x <= 0: all 0)
  if ret.tag == NAN_MAX: return mask.where(eg, const_like(eg, 0))
  return mask.where(eg, nan_max.where(const_like(eg, math.nan), const_like(eg, 0)))

def _binary_max_grad(g: UOp, ret: UOp) -> tuple[UOp, UOp]:
  from tinygrad.multi import SHARD_MAX_CHAIN
  x, y = ret.src
  if ret not in SHARD_MAX_CHAIN: return (_max_grad(x, y, g), _max_grad(y, x, g))
  # the cross-device combine of a sharded max: g whole to each side that is not smaller; _shard_max_grad splits it among ties
  return (x.alu(Ops.CMPLT, y).where(const_like(g, 0), g), y.alu(Ops.CMPLT, x).where(const_like(g, 0), g))

def _shard_max_grad(ret: UOp, x: UOp, g: UOp, info: tuple) -> UOp:
  # one device's max over a sharded axis (multi.SHARD_MAX_PARTS): the chain passed g whole to every device whose max ties the
  # overall one, so split it by the count of ties over all the shards, as one device's max would
  from tinygrad.multi import combine_shards, local_max
  m, axes, i = info
  top = combine_shards(Ops.MAX, m, axes, local_max(m, axes))   # the forward's own max (the same nodes, unless flags changed)
  ties = [s.eq(t.expand(s.shape)).where(const_like(s, 1.0), const_like(s, 0.0)).r(Ops.ADD, axes) for s, t in zip(m.src, top)]
  cnt = combine_shards(Ops.ADD, m, axes, ties)[i]
  eg = (g / cnt.cast(g.dtype)).expand(x.shape)
  # a NaN anywhere in the row: NaN over it, as one device gives (here this shard's max may be a number that the chain passed on)
  return cnt.eq(const_like(cnt, 0)).expand(x.shape).where(const_like(eg, math.nan), x.eq(ret.expand(x.shape)).where(eg, const_like(eg, 0)))

def _sum_to(g: UOp, shape: tuple[int, ...]) -> UOp:
  # undo an EXPAND: sum the expanded axes (in the accumulation dtype, so half grads keep their precision)
  axes = tuple(i for i, (s, n) in enumerate(zip(shape, g.shape)) if s != n)
  acc = sum_acc_dtype(g.dtype)
  return g.cast(acc).r(Ops.ADD, axes).cast(g.dtype).reshape(shape)

def _pow_grad(ret: UOp, x: UOp, y: UOp, g: UOp) -> tuple[UOp, UOp]:
  # torch's: 0 for y == 0 (not 0 * x**-1, nan at x = 0), and for the exponent g times a factor 0 where x == 0 and y >= 0
  # (not 0 * log 0): g * 0, NaN where g is infinite, as torch (a where around g gave 0 there). A NaN y is not >= 0: its
  # factor stays NaN at x == 0 (it was 0: y < 0 was the test)
  zero = const_like(g, 0.0)
  dx = y.eq(const_like(y, 0.0)).where(zero, g * y * UOp(Ops.POW, x.dtype, (x, y - const_like(y, 1))))
  dy = ret * x.log2() * const_like(x, math.log(2))
  dy = g * (y.alu(Ops.CMPLT, const_like(y, 0.0)) | y.ne(y)).where(dy, x.eq(const_like(x, 0.0)).where(zero, dy))
  return dx, dy

# A decomposition that is accurate forward need not have an accurate derivative (e**x by range reduction and a Taylor
# polynomial differentiates to the polynomial's derivative, and to 0 past its clamp at +inf; a `where` over domains feeds
# a NaN branch's gradient). Such a function returns WHERE(True, value, x) tagged (CUSTOM_GRAD, name): the forward pass is
# `value` (the kernel folds True ? a : b to a), and its gradient w.r.t. x is GRAD_RULES[name](g, value, x), torch's formula.
CUSTOM_GRAD = "custom_grad"
def _t(u: UOp) -> Tensor: return _tensor_cls()(u, requires_grad=False)   # a rule that needs a Tensor method (cos, sinh ...)
GRAD_RULES: dict[str, Any] = {
  "same": lambda g, y, x: g,                                                                # x's gradient, for a value that is x but for its edges
  "nan_at_inf": lambda g, y, x: (_t(x).isinf() & (_t(g) != 0)).uop.where(const_like(g, math.nan), g),  # g, NaN at +-inf (d(x - x) there); 0 stays 0
  "exp": lambda g, y, x: g * y,                                                             # d e^x = e^x
  "cos": lambda g, y, x: -(g * x.sin()),                                                    # d cos x = -sin x
  "tan": lambda g, y, x: g * (const_like(y, 1.0) + y * y),                                  # d tan x = 1 + tan^2 x
  "acosh": lambda g, y, x: g / (x * x - const_like(x, 1.0)).sqrt(),                         # d acosh x = 1/sqrt(x^2-1)
  "atanh": lambda g, y, x: g / (const_like(x, 1.0) - x * x),                                # d atanh x = 1/(1-x^2)
  "asin": lambda g, y, x: g / (const_like(x, 1.0) - x * x).sqrt(),                         # d asin x = 1/sqrt(1-x^2)
  "acos": lambda g, y, x: -g / (const_like(x, 1.0) - x * x).sqrt(),                        # d acos x = -1/sqrt(1-x^2)
  "asinh": lambda g, y, x: g / (x * x + const_like(x, 1.0)).sqrt(),                        # d asinh x = 1/sqrt(x^2+1)
  "atan": lambda g, y, x: g / (x * x + const_like(x, 1.0)),                                 # d atan x = 1/(1+x^2)
  "sinh": lambda g, y, x: g * _t(x).cosh().uop,                                             # d sinh x = cosh x (no overflow short of its own)
  "cosh": lambda g, y, x: g * _t(x).sinh().uop,                                             # d cosh x = sinh x
  "mish": lambda g, y, x: g * _mish_grad(_t(x)).uop,                                        # torch's formula, below
  "erf": lambda g, y, x: g * ((_t(x) * _t(x)).neg().exp() * (2 / math.sqrt(math.pi))).uop,    # d erf x = 2/sqrt(pi) e^-x^2
  "softplus": lambda g, y, x, beta, th: _softplus_grad(_t(g), _t(x), beta, th).uop,         # g past the threshold, else g sigmoid(bx)
  "relu": lambda g, y, x: _outside(x, 0.0, None).where(const_like(g, 0.0), g),              # torch's: 0 at x <= 0 (-0.0 too)
  "hardtanh": lambda g, y, x, lo, hi: _outside(x, lo, hi).where(const_like(g, 0.0), g),    # 0 at and past the bounds
  "pow_neg_int": lambda g, y, x, n: g * (_t(x)._pow_int(1 - n).reciprocal() * n).uop,              # d x^n = n x^(n-1) (n < 0)
  "bce_log": lambda g, y, x: _bce_grad(_t(g), _t(x), False).uop,                            # d log x as torch's BCE: (1-x)/max(x(1-x), 1e-12)
  "bce_log1m": lambda g, y, x: _bce_grad(_t(g), _t(x), True).uop,                           # d log(1-x) as torch's BCE: -x/max(x(1-x), 1e-12)
}
def _outside(x: UOp, lo: float, hi: float | None) -> UOp:
  # x <= lo or x >= hi (False at NaN: torch passes the gradient there)
  c_lo = const_like(x, lo)
  ret = x.alu(Ops.CMPLT, c_lo) | x.eq(c_lo)
  return ret if hi is None else ret | const_like(x, hi).alu(Ops.CMPLT, x) | x.eq(const_like(x, hi))
def _softplus_grad(g: Tensor, x: Tensor, beta: float, th: float) -> Tensor:
  # torch's formula: NaN at a NaN input (the max/abs form's own chain gave 1 there: max's gradient picked a side)
  return (x * beta > th).where(g, g * (x * beta).sigmoid())
def _bce_grad(g: Tensor, x: Tensor, one_minus: bool) -> Tensor:
  # binary_crossentropy's two clamped logs: torch's gradient (x - y)/max(x(1-x), 1e-12), split between the y log x and the
  # (1-y) log(1-x) terms. The logs' own chain gave 0 * inf = NaN at x = 0 or 1 (the clamp's side times 1/x), whatever y.
  # float16/bfloat16 in float32, g too, rounded once (1e-12 is 0 in float16 and 1e12 inf: a term with g = 0 gave NaN)
  f, gf = (x.float(), g.float()) if x.dtype.itemsize < 4 else (x, g)
  d = (f * (1 - f)).maximum(1e-12)
  return (gf * (-f if one_minus else 1 - f) / d).cast(x.dtype)
def _mish_grad(x: Tensor) -> Tensor:
  # d x tanh(sp(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2): the chain through tanh and softplus overflows its incoming
  # gradient (x * 2 at x = 3.4e38) and multiplies inf by 0
  tsp = x.softplus().tanh()
  return tsp + x * x.sigmoid() * (1 - tsp * tsp)
def _where_grad(ctx: UOp, ret: UOp) -> tuple[UOp | None, ...]:
  # y is `ret` itself, not its value src[1]: a gradient of this gradient then takes the rule again (src[1]'s own graph may
  # have no gradient rule, LDEXP, or differentiate to the polynomial's derivative)
  if isinstance(ret.tag, tuple) and ret.tag[0] == CUSTOM_GRAD: return (None, None, GRAD_RULES[ret.tag[1]](ctx, ret, ret.src[2], *ret.tag[2:]))
  return (None, ret.src[0].where(ctx, const_like(ctx, 0)), ret.src[0].where(const_like(ctx, 0), ctx))

# Tensor.contiguous_backward is a DETACH with this tag: an identity in the forward pass (the scheduler passes DETACH
# through), while its gradient passes, made contiguous; an untagged DETACH stops gradients
CONTIGUOUS_BACKWARD = "contiguous_backward"
def _walks(n: UOp) -> bool: return not (n.op is Ops.DETACH and n.tag != CONTIGUOUS_BACKWARD)

_nograd = (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.IDIV, Ops.MOD, Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.BITCAST)

# each rule: (node, ctx = incoming gradient) -> one gradient (or None) per source of the node
pm_gradient = PatternMatcher([
  (UPat(Ops.CAST, name="ret"), lambda ctx, ret: (ctx.cast(ret.src[0].dtype),)),                                       # d cast(x) = cast back
  (UPat(Ops.RECIPROCAL, name="ret"), lambda ctx, ret: (-ctx * ret * ret,)),                                            # d(1/x) = -1/x^2
  (UPat(Ops.SIN, name="ret"), lambda ctx, ret: (_t(ret.src[0]).cos().uop * ctx,)),                                   # d sin x = cos x (not sin(pi/2-x): rounds at 1e10)
  (UPat(Ops.LOG2, name="ret"), lambda ctx, ret: (ctx / (ret.src[0] * const_like(ret, math.log(2))),)),                 # d log2 x = 1/(x ln2)
  (UPat(Ops.EXP2, name="ret"), lambda ctx, ret: (ret * const_like(ret, math.log(2)) * ctx,)),                          # d 2^x = 2^x ln2
  (UPat(Ops.SQRT, name="ret"), lambda ctx, ret: (ctx / (ret * const_like(ret, 2)),)),                                  # d sqrt x = 1/(2 sqrt x)
  (UPat(Ops.NEG), lambda ctx: (-ctx,)),                                                                                # d(-x) = -1
  (UPat(Ops.ADD), lambda ctx: (ctx, ctx)),                                                                             # d(x+y) = 1, 1
  (UPat(Ops.SUB), lambda ctx: (ctx, -ctx)),                                                                            # d(x-y) = 1, -1
  (UPat(Ops.MUL, name="ret"), lambda ctx, ret: (ret.src[1] * ctx, ret.src[0] * ctx)),                                  # d(xy) = y, x
  (UPat(Ops.FDIV, name="ret"), lambda ctx, ret: (ctx / ret.src[1], -ctx * ret / ret.src[1])),                        # d(x/y) = 1/y, -(x/y)/y (y*y under/overflows)
  (UPat(Ops.MULACC, name="ret"), lambda ctx, ret: (ret.src[1] * ctx, ret.src[0] * ctx, ctx)),                          # d(xy+z) = y, x, 1
  (UPat(Ops.POW, name="ret"), lambda ctx, ret: _pow_grad(ret, ret.src[0], ret.src[1], ctx)),                           # d x^y = y x^(y-1), x^y ln x
  (UPat(Ops.MAX, name="ret"), lambda ctx, ret: _binary_max_grad(ctx, ret)),                                        # to the larger, ties split
  (UPat(Ops.WHERE, name="ret"), lambda ctx, ret: _where_grad(ctx, ret)),                                            # none to cond
  # d trunc x = 0 (floor, ceil, round): zeros, as torch's and public tinygrad's, where none left `x.floor().sum().backward()`
  # with x.grad None
  (UPat(Ops.TRUNC, name="ret"), lambda ret: (const_like(ret.src[0], 0),)),
  (UPat(_nograd, name="ret"), lambda ret: (None,) * len(ret.src)),                                                    # comparisons, int/bit ops: none
  (UPat(Ops.RESHAPE, name="ret"), lambda ctx, ret: (ctx.reshape(ret.src[0].shape),)),                                  # reshape back
  (UPat(Ops.PERMUTE, name="ret"), lambda ctx, ret: (ctx.permute(tuple(argsort(ret.arg))),)),                           # inverse permutation
  (UPat(Ops.EXPAND, name="ret"), lambda ctx, ret: (_sum_to(ctx, ret.src[0].shape),)),                                  # sum the expanded axes
  (UPat(Ops.PAD, name="ret"), lambda ctx, ret: (ctx.shrink(tuple((b, b+s) for (b, _), s in zip(ret.arg, ret.src[0].shape))),)),  # pad -> shrink
  (UPat(Ops.SHRINK, name="ret"), lambda ctx, ret: (ctx.pad(tuple((b, s-e) for (b, e), s in zip(ret.arg, ret.src[0].shape))),)),  # shrink -> pad
  (UPat(Ops.FLIP, name="ret"), lambda ctx, ret: (ctx.flip(ret.arg),)),                                                 # flip back
  (UPat(Ops.REDUCE_AXIS, name="ret"), lambda ctx, ret: _reduce_grad(ctx, ret)),                              # sum/max/prod, below
  (UPat(Ops.CONTIGUOUS), lambda ctx: (ctx,)),                                                                          # identity
  (UPat(Ops.DETACH, name="ret"), lambda ctx, ret: (UOp(Ops.CONTIGUOUS, ctx.dtype, (ctx,)),) if ret.tag == CONTIGUOUS_BACKWARD else (None,)),  # stops (or contiguous)
  (UPat(Ops.ASSIGN), lambda ctx: (None, ctx)),                                                                         # the written value; not the old contents
  (UPat(Ops.MULTI, name="ret"), lambda ctx, ret: _multi_grad(ctx, ret)),                                            # to each shard its part
  (UPat(Ops.COPY, name="ret"), lambda ctx, ret: (UOp(Ops.COPY, ctx.dtype, (ctx, UOp(Ops.DEVICE, arg=_device(ret.src[0])))), None)),  # copy back
])

def _multi_grad(ctx: UOp, ret: UOp) -> tuple[UOp | None, ...]:
  # a gradient of a replicated tensor is kept as partial sums, one per device, that add up to it (tinygrad/multi.py):
  # an incoming gradient goes to the first replica only, and a replicated target's gradient is the all-reduce of its parts
  from tinygrad.multi import to_layout
  g = to_layout(ctx, cast(tuple, ret.device), ret.arg)
  if isinstance(ret.arg, tuple):   # a mesh: each block's gradient to the first device holding it (the others' copies get none)
    from tinygrad.multi import first_holders
    return tuple(s if k else None for s, k in zip(g.src, first_holders(ret)))
  return (g.src[0],) + (None,) * (len(ret.src) - 1) if ret.arg is None else g.src

def _flat(u: UOp) -> tuple[UOp, ...]: return u.src if u.op is Ops.MULTI else (u,)
def _target_grad(u: UOp, grads: dict[UOp, UOp]) -> UOp | None:
  """The gradient of target `u` from `grads` (its shards' for a multi-device target); None when it gets none."""
  if u.op is not Ops.MULTI: return grads.get(u)
  if not any(s in grads for s in u.src): return None
  from tinygrad.multi import multi, all_reduce
  parts = [grads[s] if s in grads else const_like(s, 0.0) for s in u.src]
  if isinstance(u.arg, tuple):
    from tinygrad.multi import sum_replicas
    return sum_replicas(u, parts)
  return multi(parts, u.arg) if u.arg is not None else multi(all_reduce(Ops.ADD, parts), None)

def _reduce_grad(ctx: UOp, ret: UOp) -> tuple[UOp]:
  op, axes = ret.arg
  x = ret.src[0]
  if op is Ops.ADD: return (ctx.expand(x.shape),)                                  # sum: every input gets the output's grad
  if op is Ops.MAX:   # max: to the max positions, ties split (over all shards, for one device's part of a sharded max)
    from tinygrad.multi import SHARD_MAX_PARTS
    info = SHARD_MAX_PARTS.get(ret)
    return (_reduce_max_grad(ret, x, ctx, axes) if info is None else _shard_max_grad(ret, x, ctx, info),)
  if op is Ops.MUL:   # prod: the product of the others: prod/x without a 0, the nonzero ones' product at a lone 0, else 0
    zero = x.eq(const_like(x, 0.0))
    safe = zero.where(const_like(x, 1.0), x)
    one, nil = const_like(x, 1.0), const_like(x, 0.0)
    nzero = zero.where(one, nil).r(Ops.ADD, axes).expand(x.shape)
    # beside a lone 0 the others' product is 0, or NaN with an infinity among them too (0 * inf, as torch's scans); prod/x
    # was NaN there (prod([-inf, 0]) is NaN: d/dx0 is 0, not NaN/-inf)
    inf_others = nil
    if dtypes.is_float(x.dtype):
      isinf = x.eq(const_like(x, math.inf)).where(one, x.eq(const_like(x, -math.inf)).where(one, nil))
      inf_others = (isinf.r(Ops.ADD, axes).expand(x.shape) - isinf).alu(Ops.CMPLT, const_like(x, 0.5)).where(nil, const_like(x, math.nan))
    # (two or more 0s: 0 everywhere, torch's shortcut, also beside an infinity)
    others = nzero.eq(nil).where(ret.expand(x.shape) / safe, nzero.eq(one).where(zero.where(safe.r(Ops.MUL, axes).expand(x.shape), inf_others), nil))
    return (ctx.expand(x.shape) * others,)
  raise RuntimeError(f"no gradient for REDUCE_AXIS {op}")

def _kernel_grad(k: UOp, outs: list[UOp | None]) -> tuple[UOp | None, ...]:
  # public tinygrad's grad_fxn protocol: (gradient, kernel), or (*gradients, call=kernel), kernel.src[1:] the tensors
  if k.arg.grad_fxn is None: raise RuntimeError("a custom_kernel without grad_fxn has no gradient: pass grad_fxn= to Tensor.custom_kernel")
  call, gs = UOp(Ops.KERNEL, dtypes.void, (k.arg.ast,) + k.src, k.arg), [g for g in outs if g is not None]
  ret = tuple(k.arg.grad_fxn(*gs, call=call) if len(gs) > 1 else k.arg.grad_fxn(gs[0], call))
  if len(ret) != len(k.src) or any(g is not None and (not isinstance(g, UOp) or g.shape != s.shape) for g, s in zip(ret, k.src)):
    raise ValueError(f"grad_fxn must return one gradient (a UOp of the tensor's shape, or None) per tensor {[s.shape for s in k.src]}, "
                     f"got {[g.shape if isinstance(g, UOp) else g for g in ret]}")
  return tuple(g if g is None or g.dtype == s.dtype else g.cast(s.dtype) for g, s in zip(ret, k.src))

def _toposort_for_grad(root: UOp, targets: set[UOp]) -> list[UOp]:
  """The nodes between `root` and `targets` (a DETACH cuts the walk; a pending ASSIGN passes it to the value), sources first."""
  topo = root.toposort(gate=_walks)
  on_path: set[UOp] = set()
  for n in topo:
    if n in targets or any(s in on_path for s in n.src): on_path.add(n)
  return [n for n in topo if n in on_path]

def compute_gradient(root: UOp, root_grad: UOp, targets: set[UOp]) -> dict[UOp, UOp]:
  """d root / d t for every t in `targets` that `root` depends on, given d loss / d root = `root_grad` (same shape as root)."""
  if root_grad.shape != root.shape: raise ValueError(f"gradient shape {root_grad.shape} != tensor shape {root.shape}")
  path = _toposort_for_grad(root, targets)
  on_path = set(path)
  grads: dict[UOp, UOp] = {root: root_grad}
  outs: dict[UOp, list[UOp | None]] = {}   # a custom kernel -> the gradient of each of its outputs (AFTER nodes)
  for node in reversed(path):
    g = grads.get(node)
    if g is None or not any(s in on_path for s in node.src): continue
    if node.op is Ops.AFTER:   # output j of a custom kernel: its value is what the kernel wrote, not src[0]'s old value
      k, j = node.src[1], node.src[1].src.index(node.src[0])
      kg = outs.setdefault(k, [None] * len(k.src))
      kg[j] = g if kg[j] is None else kg[j] + g
      grads[k] = k
      continue
    if node.op is Ops.KERNEL:
      for s, sg in zip(node.src, _kernel_grad(node, outs[node])):
        if sg is not None and s in on_path: grads[s] = grads[s] + sg if s in grads else sg
      continue
    if node.op is Ops.REDUCE_AXIS and isinstance(node.tag, tuple) and node.tag[:1] == ("conv",):
      from tinygrad.mixin.nn import conv_backward   # a conv's gradients are convs too (conv2d tags its reduce)
      if (direct := conv_backward(node, g)) is not None:
        for s, sg in direct:
          if s in on_path: grads[s] = grads[s] + sg if s in grads else sg
        continue
    src_grads = cast(tuple | None, pm_gradient.rewrite(node, ctx=g))   # gradient rules return a tuple, not a UOp
    if src_grads is None: raise RuntimeError(f"no gradient rule for {node.op} (dtype {node.dtype}, shape {node.shape})")
    for s, sg in zip(node.src, src_grads):
      if sg is None or s not in on_path: continue
      grads[s] = grads[s] + sg if s in grads else sg
  return {t: grads[t] for t in targets if t in grads}

# ---- what Tensor calls ----
def _tensor_cls() -> type[Tensor]:
  from tinygrad.tensor import Tensor
  return Tensor

def _wrap(u: UOp) -> Tensor:
  Tensor = _tensor_cls()
  return Tensor(u, requires_grad=False)

def _check_float(t: Tensor, what: str) -> None:
  if not dtypes.is_float(t.dtype): raise RuntimeError(f"only float tensors have gradients; {what} has dtype {t.dtype}")

class GradientShapeError(ValueError, AssertionError):
  """A missing or misshapen `gradient` for a non-scalar output (public tinygrad asserts: an AssertionError too)."""

def _root_grad(t: Tensor, gradient: Tensor | None, what: str) -> UOp | None:
  # d loss / d t: None for a scalar t's 1; a gradient whose shape differs from t's only by size-1 dims (shape (1,) for a
  # scalar, as public tinygrad takes it) is reshaped to t's
  if gradient is None:
    if t.shape != (): raise GradientShapeError(f"{what} of a non-scalar tensor (shape {t.shape}) needs an explicit `gradient`")
    return None
  g = gradient.uop
  if g.shape != t.shape and [d for d in g.shape if d != 1] == [d for d in t.shape if d != 1]: g = g.reshape(t.shape)
  if g.shape != t.shape: raise GradientShapeError(f"gradient shape {g.shape} != tensor shape {t.shape}")
  return g

def gradient(t: Tensor, *targets: Tensor, gradient: Tensor | None = None, materialize_grads: bool = True) -> list[Tensor]:
  """The gradients of `t` with respect to each of `targets` (a scalar `t` needs no `gradient`), as new lazy tensors.

  A target `t` does not depend on gets zeros (as public tinygrad), or raises with `materialize_grads=False`.
  """
  g0 = _root_grad(t, gradient, "gradient")
  _check_float(t, "the output")
  for x in targets: _check_float(x, "a target")
  ex = _Realized(_live_tensors())
  ex.prune({f for x in targets for f in _flat(x.uop)})
  sink = ex.expand(UOp(Ops.SINK, src=(t.uop,) + tuple(x.uop for x in targets)))
  root_grad = const_like(sink.src[0], 1.0) if g0 is None else g0
  if root_grad.dtype != t.uop.dtype: root_grad = root_grad.cast(t.uop.dtype)
  us, nodes = list(sink.src[1:]), None
  old: dict[UOp, Tensor] = {}
  if any(f.op is Ops.ASSIGN for u in us for f in _flat(u)):   # (a target with a pending update: see _before_updates)
    nodes = sink.src[0].toposort(gate=_walks)
    us, old = _before_updates(list(targets), us, nodes)
  grads = compute_gradient(sink.src[0], root_grad, {f for u in us for f in _flat(u)})
  ret = []
  for x, u in zip(targets, us):
    g = _target_grad(u, grads)
    if g is None:
      if nodes is None: nodes = sink.src[0].toposort(gate=_walks)   # (walked once, for the first target it does not reach)
      _check_pending_update(x, u, nodes)
      if not materialize_grads: raise RuntimeError(f"the output does not depend on a target of shape {x.shape} (or only through DETACH)")
      g = const_like(x.uop, 0.0) if x.uop.op is not Ops.MULTI else UOp(Ops.MULTI, x.dtype, tuple(const_like(s, 0.0) for s in x.uop.src), x.uop.arg)
    ret.append(g)
  if old and nodes is not None: _check_pending_reads(old, nodes, ret)
  return [_wrap(g) for g in ex.unexpand(ret)]

def _live_tensors() -> list[Tensor]:
  # the front end's weak registry `all_tensors` (weakrefs or a WeakSet) when it has one, else a scan of the gc's objects
  from tinygrad import tensor as tensor_mod
  if (live := getattr(tensor_mod, "live_tensors", None)) is not None: return live()   # a snapshot safe from other threads
  reg = getattr(tensor_mod, "all_tensors", None)
  if reg is not None: return [x for x in (r() if isinstance(r, weakref.ref) else r for r in list(reg)) if x is not None]
  T = tensor_mod.Tensor
  return [o for o in gc.get_objects() if type(o) is T]

def is_const(u: UOp) -> bool:
  """A broadcast constant (CONST under movement ops): one hash-consed node per value, so autograd leaves it out."""
  if u.op is Ops.MULTI: return all(is_const(s) for s in u.src)
  while u.op in GroupOp.Movement: u = u.src[0]
  return u.op is Ops.CONST

def _ran_assigns(g: UOp) -> UOp:
  # the assigns in a realized tensor's graph ran with it: each is its target now, which holds its value (the target's kept
  # graph, keep_chain's once it died, carries the gradient on to what the value read: y = z * z realized with z += x * 2
  # pending gave x no gradient when each was a DETACH); a target written again since reads as _stale's marker there
  subs = {n: n.src[0] for n in g.toposort(gate=_walks) if n.op is Ops.ASSIGN}
  return g.substitute(subs) if subs else g

def _written_at(n: UOp) -> int:
  # the Tensor.write_epoch a BUFFER was last overwritten at: by a realize's assign (on the UOp), or by a TinyJit replay (on
  # the Buffer: an input it wrote, or a buffer its kernels write, through the jit's last replay)
  from tinygrad.engine.buffers import buffer_if_any
  at = n.__dict__.get("_written_at", 0)
  if (b := buffer_if_any(n)) is None: return at
  return max(at, getattr(b, "_written_at", 0), *(j.replay_epoch for r in getattr(b, "_written_by", ()) if (j := r()) is not None))

def _grad_nodes(g: UOp) -> frozenset[UOp]:
  # a kept graph's nodes as the gradient walks them (not below a DETACH), cached on its root: asked at every backward
  if (ns := g.__dict__.get("_grad_nodes")) is None: ns = g.__dict__["_grad_nodes"] = frozenset(g.toposort(gate=_walks))
  return ns

def _grad_leaf_nodes() -> set[UOp]:
  # the nodes of the tensors with requires_grad=True (each shard's, on several devices): what a kept graph is kept to reach
  from tinygrad.tensor import grad_leaves
  return {f for x in list(grad_leaves.values()) for f in _flat(x.uop)}

# a pending assign into a realized tensor (y += x, y[:2] = v, y.assign(v)) -> (its target, the graph the target's value was
# computed from, the Tensor.write_epoch it was kept at): set by Tensor's assign, read by _Realized
ASSIGNED_OVER: weakref.WeakKeyDictionary[UOp, tuple[UOp, UOp, int]] = weakref.WeakKeyDictionary()

def realized_assign_graph(a: UOp) -> tuple[UOp, int] | None:
  """The graph a tensor whose pending assign `a` (its node before the realize that runs it) now holds the result of keeps,
  with the Tensor.write_epoch it is kept at: the assign's value, where an earlier pending assign of the same target is read
  as its value and the target's old value through the graph that was computed from (ASSIGNED_OVER), when that graph
  reaches a tensor that wants a gradient (a loop's `acc += v; acc.realize()` would hold every step's graph). Else the
  target is read as its buffer, which the assign overwrites: the gradient passes it, and one that needs its old value
  raises (_Realized._stale). Without this, the realized tensor kept no graph and the gradient through it was lost.
  None (nothing kept) while no tensor has requires_grad=True, as keep_chain: an inference loop's KV-cache writes keep none."""
  from tinygrad.tensor import write_epoch, grad_leaves
  if not grad_leaves: return None
  o, rep = a.src[0], {a: a.src[1]}
  if any(p.src[0] is o for p in list(SUPERSEDED)):   # (an earlier pending assign of o: walked only then)
    rep.clear()
    for n in a.toposort(gate=lambda n: n.op is not Ops.BUFFER):   # (sources first: a later assign reads an earlier one's value)
      if n.op is Ops.ASSIGN and n.src[0] is o: rep[n] = n.src[1].substitute(rep) if rep else n.src[1]
  g = rep[a]
  if (rec := ASSIGNED_OVER.get(a)) is not None:
    t, old, at = rec
    ns, want = _grad_nodes(old), _grad_leaf_nodes()
    if not want.isdisjoint(ns) or any(k in ns for k in list(KEPT_CHAIN)): return g.substitute(_old_value(t, old)), at
  # (o's old value as a buffer: the copy made before the write, else o itself, which _stale marks)
  return (g.substitute(_old_value(o, sv)) if (sv := SAVED_OLD.get(a)) is not None else g), write_epoch[0]

def _old_value(t: UOp, v: UOp) -> dict[UOp, UOp]:
  # realized tensor t (a buffer, or a reshape of one) read as value v, also where its buffer is read (a view assign's merge)
  subs, b = {t: v}, reshape_base(t)
  if b is not t and b.op is Ops.BUFFER and b.size == t.size: subs[b] = v.reshape(b.shape)
  return subs

# a pending assign into a realized tensor whose gradient may need the value it overwrites (z *= x: x's is z's old value) ->
# a copy of that value made before the write, which realized_assign_graph's graph reads in its place, as torch saves it
# (without it the gradient raises the 'inplace operation' error: the buffer holds the new value)
SAVED_OLD: weakref.WeakKeyDictionary[UOp, UOp] = weakref.WeakKeyDictionary()
# ops whose gradient never reads the value of their sources
_LINEAR = (Ops.ADD, Ops.SUB, Ops.NEG, Ops.CAST, Ops.CONTIGUOUS, Ops.ASSIGN, Ops.DETACH, Ops.COPY, Ops.MULTI, *GroupOp.Movement)

def save_old_value(a: UOp, prev: UOp) -> None:
  """`a`: a pending assign just made into a realized tensor (`prev` its node before: the buffer, or a pending assign of it
  whose old value is still in the buffer). Copy the buffer now when a gradient through the value may read it: a value of
  it (through any op) meets a non-constant operand in an op whose gradient to that operand reads it (z *= x, (z + 1) * x,
  z.exp() * x), not z += x * 2, an accumulator's update (that copy would cost every step a kernel and the memory)."""
  if prev.op is Ops.ASSIGN and (sv := SAVED_OLD.get(prev)) is not None:
    SAVED_OLD[a] = sv
    return
  o = a.src[0]
  old = {o, reshape_base(o), prev}
  need = False
  for n in a.src[1].toposort(gate=_walks):
    if n in old or not any(s in old for s in n.src): continue
    old.add(n)
    # (the gradient to another operand, not a value of z nor a constant, reads z's: z * x, z.exp() / x, not z.exp() + x, nor
    # z * 3 or z.exp(), whose gradient goes to z's old value only, a buffer. A select's reads only its condition: a slice's
    # assign, where(mask, value, z), needs no copy)
    if n.op in _LINEAR or not any(s not in old and not is_const(s) for s in n.src): continue
    if n.op is not Ops.WHERE or n.src[0] in old: need = True
  if need:
    # (a copy with no graph: kept, its COPY of o was held in KEPT_CHAIN once it died, and every backward then scanned the
    # live tensors for it)
    copy = _tensor_cls()(o).clone()
    copy.requires_grad = False
    SAVED_OLD[a] = copy.realize().uop

# the graphs of realized tensors that died while another graph still read their buffers, with a requires_grad=True tensor
# (or a graph kept so) below them: the buffer's node -> (the graph, its Tensor.write_epoch), kept while that node lives. A
# loop's Y = (Y * w).realize(): the last Y's graph reads only the one before's buffer, and w's gradient stopped there; with
# nothing to train below, nothing is kept (such a loop holds its last buffer, not one a step)
KEPT_CHAIN: weakref.WeakKeyDictionary[UOp, tuple[UOp, int]] = weakref.WeakKeyDictionary()
# the tag of the marker a kept graph in KEPT_CHAIN reads in place of its own buffer's overwritten value (keep_chain), with a
# number of its own: two such markers stay apart
OVERWRITTEN = "overwritten"
_overwritten_ids = itertools.count()

def keep_chain(u: UOp, g: UOp, at: int) -> None:
  """Called as a realized tensor dies (`u` its node, `g` its kept graph, `at` when kept): keep its graph in KEPT_CHAIN."""
  want = _grad_leaf_nodes()
  # (or the target of a pending assign, read through the graph it was computed from: ASSIGNED_OVER)
  if len(ASSIGNED_OVER): want |= {r for t, _, _ in list(ASSIGNED_OVER.values()) for r in (t, reshape_base(t))}
  for r, gr in zip(_flat(u), _flat(g)):
    if r is gr: continue
    ns = _grad_nodes(gr)
    # a graph that reads its own buffer's value before an in-place update (z += x * 2 realized, z's kept graph z + x * 2):
    # that value is gone, and the entry would hold its key, so it reads a marker instead that holds no buffer: a gradient
    # passes by it (x's 2), one that needs it raises (_Realized._stale). Skipped, z's graph was lost and x.grad None
    if r in ns and (b := reshape_base(r)).op is Ops.BUFFER:
      gr = gr.substitute({b: UOp(Ops.CONTIGUOUS, b.dtype, (const_like(b, 0.0),), tag=(OVERWRITTEN, next(_overwritten_ids)))})
      ns = _grad_nodes(gr)
    # (not a graph that reads its own result: the entry would hold its key)
    if r not in ns and (not want.isdisjoint(ns) or any(k in ns for k in list(KEPT_CHAIN))): KEPT_CHAIN[r] = (gr, at)

class _Realized:
  """The graph autograd walks: each realized tensor's buffer stands in for the graph it was computed from (Tensor._graph),
  behind a CONTIGUOUS tagged with that buffer, so the stand-in is one node per tensor (two tensors realized from equal
  graphs stay apart) and the gradient passes through it to the tensors it was computed from."""
  def __init__(self, live: list[Tensor]):
    self.graphs = {r: g for x in live if (gr := getattr(x, "_graph", None)) is not None for r, g in zip(_flat(x.uop), _flat(gr)) if r is not g}
    chain = list(KEPT_CHAIN.items()) if len(KEPT_CHAIN) else []
    held = {f for x in live for f in _flat(x.uop)} if chain else set()   # (a live tensor's own record wins)
    for r, (g, _) in chain:
      if r not in held: self.graphs.setdefault(r, g)
    self.chain_at = {r: at for r, (_, at) in chain if r not in held}
    self.live = live
    self.kept_at: dict[UOp, int] | None = None   # each kept graph's Tensor.write_epoch, gathered by _stale once needed
    self.old_at: dict[UOp, int] = {}   # the targets of pending assigns in ASSIGNED_OVER -> when their old graph was kept
    self.wrap: dict[UOp, UOp] = {}
    self.stale: dict[UOp, UOp] = {}   # marker -> a buffer a kept graph read that an update overwrote since (_stale)
  def prune(self, want: set[UOp]) -> None:
    """Forget the graphs no gradient to a node of `want` can pass through: those holding none of them, nor a realized
    tensor whose graph does. A realized input from Tensor.randn kept its random graph, and every backward walked it
    (four times) to differentiate nothing: half of a small MLP's backward. Each graph's node set is kept on its root."""
    if not self.graphs: return
    inner: dict[UOp, frozenset[UOp]] = {}
    need: set[UOp] = set()
    # (and through the graph a pending assign's target was computed from, which expand reads it through: a graph kept
    # before the assign that reads the target, y = z * 2 + 1 realized with z[0] = v pending, lost z's gradient to t)
    graphs = self.graphs | {r: g for t, g, _ in list(ASSIGNED_OVER.values()) for r in (t, reshape_base(t)) if r not in self.graphs}
    keys = frozenset(graphs)
    for r, g in graphs.items():
      ns = _grad_nodes(g)
      if not want.isdisjoint(ns): need.add(r)
      else: inner[r] = (ns & keys) - {r}
    while more := [r for r, rs in inner.items() if not need.isdisjoint(rs)]:   # (through another realized tensor's graph)
      for r in more: del inner[r]
      need.update(more)
    self.graphs = {r: g for r, g in self.graphs.items() if r in need}
  def _stand_in(self, r: UOp) -> UOp:
    if r not in self.wrap:
      self.wrap[r] = r   # (a graph that reads its own result, through an assign: stops there)
      self.wrap[r] = UOp(Ops.CONTIGUOUS, r.dtype, (self.expand(_ran_assigns(self._stale(r, self.graphs[r]))),), tag=("realized", r))
    return self.wrap[r]
  def _stale(self, r: UOp, g: UOp) -> UOp:
    # a buffer the kept graph read that an assign (an optimizer step, setitem) overwrote after it was kept no longer holds
    # the values it read: read through a marker the gradient passes through, and a gradient that needs its value (x*x's
    # 2*x: not x*3's) raises in unexpand, as torch raises "modified by an inplace operation" (it read the new values)
    from tinygrad.tensor import write_epoch
    if self.kept_at is None: self.kept_at = self.chain_at | {u: x._kept_at for x in self.live if x._kept is not None for u in _flat(x.uop)} | self.old_at
    if write_epoch[0] <= (at := self.kept_at.get(r, write_epoch[0])): return g   # (nothing written since: the usual case)
    nodes = g.toposort()
    # (an assign realized with the graph: it read the new values, unless the target was written again since it ran)
    own = {b for n in nodes if n.op is Ops.ASSIGN and _written_at(b := n.src[0].base) <= n.__dict__.get("_ran_at", at)}
    subs = {n: UOp(Ops.CONTIGUOUS, n.dtype, (n,), tag=("stale", n)) for n in nodes
            if n.op is Ops.BUFFER and _written_at(n) > at and n not in own}
    self.stale |= {m: n for n, m in subs.items()}
    # (keep_chain's marker of a value overwritten when kept: such a graph was kept before the write, so this runs for it)
    self.stale |= {n: n for n in nodes if n.op is Ops.CONTIGUOUS and isinstance(n.tag, tuple) and n.tag[0] == OVERWRITTEN}
    return g.substitute(subs) if subs else g
  def expand(self, u: UOp) -> UOp:
    topo = u.toposort(gate=_walks)
    if len(ASSIGNED_OVER):
      # a realized tensor with a pending assign: its buffer holds the value it was computed from until the assign runs, so
      # a read of it (in the assign's value: y += x) passes the gradient to that graph (the assign dropped its _graph)
      for n in topo:
        if n.op is not Ops.ASSIGN or (rec := ASSIGNED_OVER.get(n)) is None: continue
        # (the target, and for a reshape of a buffer, a realized tensor's usual form, the buffer, which a view assign's merge
        # reads: z[1::2] += v left z[0]'s old value a read of the buffer itself)
        t, g, at = rec
        b = reshape_base(t)
        for r, rg in ((t, g), (b, g.reshape(b.shape))) if b is not t and b.op is Ops.BUFFER and b.size == t.size else ((t, g),):
          if r in self.graphs: continue
          self.graphs[r], self.old_at[r] = rg, at
          if self.kept_at is not None: self.kept_at[r] = at
    subs = {n: self._stand_in(n) for n in topo if n in self.graphs}
    # (a buffer _stale marked stays itself: its graph now is the one its new value was computed from, not the one of the
    # value read; the gradient passes to the buffer, a leaf updated in place, as torch's under no_grad)
    if subs and self.stale: subs |= {n: n for n in topo if n in self.stale}
    return u.substitute(subs) if subs else u
  def unexpand(self, us: list[UOp]) -> list[UOp]:
    """Each graph with the stand-ins read back as the realized buffers; one walk with one memo for all of them (the
    gradients of a model's parameters share most of their graph: a walk per parameter was ~a third of a small backward)."""
    back = {w: r for r, w in self.wrap.items() if w is not r}
    out = substitute_all(us, back) if back and us else us
    # (checked once the stand-ins are their buffers again: a value read through one (PPO's old log-probs, realized before
    # the step, in the ratio's gradient) holds the values it was computed from; a marker left is a read of the new values)
    if self.stale and out and (hit := [n for n in UOp(Ops.SINK, src=tuple(out)).toposort() if n in self.stale]):
      b = self.stale[hit[0]]
      raise RuntimeError(f"backward() through a graph computed before an in-place update (assign, setitem, optimizer step) overwrote a "
                         f"{b.dtype.name} buffer of {b.size} elements it read: the gradient needs the old values, which are gone (torch "
                         "raises 'modified by an inplace operation'). Call backward() before the update, or build the graph again")
    if out and len(SUPERSEDED): out = _assign_values(out)
    # (only while an assign with a copy is pending: walking every gradient graph costs as much as a small backward)
    if out and len(SAVED_OLD) and any("_ran_at" not in a.__dict__ for a in list(SAVED_OLD.keys())): out = _read_saved(out)
    return out

def _read_saved(us: list[UOp]) -> list[UOp]:
  # a gradient that reads a pending assign (its new value: z *= x; (z * z).sum()'s 2 z) and its target's buffer (the old
  # value: x's z_old) could not be scheduled (a cycle: the buffer is read before and after the write); the old value is the
  # copy save_old_value made, as torch's saved tensor. The assign itself stays as it is
  subs: dict[UOp, UOp] = {}
  for n in UOp(Ops.SINK, src=tuple(us)).toposort():
    if n.op is Ops.ASSIGN and (sv := SAVED_OLD.get(n)) is not None: subs |= _old_value(n.src[0], sv) | {n: n}
  return substitute_all(us, subs) if subs else us

# pending assigns that another pending assign of their target replaced (y += x; y *= x: the first): set by Tensor's assign
SUPERSEDED: weakref.WeakSet[UOp] = weakref.WeakSet()

def _assign_values(us: list[UOp]) -> list[UOp]:
  # a pending assign that a gradient reads (y * y's 2y) is its value: the schedule reads an assign as its target's buffer,
  # which holds the last pending assign's value, also for an earlier one (SUPERSEDED) that it reads (y += x; y *= x)
  rep: dict[UOp, UOp] = {}
  for n in UOp(Ops.SINK, src=tuple(us)).toposort():   # (sources first: a value that reads an earlier assign reads its value)
    if n.op is Ops.ASSIGN: rep[n] = n.src[1].substitute(rep) if rep else n.src[1]
  return substitute_all(us, rep) if rep else us

def _gone(g: Tensor | None) -> bool:   # a gradient whose value is gone (Tensor._mark_gone: one node, or one per shard)
  from tinygrad.engine.schedule import is_gone
  return g is not None and is_gone(g.uop.src[0] if g.uop.op is Ops.MULTI else g.uop)

def _pending_error(x: Tensor, why: str = "the gradient with respect to its old value is not this tensor's") -> RuntimeError:
  return RuntimeError(f"backward() through a graph that read a tensor {x.shape} {x.dtype} which an in-place update (x += ..., assign, "
                      f"setitem) made since changes: {why} (torch raises 'modified by an inplace operation'). Call backward() "
                      "before the update, or build the graph again after it")

def _pending_reads(u: UOp, nodes: dict[UOp, None]) -> set[UOp]:
  """The nodes of the graph (`nodes`) that are a tensor's old value (its buffer, views of it, an earlier pending assign of it)
  where a pending in-place update of it (`x += 1`, assign, setitem not yet realized; `u` its node) will overwrite it: its
  node now is the update, which the graph does not hold. Empty when the graph read none."""
  old: set[UOp] = set()
  for f in _flat(u):
    if f.op is not Ops.ASSIGN or f in nodes: continue
    b = f.src[0]
    while b.op in GroupOp.Movement: b = b.src[0]
    if b not in nodes: continue
    old.add(b)
    for n in nodes:   # (sources first: a view of a view, an assign into a view of it)
      if (n.op in GroupOp.Movement or n.op is Ops.ASSIGN) and n.src and n.src[0] in old: old.add(n)
  return old

def _check_pending_update(x: Tensor, u: UOp, nodes: Any) -> None:
  """Raise when the graph (`nodes`) read a tensor's buffer that a pending in-place update of it will overwrite (see
  _pending_reads): the tensor's gradient is lost (its node is the update), where torch raises "modified by an inplace
  operation" (or, for a leaf, at the update)."""
  if _pending_reads(u, nodes): raise _pending_error(x)

def _check_pending_reads(old: dict[UOp, Tensor], nodes: dict[UOp, None], grads: list[UOp]) -> None:
  """Raise where a gradient reads a tensor's old value (`old`: its _pending_reads, each with its tensor) itself, not only
  through a value the forward computed from it (a node of `nodes`), as torch raises only where backward needs a value of the
  updated tensor that it saved: z * z's 2z, not z * 2 + 1's 2, nor (z * 3) * (z * 3)'s 2(z * 3) or exp(z)'s exp(z)."""
  why = "the gradient needs its old value"
  for n in UOp(Ops.SINK, src=tuple(grads)).toposort():
    if n in old and any(n is g for g in grads): raise _pending_error(old[n], why)
    if n not in nodes and (hit := next((s for s in n.src if s in old), None)) is not None: raise _pending_error(old[hit], why)

def _before_updates(xs: list[Tensor], us: list[UOp], nodes: dict[UOp, None]) -> tuple[list[UOp], dict[UOp, Tensor]]:
  """Each tensor's node (`us`) in the graph (`nodes`), but where the graph read its value before a pending update of it
  that it does not hold, the node of that old value: its gradient is the old value's, as once the update has run (and
  torch's for a leaf updated under no_grad), checked by _check_pending_reads against the nodes returned (_pending_reads,
  each with its tensor). One read at two values (an earlier pending assign too), or sharded, is left out: one asked for
  (requires_grad=True) raises, as its gradient would be lost."""
  out: list[UOp] = []
  old: dict[UOp, Tensor] = {}
  for x, u in zip(xs, us):
    if reads := _pending_reads(u, nodes):
      old |= {n: x for n in reads}
      if u.op is Ops.ASSIGN and u.src[0].shape == u.shape and not any(n.op is Ops.ASSIGN for n in reads): u = u.src[0]
      elif x.requires_grad is True: raise _pending_error(x)
    out.append(u)
  return out, old

def _grad_tensors(t: Tensor, live: list[Tensor], ex: _Realized) -> tuple[UOp, list[tuple[Tensor, UOp]], dict[UOp, None], dict[UOp, Tensor]]:
  """t's graph with realized tensors expanded, and every live float tensor in it whose requires_grad is not False (the default
  None counts, like public tinygrad) with its node there; broadcast constants have nothing to train and are left out, but for
  an empty one asked for (requires_grad=True: Tensor.empty(0, 3) is a constant with no buffer) that gets its empty gradient
  as in torch (one hash-consed node for several such tensors shares nothing: the gradient has no elements). Not one whose
  gradient is gone (Tensor._mark_gone): a sum with it would be gone too, so it stays as it is."""
  # (one pass, reading the slots: this runs over every live tensor, a model's weights and data included)
  cands: list[Tensor] = []
  want: set[UOp] = set()
  floats: dict[DType, bool] = {}   # (per dtype once: a model's tensors share a few)
  BUFFER = Ops.BUFFER   # (a module attribute read per tensor, ~0.1 us each)
  for x in live:
    if (rg := x._requires_grad) is False: continue
    u = x.uop
    if (fl := floats.get(u.dtype)) is None: fl = floats[u.dtype] = dtypes.is_float(u.dtype)
    if not fl: continue
    if u.op is not BUFFER and is_const(u) and not (rg is True and 0 in u.shape) or x.grad is not None and _gone(x.grad): continue
    cands.append(x)
    if u.op is Ops.MULTI: want.update(u.src)
    else: want.add(u)
  ex.prune(want)
  # a realized tensor (its buffer, or reshapes of it: a model's weights, the data, a loss kept in a list) is its node or,
  # with a kept graph, the stand-in t's expansion made when it read it: looked up, not expanded with the others (expanding
  # each kept loss's graph, of a training loop that logs them, made every step slower than the last). The rest are
  # expanded with t's graph (their pending assigns give realized targets old graphs, ASSIGNED_OVER, which t's graph reads)
  rest = [x for x in cands if (u := x.uop).op is not BUFFER and reshape_base(u).op is not BUFFER]
  sink = ex.expand(UOp(Ops.SINK, src=(t.uop,) + tuple(x.uop for x in rest)))
  root, nodes = sink.src[0], sink.src[0].toposort(gate=_walks)
  rest_us, old = _before_updates(rest, list(sink.src[1:]), nodes)
  expanded = {id(x): u for x, u in zip(rest, rest_us)}
  def read(u: UOp) -> UOp | None:
    # a realized tensor's node in t's expanded graph, else None (a stand-in no expansion made is no node of it; no buffer
    # holds a pending update: nothing to check)
    kept = False
    for n in reshape_chain(u):
      if n in ex.graphs:
        if n not in ex.wrap: return None
        kept = True
    e = ex.expand(u) if kept else u
    return e if e in nodes else None
  need = []
  graphs = ex.graphs
  for x in cands:
    if (eu := expanded.get(id(x))) is None:
      # (a buffer with no kept graph, most of a model's tensors, is its own node: read's answer without its calls)
      if (u := x.uop).op is BUFFER and u not in graphs:
        if u in nodes: need.append((x, u))
      elif (e := read(u)) is not None: need.append((x, e))
    elif any(f in nodes for f in _flat(eu)): need.append((x, eu))
  return root, need, nodes, old

# tensors backward() ran on, for the optimizer's first realize; by id, as a WeakSet compares its items with == (a Tensor's
# == is elementwise: a second backward() on the same loss raised "truth value of a Tensor is ambiguous")
_BACKWARD_ROOTS: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()

def backward_roots() -> list[Tensor]:
  """The tensors backward() ran on since the last call (the losses of the pending gradients), and forget them."""
  out = list(_BACKWARD_ROOTS.values())
  _BACKWARD_ROOTS.clear()
  return out

def backward(t: Tensor, gradient: Tensor | None = None) -> Tensor:
  """Set (or add to) `.grad` of every tensor that `t` depends on and whose requires_grad is not False; `t` must be a scalar
  unless `gradient` is given. Works after `t` (or anything in its graph) was realized: realized tensors keep their graph."""
  g0 = _root_grad(t, gradient, "backward")
  _check_float(t, "the output")
  live = _live_tensors()   # one scan of the heap (gc.get_objects) serves both
  ex = _Realized(live)
  root, need, nodes, old = _grad_tensors(t, [x for x in live if x is not t], ex)
  if not need: return t
  root_grad = const_like(root, 1.0) if g0 is None else g0.cast(t.uop.dtype)
  grads = compute_gradient(root, root_grad, {f for _, u in need for f in _flat(u)})
  _BACKWARD_ROOTS[id(t)] = t
  got = [(x, g) for x, u in need if (g := _target_grad(u, grads)) is not None]
  if old and got: _check_pending_reads(old, nodes, [g for _, g in got])
  # the gradients read the realized buffers, not a recomputation of their graphs
  from tinygrad.tensor import capturing_grads, _note_grad
  cg = capturing_grads()
  for (x, _), g in zip(got, ex.unexpand([g for _, g in got])):
    if x.grad is None:
      x.grad = _wrap(g)
      _note_grad(x)
      if cg is not None and x.requires_grad is True: cg["set"][id(x)] = (x, x.grad)
    else:
      if cg is not None and x.requires_grad is True and (cg["set"].get(id(x)) or (None, None))[1] is not x.grad:
        from tinygrad.engine.realize import JitError
        raise JitError(f"a TinyJit capture's backward() adds to the .grad a tensor {x.shape} {x.dtype} had before the call (gradients "
                       "accumulated across calls): a replay runs no Python and would add to that old gradient again. Clear the "
                       "gradients in the function before backward() (opt.zero_grad()), or accumulate into a tensor of your own "
                       "(acc.assign(acc + p.grad) in the function, acc = Tensor.zeros(...).contiguous())")
      if x.grad.shape != x.shape: raise RuntimeError(f"existing grad shape {x.grad.shape} != tensor shape {x.shape}")
      # the sum goes into the .grad tensor already there, as public tinygrad and torch do: a reference to x.grad taken
      # earlier sees it. Replaced, not written into its buffer: that may be another tensor's (backward(G) of x + 0 made
      # x.grad G's buffer, and an assign wrote the sum into G)
      x.grad.replace(_wrap(x.grad.uop + g))
  return t

class _FlagContext(contextlib.ContextDecorator):
  attr = ""
  def __init__(self, mode: bool = True): self.mode = mode
  def __enter__(self) -> None:
    T = _tensor_cls()
    self.prev = getattr(T, self.attr)
    setattr(T, self.attr, self.mode)
  def __exit__(self, *args: Any) -> None: setattr(_tensor_cls(), self.attr, self.prev)

class train(_FlagContext):
  """`with Tensor.train():` (or as a decorator): sets `Tensor.training` (Dropout, BatchNorm batch statistics) inside."""
  attr = "training"

class test(_FlagContext):
  """`with Tensor.test():`: `Tensor.training` is False inside."""
  attr = "training"
  def __init__(self, mode: bool = False): super().__init__(mode)

class no_grad(_FlagContext):
  """`with no_grad():`: `Tensor.no_grad` is True inside (new tensors do not require grad)."""
  attr = "no_grad"

__all__ = ["compute_gradient", "pm_gradient", "const_like", "gradient", "backward", "train", "test", "no_grad"]
