# mypy: disable-error-code="misc"
"""Tensor methods, movement ops: reshape, permute, expand, pad, shrink, flip, repeat, cat/stack/split, pad_to/shrink_to,
roll, unfold, repeat_interleave, meshgrid."""
from __future__ import annotations
import math
import numbers
import functools
import itertools
from typing import TYPE_CHECKING, Any, Sequence, cast
from tinygrad.dtype import dtypes, ConstType, least_upper_dtype
from tinygrad.helpers import prod, argfix, flatten, ceildiv, all_int
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, ssimplify, sint_le, sint_eq, sint, shape_str, vals_str
from tinygrad.mixin.common import ArgumentError, AssertedArgumentError, UnknownModeError
if TYPE_CHECKING: from tinygrad.tensor import Tensor

def _size_arg(x: Any, op: str) -> sint:
  # a size or offset from the user: an int (numpy ints too) or a symbolic int (a bound Variable, an expression of it); a
  # float is refused, as torch does (int() truncated it: shrink(((0, 1.5), None)) kept 1 row, pad((1.5, 0)) padded 1)
  if isinstance(x, UOp): return ssimplify(x)
  if not isinstance(x, numbers.Integral): raise TypeError(f"{op}: sizes and offsets must be ints, got {x!r} ({type(x).__name__})")
  return int(x)
def _tensor_args(op: str, first: Any, rest: tuple) -> list[Tensor]:
  # cat/stack/meshgrid take tensors as separate arguments or as one sequence, never both (that would read a tuple as a tensor)
  if not isinstance(first, (list, tuple)): return [first, *rest]
  if rest: raise ArgumentError(f"{op}: got a sequence of {len(first)} tensors and {len(rest)} more; pass them as one sequence or as separate arguments")
  return list(first)
class SymbolicDimError(ValueError, AssertionError):
  """An op that needs a dimension's size (split, chunk) given a symbolic one (an AssertionError too, as public tinygrad raises)."""
def _symbolic_err(op: str, what: str, shape: tuple, *args: Any) -> ValueError:
  from tinygrad.mixin.indexing import _values, _r
  def fmt(x: Any) -> str: return "(" + ", ".join(fmt(y) for y in x) + ")" if isinstance(x, (tuple, list)) else _r(x)
  what = what.format(*(fmt(a) for a in args))
  return ArgumentError(f"{op}: {what} for shape {fmt(shape)} does not hold{_values(*shape, *args) or ' for every value of its variables'}")


class MovementMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- movement ----
  def reshape(self: Tensor, shape: Any, *args: int) -> Tensor:
    """The same elements (row-major) in a new shape; one dimension may be -1 (inferred), None keeps that dimension."""
    new = tuple(self.shape[i] if s is None else ssimplify(s) if isinstance(s, UOp) else s for i, s in enumerate(argfix(shape, *args)))
    if not all(isinstance(s, (int, UOp)) for s in new): raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: sizes must be ints")
    if not all_int(new + self.shape): return self._reshape_symbolic(new)
    if sum(s == -1 for s in new) > 1: raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: only one dimension can be -1")
    if any(s < -1 for s in new): raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: negative size")
    if -1 in new:
      rest = prod(s for s in new if s != -1)
      if rest == 0 or self.numel() % rest: raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: cannot infer -1 ({self.numel()} elements into blocks of {rest})")
      new = tuple(self.numel() // rest if s == -1 else s for s in new)
    if prod(new) != self.numel(): raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: sizes {self.numel()} != {prod(new)}")
    return self if new == self.shape else self._mv(lambda u: u.reshape(new))
  def _reshape_symbolic(self: Tensor, new: tuple[sint, ...]) -> Tensor:
    # sizes with variables: -1 is inferred by dividing the element counts, and the counts must agree for every value
    if sum(isinstance(s, int) and s == -1 for s in new) > 1: raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: only one dimension can be -1")
    # a size over bound variables is checked at their values, as a shrink is (x[:, :v][:, 1:][:, 1:] has size v-2: vmin < 0)
    if any(isinstance(s, int) and s < -1 or isinstance(s, UOp) and not sint_le(0, s) for s in new):
      raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: negative size")
    if any(isinstance(s, int) and s == -1 for s in new):
      rest = prod(s for s in new if not (isinstance(s, int) and s == -1))
      if isinstance(rest, int) and rest == 0: raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: cannot infer -1 next to a size 0")
      # a symbolic size on both sides cancels before the division: (T*64)//T is not simplified to 64 (a (T, 4, 16) -> (T, -1))
      left: list[sint] = list(self.shape)
      known = [s for s in new if not (isinstance(s, int) and s == -1)]
      for s in [s for s in known if isinstance(s, UOp)]:
        if s in left: left.remove(s); known.remove(s)   # (a UOp's == is identity)
      new = tuple(ssimplify(prod(left) // prod(known)) if isinstance(s, int) and s == -1 else s for s in new)
    if not sint_eq(prod(new), self.numel()):
      raise ArgumentError(f"reshape from {shape_str(self.shape)} to {shape_str(new)}: sizes {shape_str(ssimplify(self.numel()))} != {shape_str(ssimplify(prod(new)))} (for some value of the variables{vals_str(self.shape, new)})")
    return self if new == self.shape else self._mv(lambda u: u.reshape(new))
  def view(self: Tensor, shape: Any, *args: int) -> Tensor:
    """Alias of reshape."""
    return self.reshape(shape, *args)
  def permute(self: Tensor, order: Any, *args: int) -> Tensor:
    """Reorder the dimensions: result dim i is input dim order[i]."""
    o = argfix(order, *args)
    if len(o) != self.ndim: raise ArgumentError(f"permute: order {o} has {len(o)} axes, tensor of shape {self.shape} has {self.ndim}")
    res = tuple(self._resolve_dim(i) for i in o)
    if sorted(res) != list(range(self.ndim)): raise ArgumentError(f"permute: {o} is not a permutation of the axes of shape {self.shape}")
    return self._mv(lambda u: u.permute(res)) if res != tuple(range(self.ndim)) else self
  def transpose(self: Tensor, dim0: int = 1, dim1: int = 0) -> Tensor:
    """Swap two dimensions."""
    order = list(range(self.ndim))
    a, b = self._resolve_dim(dim0), self._resolve_dim(dim1)
    if self.ndim == 0: return self
    order[a], order[b] = order[b], order[a]
    return self.permute(order)
  def expand(self: Tensor, shape: Any, *args: int) -> Tensor:
    """Broadcast size-1 dimensions to larger sizes (-1 keeps a size; new leading dimensions may be added)."""
    new = argfix(shape, *args)
    if len(new) < self.ndim: raise ValueError(f"expand: cannot expand shape {self.shape} to {new} (fewer dimensions)")
    new = tuple(ssimplify(s) if isinstance(s, UOp) else s for s in new)
    if any(not isinstance(s, (int, UOp)) or isinstance(s, int) and s < -1 for s in new):
      raise ArgumentError(f"expand: invalid shape {new}; a shape must be int, sizes >= 0, or -1 to keep one")
    cur = (1,) * (len(new) - self.ndim) + self.shape
    return self._broadcast_to(tuple(c if s == -1 else s for c, s in zip(cur, new)))
  def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dimensions start_dim..end_dim into one."""
    if self.ndim == 0: return self.reshape(1)
    s, e = self._resolve_dim(start_dim), self._resolve_dim(end_dim)
    # (as torch: flatten(1, 0) of (2, 3, 4) merged the empty range 1..0 into a new dim of 1, giving (2, 1, 3, 4))
    if s > e: raise ArgumentError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for shape {self.shape}")
    return self.reshape(self.shape[:s] + (prod(self.shape[s:e+1]),) + self.shape[e+1:])
  def unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dimension `dim` into `sizes` (one may be -1)."""
    d = self._resolve_dim(dim)
    # (as torch: no sizes dropped a dim of size 1 silently, (2, 1, 4).unflatten(1, ()) gave (2, 4))
    if len(sizes) == 0: raise ArgumentError(f"unflatten: sizes must be non-empty, got {sizes!r} for dim {dim} of shape {self.shape}")
    return self.reshape(self.shape[:d] + tuple(sizes) + self.shape[d+1:])
  def squeeze(self: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """Remove size-1 dimensions (all, or the given ones; a given dimension whose size is not 1 is kept, like torch)."""
    if dim is None: return self.reshape(tuple(s for s in self.shape if s != 1))
    dims = {self._resolve_dim(d) for d in ((dim,) if isinstance(dim, int) else dim)}
    if self.ndim == 0: return self
    return self.reshape(tuple(s for i, s in enumerate(self.shape) if i not in dims or s != 1))
  def unsqueeze(self: Tensor, dim: int) -> Tensor:
    """Insert a size-1 dimension at `dim`."""
    d = self._resolve_dim(dim, extra=True)
    return self.reshape(self.shape[:d] + (1,) + self.shape[d:])
  def _pad_arg(self: Tensor, padding: Any) -> list[tuple[sint, sint]]:
    if all(isinstance(p, (numbers.Real, UOp)) for p in padding):  # flat, torch order: (last_before, last_after, prev_before, prev_after, ...)
      if len(padding) % 2 or len(padding) // 2 > self.ndim:
        raise ValueError(f"pad: flat padding {tuple(padding)} needs an even length of at most {2*self.ndim} for shape {self.shape}")
      pairs: list[tuple[sint, sint]] = [(0, 0)] * self.ndim
      for k in range(len(padding) // 2): pairs[self.ndim - 1 - k] = (_size_arg(padding[2*k], "pad"), _size_arg(padding[2*k+1], "pad"))
      return pairs
    if len(padding) != self.ndim: raise ValueError(f"pad: padding {tuple(padding)} has {len(padding)} entries, shape {self.shape} has {self.ndim} dims")
    return [(0, 0) if p is None else (_size_arg(p[0], "pad"), _size_arg(p[1], "pad")) for p in padding]
  def pad(self: Tensor, padding: Any, mode: str = "constant", value: ConstType = 0.0) -> Tensor:
    """Pad each dimension: ((before, after) or None per axis) or a flat torch-style tuple starting at the last axis.
    Negative amounts cut. Modes: constant (with `value`), reflect, replicate, circular; as torch, reflect and replicate
    mirror or repeat the uncut edges before a negative amount cuts, circular wraps what is left after the cut."""
    pairs = self._pad_arg(padding)
    if any(isinstance(p, UOp) and not sint_le(0, p) for pr in pairs for p in pr): raise _symbolic_err("pad", "padding {} >= 0", self.shape, pairs)
    if mode != "constant" and not all_int(flatten(pairs)): raise ValueError(f"pad: mode {mode!r} needs int padding, got {pairs}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
      raise UnknownModeError(f"pad: unknown mode {mode!r}; valid: constant, reflect, replicate, circular")
    if mode != "constant": return self._pad_mode(cast(list[tuple[int, int]], pairs), mode)
    def neg(p: sint) -> sint: return min(p, 0) if isinstance(p, int) else 0   # a symbolic amount is >= 0 (checked above)
    x = self.shrink(tuple((-neg(b), s + neg(a)) for (b, a), s in zip(pairs, self.shape)))
    pos = tuple((b - neg(b), a - neg(a)) for b, a in pairs)
    if all(p == (0, 0) for p in pos): return x._mv(lambda u: u.pad(pos))._own(self)   # nothing added (a cut at most): a new tensor, as torch's
    # a value of its own, as F.pad's copy: no view of self, so neither it nor a view of it that cuts the padding away again
    # (`t.pad((1, 1))[1:-1]`, the same UOps as a view of t's buffer) shows a later write into self (the graph is the same:
    # a conv's padding still folds into its kernel)
    ret = Tensor(x.uop.pad(pos))
    # (a -0.0 fill of a float tensor is a value: F.pad keeps its sign; a zero of any type keeps an int or bool tensor's dtype)
    if value == 0 and (not dtypes.is_float(self.dtype) or math.copysign(1.0, value) > 0): return ret
    mask = Tensor(Tensor._full_uop(x.shape, True, dtypes.bool, self.device).pad(pos))
    # the fill promotes as a Python number in a where does, as in public tinygrad: an int tensor padded with 2.5 (or -inf) is
    # float, a bool one padded with 2 int (it was cast to the tensor's dtype: 2.5 became 2, and 2 True)
    return mask.where(ret, value)
  def _pad_mode(self: Tensor, pairs: list[tuple[int, int]], mode: str) -> Tensor:
    x = self
    for d, (b0, a0) in enumerate(pairs):
      def take(lo: int, hi: int) -> Tensor: return x.shrink(tuple((lo, hi) if i == d else None for i in range(x.ndim)))
      if mode == "circular": x = take(max(-b0, 0), x.shape[d] - max(-a0, 0))   # circular: cut first, then wrap what is left
      n, b, a = x.shape[d], max(b0, 0), max(a0, 0)
      if mode == "reflect" and (b or a) and (b >= n or a >= n): raise ArgumentError(f"pad: reflect padding {(b, a)} must be smaller than the size {n} of axis {d}")
      if mode == "circular" and (b > n or a > n): raise ArgumentError(f"pad: circular padding {(b, a)} must be at most the size {n} of axis {d} (after the cut)")
      if mode == "replicate" and n == 0 and (a or b): raise ArgumentError(f"pad: replicate padding {(b, a)} of the empty axis {d} has no edge to repeat")
      parts = []
      if b:
        parts.append({"reflect": lambda: take(1, b+1).flip(d), "replicate": lambda: take(0, 1).repeat([b if i == d else 1 for i in range(x.ndim)]),
                      "circular": lambda: take(n-b, n)}[mode]())
      parts.append(x)
      if a:
        parts.append({"reflect": lambda: take(n-1-a, n-1).flip(d), "replicate": lambda: take(n-1, n).repeat([a if i == d else 1 for i in range(x.ndim)]),
                      "circular": lambda: take(0, a)}[mode]())
      x = parts[0].cat(*parts[1:], dim=d) if len(parts) > 1 else x
      if mode != "circular" and (b0 < 0 or a0 < 0): x = take(max(-b0, 0), x.shape[d] - max(-a0, 0))   # reflect/replicate: cut last
    return x._own(self)   # (no padding added, a cut at most: a new tensor, as torch's, not a view that shows later writes)
  def _pad_view(self: Tensor, pos: tuple[tuple[sint, sint], ...]) -> Tensor:
    # zero padding that stays a view of self, for a strided slice, which cuts it away again (pad() is a value of its own)
    return self._mv(lambda u: u.pad(pos))
  def shrink(self: Tensor, arg: Sequence[tuple[sint, sint] | None]) -> Tensor:
    """Keep [start, end) of each dimension (None keeps all of it)."""
    if len(arg) != self.ndim: raise ValueError(f"shrink: {tuple(arg)} has {len(arg)} entries, shape {self.shape} has {self.ndim} dims")
    full = tuple((0, s) if a is None else (_size_arg(a[0], "shrink"), _size_arg(a[1], "shrink")) for a, s in zip(arg, self.shape))
    if all_int(flatten(full) + list(self.shape)):
      if any(not 0 <= b <= e <= s for (b, e), s in zip(full, self.shape)): raise ValueError(f"shrink: {full} is out of bounds for shape {self.shape}")
    elif any(not (sint_le(0, b) and sint_le(b, e) and sint_le(e, s)) for (b, e), s in zip(full, self.shape)):
      raise _symbolic_err("shrink", "{} within bounds", self.shape, full)
    return self if all(r == (0, s) for r, s in zip(full, self.shape)) else self._mv(lambda u: u.shrink(full))
  def flip(self: Tensor, axis: Any, *args: int) -> Tensor:
    """Reverse the order of elements along the given axes."""
    given = [self._resolve_dim(a) for a in argfix(axis, *args)]
    if len(set(given)) != len(given): raise ArgumentError(f"flip: axis {argfix(axis, *args)} names a dimension of shape {self.shape} twice")
    axes = set(given)
    return self._mv(lambda u, fl=tuple(i in axes for i in range(self.ndim)): u.flip(fl)) if axes else self
  def repeat(self: Tensor, repeats: Any, *args: int) -> Tensor:
    """Tile the tensor `repeats[i]` times along each dimension (extra leading repeats add dimensions)."""
    reps = argfix(repeats, *args)
    # (a symbolic count, from a bound Variable, is fine where it is >= 0 for every value: a pool over a symbolic length tiles by one)
    if any(isinstance(r, bool) or not (isinstance(r, int) and r >= 0 or isinstance(r, UOp) and dtypes.is_int(r.dtype) and r.vmin >= 0) for r in reps):
      raise ValueError(f"repeat: repeats must be ints >= 0, got {reps}")
    if len(reps) < self.ndim: raise ValueError(f"repeat: {reps} has fewer entries than shape {self.shape} has dims")
    return self._tile(reps)._own(self)   # a new tensor, as torch's (not a view of self)
  def _tile(self: Tensor, reps: Sequence[sint]) -> Tensor:
    # repeat as a view of self (a window view, unfold's, reads the tiles: it follows self, and a write into it raises)
    base = (1,) * (len(reps) - self.ndim) + self.shape
    x = self.reshape(flatten((1, s) for s in base)).expand(flatten((r, s) for r, s in zip(reps, base)))
    return x.reshape(tuple(r * s for r, s in zip(reps, base)))
  def cat(self: Tensor | Sequence[Tensor], *args: Tensor, dim: int = 0) -> Tensor:
    """Concatenate tensors along `dim` (`a.cat(b, c, dim=1)`, `Tensor.cat(a, b)` or `Tensor.cat([a, b])`)."""
    ts = _tensor_args("cat", self, args)
    first = ts[0]
    d = first._resolve_dim(dim)
    for t in ts[1:]:
      if t.ndim != first.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != d):
        raise AssertedArgumentError(f"cat: shapes {shape_str(first.shape)} and {shape_str(t.shape)} differ outside dim {d}"
                                    f"{vals_str(first.shape, t.shape)}")
    dt = least_upper_dtype(*(t.dtype for t in ts))
    # (a symbolic total spelled as public tinygrad's: i+j+k for three parts, 2*i+3 for i, i and 3; shapes compare by spelling)
    total, off = ssimplify(functools.reduce(lambda a, b: a + b, [t.shape[d] for t in ts])), 0
    # a float part is selected into place, not added: + rounds, so a NaN's sign and payload became the canonical NaN's
    # (torch's cat copies bits), and a 0.0 fill turned an element -0.0 into 0.0; ints add, bools or (exact). Sharded parts
    # still add, padded with -0.0 (+'s exact identity but for NaN payloads): a mask would need the parts' sharding
    sel = dtypes.is_float(dt) and type(first.device) is str
    fill = -0.0 if dtypes.is_float(dt) else 0
    dev = first.device
    if type(dev) is str and all(t.device == dev and all_int(t.shape) for t in ts):
      # one device, concrete sizes: the same graph built on UOps, where a 16-part cat's Tensor ops (each part a padded view
      # of its source, a mask and a where) cost ~2 ms of Python
      acc = None
      for t in ts:
        arg = tuple((off, total - off - t.shape[d]) if i == d else (0, 0) for i in range(t.ndim))
        u = t.cast(dt).uop
        part = u.pad(arg)
        if acc is None: acc = part
        elif sel: acc = Tensor._full_uop(u.shape, True, dtypes.bool, dev).pad(arg).where(part, acc)
        else: acc = acc.alu(Ops.OR if dt == dtypes.bool else Ops.ADD, part)
        off += t.shape[d]
      return Tensor(acc)._own(*ts)
    acct: Tensor | None = None
    for t in ts:
      pads = [(off, total - off - t.shape[d]) if i == d else None for i in range(t.ndim)]
      pt = t.cast(dt).pad(pads, value=0 if sel else fill)
      if acct is None: acct = pt
      elif sel: acct = Tensor.full(t.shape, True, dtype=dtypes.bool, device=t.device).pad(pads).where(pt, acct)
      else: acct = acct.bitwise_or(pt) if dt == dtypes.bool else acct + pt
      off += t.shape[d]
    assert acct is not None
    # (the chain's size came out spelled by the pads' arithmetic, k+(j+i) for i+j+k: the result takes the total's spelling)
    if acct.shape[d] is not total: acct = Tensor(acct.uop.reshape(acct.shape[:d] + (total,) + acct.shape[d + 1:]))
    return acct._own(*ts)
  def stack(self: Tensor | Sequence[Tensor], *args: Tensor, dim: int = 0) -> Tensor:
    """Stack same-shaped tensors along a new dimension `dim` (`a.stack(b, c)`, `Tensor.stack(a, b)` or `Tensor.stack([a, b])`)."""
    ts = _tensor_args("stack", self, args)
    for t in ts[1:]:
      if t.shape != ts[0].shape: raise AssertedArgumentError(f"stack: shapes {ts[0].shape} and {t.shape} differ")
    d = ts[0]._resolve_dim(dim, extra=True)
    return Tensor.cat(*[t.unsqueeze(d) for t in ts], dim=d)
  def split(self: Tensor, sizes: int | Sequence[int], dim: int = 0) -> tuple[Tensor, ...]:
    """Split along `dim` into chunks of `sizes` (an int: equal chunks, the last may be smaller)."""
    if self.ndim == 0: raise ArgumentError("split: a 0-d tensor has no dim to split (as torch); reshape(1) it first")
    d = self._resolve_dim(dim)
    n = self.shape[d]
    if isinstance(n, UOp): raise SymbolicDimError(f"split: dim {d} of shape {self.shape} is symbolic ({n.render()}); split along a dim of known size")
    if isinstance(sizes, int):
      if sizes <= 0: raise ValueError(f"split: size must be positive, got {sizes}")
      sz = [min(sizes, n - i) for i in range(0, max(1, n), sizes)]
    else:
      sz = list(sizes)
      # (a negative or float size failed in shrink, naming a shrink the user never called)
      if not all(isinstance(s, int) and s >= 0 for s in sz): raise ArgumentError(f"split: sizes must be ints >= 0, got {sz}")
      if sum(sz) != n: raise AssertedArgumentError(f"split: sizes {sz} sum to {sum(sz)}, but dim {d} of shape {self.shape} has {n}")
    offs = list(itertools.accumulate(sz, initial=0))
    return tuple(self.shrink([(offs[k], offs[k+1]) if i == d else None for i in range(self.ndim)]) for k in range(len(sz)))
  def chunk(self: Tensor, chunks: int, dim: int = 0) -> list[Tensor]:
    """Split into `chunks` nearly equal pieces along `dim`."""
    if chunks <= 0: raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    if self.ndim == 0: raise ArgumentError("chunk: a 0-d tensor has no dim to chunk (as torch); reshape(1) it first")
    d = self._resolve_dim(dim)
    if isinstance(n := self.shape[d], UOp): raise SymbolicDimError(f"chunk: dim {d} of shape {self.shape} is symbolic ({n.render()}); chunk along a dim of known size")
    # an empty dim: `chunks` empty pieces, as torch and public tinygrad (split by 1 gave one)
    return list(self.split(ceildiv(self.shape[d], chunks) if self.shape[d] else [0] * chunks, d))

  # ---- shifts, windows, repeats, grids ----
  def pad_to(self: Tensor, shape: Any, *args: int | None, value: ConstType = 0) -> Tensor:
    """Pad at the end of each dim to `shape` (None keeps a dim) with `value`."""
    new = argfix(shape, *args)
    if len(new) != self.ndim: raise ValueError(f"pad_to: shape {new} has {len(new)} dims, tensor of shape {self.shape} has {self.ndim}")
    if any(s is not None and s < c for s, c in zip(new, self.shape)): raise ValueError(f"pad_to: {new} is smaller than {self.shape} somewhere; use shrink_to")
    return self.pad(tuple(None if s is None else (0, s - c) for s, c in zip(new, self.shape)), value=value)
  def shrink_to(self: Tensor, shape: Any, *args: int | None) -> Tensor:
    """Keep the first `shape[i]` elements of each dim (None keeps a dim)."""
    new = argfix(shape, *args)
    if len(new) != self.ndim: raise ValueError(f"shrink_to: shape {new} has {len(new)} dims, tensor of shape {self.shape} has {self.ndim}")
    if any(s is not None and not 0 <= s <= c for s, c in zip(new, self.shape)): raise ValueError(f"shrink_to: {new} is larger than {self.shape} somewhere; use pad_to")
    return self.shrink(tuple(None if s is None else (0, s) for s in new))
  def roll(self: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None) -> Tensor:
    """Shift elements along `dims` by `shifts`, wrapping around (torch.roll); dims=None rolls the flattened tensor."""
    if any(not isinstance(v, int) for v in (shifts if isinstance(shifts, (tuple, list)) else (shifts,))):
      raise TypeError(f"roll: shifts must be an int or a sequence of ints, got {shifts!r}")
    if dims is None:
      sh = (shifts,) if isinstance(shifts, int) else tuple(shifts)
      if len(sh) != 1: raise ArgumentError(f"roll: without dims, shifts must be one int (the flattened tensor's shift), got {shifts!r}")
      return self.flatten().roll(sh[0], 0).reshape(self.shape)
    sh, ds = ((shifts,) if isinstance(shifts, int) else tuple(shifts)), ((dims,) if isinstance(dims, int) else tuple(dims))
    if len(sh) != len(ds): raise ArgumentError(f"roll: shifts {sh} and dims {ds} need the same length")
    x = self.reshape(1) if self.ndim == 0 else self
    for s, dim in zip(sh, ds):
      d = x._resolve_dim(dim)
      n = x.shape[d]
      if n == 0 or s % n == 0: continue
      # (a symbolic size's % is C's, which keeps the sign: -1 % n was -1 and the shrink (n+1, n) raised; Python's is n-1)
      s = s % n if isinstance(n, int) or s >= 0 else n - (-s) % n
      x = x.shrink([(n - s, n) if i == d else None for i in range(x.ndim)]).cat(x.shrink([(0, n - s) if i == d else None for i in range(x.ndim)]), dim=d)
    return x.reshape(self.shape)._own(self)
  def unfold(self: Tensor, dim: int | None = None, size: int | None = None, step: int | None = None, *, dimension: int | None = None) -> Tensor:
    """torch's Tensor.unfold: the windows of `size` elements every `step` along `dim` (public tinygrad's name; torch's
    `dimension=` too), that dim becoming the window count (n - size) // step + 1 and a new last dim of `size`."""
    if dimension is not None:
      if dim is not None: raise TypeError("unfold: got both dim and dimension (one name for the same argument)")
      dim = dimension
    if dim is None or size is None or step is None: raise TypeError("unfold() needs dim, size and step")
    if self.ndim == 0: return self.reshape(1).unfold(0, size, step).reshape(size)
    d = self._resolve_dim(dim)
    n = self.shape[d]
    if not isinstance(size, int) or not 0 <= size <= n: raise RuntimeError(f"unfold: size {size!r} must be in 0..{n} (the size of dim {d})")
    if not isinstance(step, int) or step <= 0: raise RuntimeError(f"unfold: step {step!r} must be an int > 0")
    return self.transpose(d, -1)._pool((size,), step).transpose(d, -2)
  def repeat_interleave(self: Tensor, repeats: int | Sequence[int] | Tensor, dim: int | None = None) -> Tensor:
    """Repeat each element `repeats` times along `dim` (the flattened tensor when None). Per-element repeats (a list or a
    1-D Tensor, which realizes to read them) index with the repeated positions."""
    x, d = (self.flatten(), 0) if dim is None else (self, self._resolve_dim(dim))
    if x.ndim == 0: x = x.reshape(1)
    given: Any = repeats.tolist() if isinstance(repeats, Tensor) else repeats
    reps: list[int] = [given] if isinstance(given, int) else list(given)
    if any(not isinstance(r, int) or r < 0 for r in reps): raise ValueError(f"repeat_interleave: repeats must be ints >= 0, got {repeats!r}")
    # one repeat serves every element without a list of x.shape[d] copies (a symbolic size has no count: it was list * UOp)
    if len(reps) != 1 and (isinstance(x.shape[d], UOp) or len(reps) != x.shape[d]):
      raise ValueError(f"repeat_interleave: {len(reps)} repeats for dim {d} of size {x.shape[d]}")
    shp = x.shape
    if len(set(reps)) <= 1:
      r = reps[0] if reps else 0
      return x.unsqueeze(d + 1).expand(*shp[:d+1], r, *shp[d+1:]).reshape(*shp[:d], shp[d] * r, *shp[d+1:])._own(self)
    idx: list[Any] = [slice(None)] * d + [[i for i, r in enumerate(reps) for _ in range(r)]]
    return x[tuple(idx)]
  def meshgrid(self: Tensor | Sequence[Tensor], *args: Tensor, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors (`Tensor.meshgrid(x, y)` or `x.meshgrid(y)`): indexing='ij' gives shape
    (len(x), len(y), ...), 'xy' swaps the first two dims (numpy's default)."""
    ts = _tensor_args("meshgrid", self, args)
    if indexing not in ("ij", "xy"): raise ArgumentError(f"meshgrid: indexing={indexing!r}; valid: 'ij', 'xy'")
    if any(t.ndim > 1 for t in ts): raise ValueError(f"meshgrid: tensors must be 0-D or 1-D, got shapes {[t.shape for t in ts]}")
    ts = [t.reshape(-1) for t in ts]
    axes = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2: axes[0], axes[1] = 1, 0
    shape = [0] * len(ts)
    for t, a in zip(ts, axes): shape[a] = t.shape[0]
    return tuple(t.reshape([t.shape[0] if i == a else 1 for i in range(len(ts))]).expand(shape) for t, a in zip(ts, axes))
  def rearrange(self: Tensor, formula: str, **sizes: int) -> Tensor:
    """einops' rearrange: `x.rearrange("b (c h1) h -> b c (h h1)", h1=2)`. Names are axes; `(a b)` groups axes into one
    dimension (split on the left, given all sizes but one as keywords; merged on the right); `1` or `()` is a dimension of
    size 1; `...` stands for the dimensions not named (once per side, not grouped on the left). A malformed formula or a
    size that does not fit raises RearrangeError (an AssertionError, as public tinygrad's, and a ValueError); a rank that
    does not match, or a group with two unknown sizes, raises RuntimeError."""
    if formula.count("->") != 1: raise RearrangeError(f"rearrange: need exactly one '->' in {formula!r}")
    lhs, rhs = (_rearrange_side(s, formula) for s in formula.split("->"))
    lnames, rnames = [n for e in lhs for n in ([e] if isinstance(e, str) else e)], [n for e in rhs for n in ([e] if isinstance(e, str) else e)]
    if len(lnames) != len(set(lnames)) or sorted(lnames) != sorted(rnames):
      raise RearrangeError(f"rearrange: the names on the two sides of {formula!r} differ or repeat: {lnames} -> {rnames}")
    if any(isinstance(e, list) and "..." in e for e in lhs): raise RearrangeError(f"rearrange: '...' cannot be grouped on the left of {formula!r}")
    if (extra := [k for k in sizes if k not in lnames]): raise RearrangeError(f"rearrange: sizes given for {extra}, not axes of {formula!r}")
    n_ell = self.ndim - len(lhs) + 1 if "..." in lnames else 0
    if ("..." in lnames and n_ell < 0) or ("..." not in lnames and len(lhs) != self.ndim):
      raise RuntimeError(f"rearrange: {formula!r} names {len(lhs) - ('...' in lnames)} dimensions, the tensor has {self.ndim} (shape {self.shape})")
    ell = [f"...{i}" for i in range(n_ell)]
    def expand(side: list) -> list[list[str]]:   # every element a group; '...' becomes its axes
      out: list[list[str]] = []
      for e in side:
        if e == "...": out += [[n] for n in ell]
        elif isinstance(e, str): out.append([e])
        else: out.append([m for n in e for m in (ell if n == "..." else [n])])
      return out
    lg, rg = expand(lhs), expand(rhs)
    axis: dict[str, sint] = {}
    for grp, dim in zip(lg, self.shape):
      unknown = [n for n in grp if n not in sizes]
      known = prod(sizes[n] for n in grp if n in sizes)
      if len(unknown) > 1: raise RuntimeError(f"rearrange: cannot split {dim} into {grp}: give the sizes of all but one of {unknown} as keywords")
      # (a symbolic dim, (i*2), is divided as is: the reshape below checks the sizes agree for every value of its variables)
      if unknown and isinstance(dim, UOp): axis[unknown[0]] = ssimplify(dim // known)
      elif unknown: axis[unknown[0]] = dim // known if dim % known == 0 else _raise(RearrangeError(f"rearrange: {known} does not divide {dim} ({grp})"))
      elif known != dim: raise RearrangeError(f"rearrange: the sizes of {grp or '()'} make {known}, the dimension is {dim}")
      axis.update({n: sizes[n] for n in grp if n in sizes})
    order = [n for grp in lg for n in grp]
    t = self.reshape(tuple(axis[n] for n in order)).permute(tuple(order.index(n) for grp in rg for n in grp))
    return t.reshape(tuple(prod(axis[n] for n in grp) for grp in rg))

class RearrangeError(AssertionError, ValueError):
  """A malformed rearrange formula or a size that does not fit (an AssertionError too, as public tinygrad asserts)."""
def _raise(e: Exception) -> Any: raise e
def _rearrange_side(side: str, formula: str) -> list[str | list[str]]:
  """One side of a rearrange formula: names, '...', and groups (lists of them); '1' and '()' are empty groups."""
  out: list[str | list[str]] = []
  group: list[str] | None = None
  for tok in side.replace("…", "...").replace("(", " ( ").replace(")", " ) ").split():
    if tok == "(":
      if group is not None: raise RearrangeError(f"rearrange: nested brackets in {formula!r}")
      group = []
    elif tok == ")":
      if group is None: raise RearrangeError(f"rearrange: unbalanced brackets in {formula!r}")
      out.append(group)
      group = None
    elif tok == "1" and group is None: out.append([])
    elif tok == "..." or (tok.isidentifier() and not tok.startswith("_") and not tok.endswith("_")): (out if group is None else group).append(tok)
    else: raise RearrangeError(f"rearrange: {tok!r} in {formula!r} is not an axis name (an identifier not starting or ending with _), '...', '1' or a bracket")
  if group is not None: raise RearrangeError(f"rearrange: unbalanced brackets in {formula!r}")
  if [n for e in out for n in ([e] if isinstance(e, str) else e)].count("...") > 1: raise RearrangeError(f"rearrange: more than one '...' in {formula!r}")
  return out
