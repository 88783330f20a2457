# mypy: disable-error-code="misc"
"""Tensor methods, indexing: __getitem__/__setitem__ (basic and advanced), gather, one_hot, triu/tril."""
from __future__ import annotations
from typing import TYPE_CHECKING, Any
from tinygrad.dtype import dtypes, ConstType
from tinygrad.helpers import flatten, CHECK_OOB
from tinygrad.mixin.common import _broadcast_shape
from tinygrad.uop.ops import UOp, ssimplify, sint_le, sint
from dataclasses import dataclass
if TYPE_CHECKING: from tinygrad.tensor import Tensor

@dataclass
class _IndexPlan:
  """Basic indexing as movement ops: flip `flips`, shrink, take every step-th, reshape to out_shape; tensor indices come after."""
  idx: list[Any]
  flips: list[int]
  shrinks: list[tuple[sint, sint]]
  steps: list[int]
  lens: list[sint]
  out_shape: list[sint]
  tensor_idx: list[tuple[int, int, Any]]  # (input dim, position in out_shape, index)
  adv_pos: list[int]                      # positions in idx of ints and tensor indices (numpy's placement rule)


def _check_oob(op: str, idx: Tensor, n: int, axis: int, allow_negative: bool) -> None:
  """With CHECK_OOB=1: an IndexError for the first index outside [-n, n) (or [0, n)); realizes `idx`."""
  if not CHECK_OOB or idx.numel() == 0: return
  lo = -n if allow_negative and not dtypes.is_unsigned(idx.dtype) else 0
  bad = [v for v in idx.flatten().tolist() if not lo <= v < n]
  if bad: raise IndexError(f"{op}: index {bad[0]} is out of bounds for axis {axis} with size {n} (valid: {lo}..{n-1}; CHECK_OOB=1)")


def _symbolic_index(i: Any, n: sint, d: int) -> tuple[sint, sint]:
  """(start, length) of an int, a bound variable, or a slice of step 1 whose bounds or dimension are symbolic: with
  variables there is no clamping, so the bounds must hold for every value the variables may take."""
  if isinstance(i, slice):
    if i.step not in (None, 1): raise IndexError(f"a slice with symbolic bounds or size needs step 1, got {i.step} (axis {d})")
    start, stop = (0 if i.start is None else i.start), (n if i.stop is None else i.stop)
  else: start, stop = i, i + 1
  if isinstance(start, int) and start < 0: start = start + n
  if isinstance(stop, int) and stop < 0: stop = stop + n
  start, stop = ssimplify(start), ssimplify(stop)
  if not (sint_le(0, start) and sint_le(start, stop) and sint_le(stop, n)):
    shown = f"{_r(i.start)}:{_r(i.stop)}" if isinstance(i, slice) else _r(i)
    raise IndexError(f"index {shown} (as [{_r(start)}, {_r(stop)}), variables over their whole range) is out of bounds for axis {d} with size {n} for some value of its variables: "
                     "narrow the Variable's [min, max] range so every value stays in bounds")
  return start, ssimplify(stop - start)

def _r(x: Any) -> str: return "" if x is None else x.render() if isinstance(x, UOp) else str(x)

class IndexingMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- indexing ----
  def _index_plan(self: Tensor, indices: Any) -> _IndexPlan:
    idx = list(indices) if isinstance(indices, tuple) else [indices]
    for i in idx:
      if isinstance(i, bool): raise IndexError("boolean scalar indices are not supported; index with ints, slices, None, ... or int Tensors")
      if not (i is None or i is Ellipsis or isinstance(i, (int, slice, Tensor, list, UOp)) or hasattr(i, "dtype")):
        raise IndexError(f"unsupported index {i!r} ({type(i).__name__}); valid: int, slice, None, Ellipsis, int Tensor, list of ints")
    if sum(i is Ellipsis for i in idx) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(i is not None and i is not Ellipsis for i in idx)
    if consumed > self.ndim: raise IndexError(f"too many indices for tensor of shape {self.shape}: {consumed} given")
    ell = next((k for k, i in enumerate(idx) if i is Ellipsis), len(idx))
    idx = idx[:ell] + [slice(None)] * (self.ndim - consumed) + idx[ell+1:]
    # basic indexing: flip negative steps, shrink, stride, then drop int dims and add None dims
    flips: list[int] = []
    shrinks: list[tuple[sint, sint]] = []
    steps: list[int] = []
    lens: list[sint] = []
    out_shape: list[sint] = []
    tensor_idx: list[tuple[int, int, Any]] = []
    adv_pos: list[int] = []
    d, out_pos = 0, 0
    for k, i in enumerate(idx):
      if i is None:
        out_shape.append(1)
        out_pos += 1
        continue
      n = self.shape[d]
      if isinstance(i, UOp) or isinstance(n, UOp) and isinstance(i, (int, slice)) or \
         isinstance(i, slice) and any(isinstance(x, UOp) for x in (i.start, i.stop, i.step)):
        start, length = _symbolic_index(i, n, d)
        shrinks.append((start, ssimplify(start + length)))
        if isinstance(i, slice): out_shape.append(length)
        else: adv_pos.append(k)
        out_pos += isinstance(i, slice)
        steps.append(1)
        lens.append(length)
        d += 1
        continue
      if isinstance(i, int):
        if not -n <= i < n: raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
        start, step, length = i + n if i < 0 else i, 1, 1
        adv_pos.append(k)
      elif isinstance(i, slice):
        r = range(*i.indices(n))
        start, step, length = r.start, r.step, len(r)
        out_shape.append(length)
        out_pos += 1
      else:
        start, step, length = 0, 1, n
        tensor_idx.append((d, out_pos, i))
        adv_pos.append(k)
        out_shape.append(n)
        out_pos += 1
      if length == 0: step = 1
      elif step < 0:
        flips.append(d)
        start, step = n - 1 - start, -step
      shrinks.append((start, start + (length - 1) * step + 1) if length else (0, 0))
      steps.append(step)
      lens.append(length)
      d += 1
    return _IndexPlan(idx, flips, shrinks, steps, lens, out_shape, tensor_idx, adv_pos)
  def __getitem__(self: Tensor, indices: Any) -> Tensor:
    """numpy-style indexing: ints, slices (any step), None, Ellipsis, and int Tensor/list indices (lazy: masks and a sum)."""
    p = self._index_plan(indices)
    idx, flips, shrinks, steps, lens, out_shape, tensor_idx, adv_pos = p.idx, p.flips, p.shrinks, p.steps, p.lens, p.out_shape, p.tensor_idx, p.adv_pos
    x = self.flip(flips) if flips else self
    x = x.shrink(shrinks)
    if any(s > 1 for s in steps):
      x = x.pad([(0, ln * s - (e - b)) for (b, e), s, ln in zip(shrinks, steps, lens)])
      x = x.reshape(flatten((ln, s) for ln, s in zip(lens, steps)))
      x = x.shrink(flatten(((0, ln), (0, 1)) for ln in lens)).reshape(lens)
    x = x.reshape(out_shape)
    if not tensor_idx: return x
    # advanced indexing: one-hot masks over the indexed dims, a where and a sum (stays lazy, fuses)
    ts = []
    for dd, pos, i in tensor_idx:
      t = i if isinstance(i, Tensor) else Tensor(i, device=self.device)
      if not dtypes.is_int(t.dtype): raise IndexError(f"tensor indices must be ints, got {t.dtype} (boolean masks are not supported: their shape depends on the data)")
      n = self.shape[dd]
      _check_oob("index", t, n, dd, True)
      ts.append((pos, (t < 0).where(t + n, t) if not dtypes.is_unsigned(t.dtype) else t, n))
    bshape = _broadcast_shape(*(t.shape for _, t, _ in ts))
    nb, nx = len(bshape), x.ndim
    mask: Tensor | None = None
    for pos, t, n in ts:
      m = t._broadcast_to(bshape).reshape(bshape + (1,) * nx) == \
        Tensor.arange(n, device=self.device).reshape((1,) * nb + tuple(n if j == pos else 1 for j in range(nx)))
      mask = m if mask is None else mask & m
    assert mask is not None
    xe = x.reshape((1,) * nb + x.shape)
    ret = mask.where(xe, xe._const(0, shape=())).sum(tuple(nb + pos for pos, _, _ in ts), dtype=self.dtype)
    # numpy: advanced indices next to each other put the broadcast dims where they were; otherwise first
    if adv_pos == list(range(adv_pos[0], adv_pos[0] + len(adv_pos))):
      first = sum(1 for i in idx[:adv_pos[0]] if i is None or isinstance(i, slice))
      order = list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, ret.ndim))
      ret = ret.permute(order)
    return ret
  def __setitem__(self: Tensor, indices: Any, v: Tensor | ConstType) -> None:
    """Write `v` (broadcast) into self[indices]: basic indices (ints, slices, None, Ellipsis); an assign of a masked where."""
    p = self._index_plan(indices)
    if p.tensor_idx: raise NotImplementedError("setitem with Tensor/list indices is not supported; use mask.where(value, x) and assign")
    # `x[i] += y` calls x[i].__iadd__ (already an assign into x) and then sets the result back: nothing left to write
    if isinstance(v, Tensor) and v._view_of is not None and v._view_of is (self._view_of or self) and v.uop is self[indices].uop: return
    vt = self._to_tensor(v).cast(self.dtype)
    try: vt = vt._broadcast_to(tuple(p.out_shape))
    except ValueError: raise ValueError(f"setitem: value of shape {vt.shape} does not fit the indexed shape {tuple(p.out_shape)}") from None
    def scatter(x: Tensor) -> Tensor:  # the inverse of the basic-indexing movement ops: back to self's shape, zeros elsewhere
      x = x.reshape(p.lens)
      if any(s > 1 for s in p.steps):
        x = x.reshape(flatten((ln, 1) for ln in p.lens)).pad(flatten(((0, 0), (0, s - 1)) for s in p.steps))
        x = x.reshape([ln * s for ln, s in zip(p.lens, p.steps)]).shrink([(0, e - b) for b, e in p.shrinks])
      x = x.pad([(b, n - e) for (b, e), n in zip(p.shrinks, self.shape)])
      return x.flip(p.flips) if p.flips else x
    mask = scatter(Tensor.full(tuple(p.out_shape), True, dtype=dtypes.bool, device=self.device))
    self.assign(mask.where(scatter(vt), self))
  def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """out[..., j, ...] = self[..., index[..., j, ...], ...] along `dim` (index may be smaller than self in other dims)."""
    d = self._resolve_dim(dim)
    if index.ndim != self.ndim: raise ValueError(f"gather: index shape {index.shape} and input shape {self.shape} need the same number of dims")
    if any(a > b for i, (a, b) in enumerate(zip(index.shape, self.shape)) if i != d):
      raise ValueError(f"gather: index shape {index.shape} is larger than input shape {self.shape} outside dim {d}")
    n = self.shape[d]
    _check_oob("gather", index, n, d, False)
    x = self.shrink([None if i == d else (0, s) for i, s in enumerate(index.shape)])
    xe = x.unsqueeze(-1).transpose(d, -1).expand(*index.shape, n)
    mask = index.unsqueeze(-1) == Tensor.arange(n, device=self.device)
    return mask.where(xe, xe._const(0, shape=())).sum(-1, dtype=self.dtype)
  def one_hot(self: Tensor, num_classes: int = -1) -> Tensor:
    """int32 one-hot encoding along a new last dimension (num_classes=-1 computes max+1, which realizes)."""
    if num_classes == -1: num_classes = int(self.max().item()) + 1
    _check_oob("one_hot", self, num_classes, self.ndim, False)
    return (self.unsqueeze(-1) == Tensor.arange(num_classes, device=self.device)).where(1, 0)
  def _tri(self: Tensor, diagonal: int, upper: bool) -> Tensor:
    r, c = self.shape[-2], self.shape[-1]
    rows, cols = Tensor.arange(r, device=self.device).unsqueeze(-1), Tensor.arange(c, device=self.device)
    mask = (cols >= rows + diagonal) if upper else (cols <= rows + diagonal)
    return mask.where(self, self._const(0, shape=()))
  def triu(self: Tensor, diagonal: int = 0) -> Tensor:
    """Zero below the `diagonal`-th diagonal of the last two dims."""
    return self._tri(diagonal, True)
  def tril(self: Tensor, diagonal: int = 0) -> Tensor:
    """Zero above the `diagonal`-th diagonal of the last two dims."""
    return self._tri(diagonal, False)
