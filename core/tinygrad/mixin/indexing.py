# mypy: disable-error-code="misc"
"""Tensor methods, indexing: __getitem__/__setitem__ (basic, advanced, bool masks), gather, scatter/scatter_reduce,
masked_select/nonzero, one_hot, triu/tril."""
from __future__ import annotations
from typing import TYPE_CHECKING, Any
from tinygrad.dtype import dtypes, ConstType, sum_acc_dtype
from tinygrad.helpers import flatten, prod, all_int, CHECK_OOB
from tinygrad.mixin.common import _CHUNK, _broadcast_shape, _flatten_py, _whole_int, ArgumentError, OpDTypeError
from tinygrad.mixin.disk import is_disk
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, ssimplify, sint_le, sint, sym_vars, reduce_identity
from tinygrad.mixin.reduce import _combine
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
  adv_pos: list[int]                      # positions in idx of the tensor (and list) indices
  adv_adjacent: bool                      # those indices sit next to each other, ints aside (torch's placement rule: a
                                          # slice or None between them separates them, an int or an empty Ellipsis does not)


def _check_oob(op: str, idx: Tensor, n: int, axis: int, allow_negative: bool) -> None:
  """With CHECK_OOB=1: an IndexError for the first index outside [-n, n) (or [0, n)); realizes `idx`."""
  if not CHECK_OOB or idx.numel() == 0: return
  lo = -n if allow_negative and not dtypes.is_unsigned(idx.dtype) else 0
  bad = [v for v in idx.flatten().tolist() if not lo <= v < n]
  if bad: raise IndexError(f"{op}: index {bad[0]} is out of bounds for axis {axis} with size {n} (valid: {lo}..{n-1}; CHECK_OOB=1)")


def _scatter_pads(ishape: tuple[sint, ...], shape: tuple[sint, ...], d: int) -> list[tuple[sint, sint] | None]:
  # from an index's shape up to self's outside dim d: a scatter leaves the lines the index does not reach as they are
  return [None if k == d else (0, t - i) for k, (i, t) in enumerate(zip(ishape, shape))]

def _negative(x: Any) -> bool:
  # an index that counts from the end: a negative int, or an expression negative for every value (x[-n:], x[:, -n]); one
  # that may take either sign has no single start and is checked as it is (and raises)
  return x < 0 if isinstance(x, int) else isinstance(x, UOp) and x.vmax < 0

def _symbolic_index(i: Any, n: sint, d: int) -> tuple[sint, sint]:
  """(start, length) of an int, a bound variable, or a slice of step 1 whose bounds or dimension are symbolic: with
  variables there is no clamping, so the bounds must hold for every value the variables may take."""
  if isinstance(i, slice):
    if i.step not in (None, 1): raise IndexError(f"a slice with symbolic bounds or size needs step 1, got {i.step} (axis {d})")
    start, stop = (0 if i.start is None else i.start), (n if i.stop is None else i.stop)
    if _negative(start): start = start + n
    if _negative(stop): stop = stop + n
  else:   # an int counts from the end when negative, and its one element follows it: x[-1] is [n-1, n), not [n-1, 0)
    start = i + n if _negative(i) else i
    stop = start + 1
  start, stop = ssimplify(start), ssimplify(stop)
  if not (sint_le(0, start) and sint_le(start, stop) and sint_le(stop, n)):
    shown = f"{_r(i.start)}:{_r(i.stop)}" if isinstance(i, slice) else _r(i)
    raise IndexError(f"index {shown} (as [{_r(start)}, {_r(stop)}){_values(start, stop, n)}) is out of bounds for axis {d} with size {_r(n)}")
  return start, ssimplify(stop - start)

def _values(*xs: Any) -> str:
  # which values the check used: the bound variables' own, else every value in the ranges of the unbound ones
  vs = sym_vars(xs)
  def uops(x: Any) -> list[UOp]: return [x] if isinstance(x, UOp) else [u for y in x for u in uops(y)] if isinstance(x, (tuple, list)) else []
  unbound = sorted({n.arg[0] for x in uops(xs) for n in x.toposort(gate=lambda y: y.op is not Ops.BIND) if n.op is Ops.DEFINE_VAR})
  if unbound: return f", for some value of {', '.join(unbound)} in its [min, max] range: narrow the range or bind it"
  return f", with {', '.join(f'{b.src[0].arg[0]}={b.src[1].arg}' for b in vs)}" if vs else ""
def _seq_index(i: Any) -> Any:
  # a tuple inside the index tuple is a list index (x[(1, 0), :] as x[[1, 0], :]), as in numpy and torch
  return [_seq_index(v) for v in i] if isinstance(i, tuple) else i
def _list_as_tuple(indices: Any) -> Any:
  # public tinygrad's (and torch's, until 2.9) rule: a list index holding anything but ints is a tuple of indices
  # (x[[slice(None), [1, 3]]] is x[:, [1, 3]], x[[[0, 2], [-1]]] is x[[0, 2], [-1]]); a nested bool list stays a mask
  if not isinstance(indices, list) or all(isinstance(i, int) for i in indices): return indices
  def bools(x: Any) -> bool: return all(bools(v) for v in x) if isinstance(x, (list, tuple)) else isinstance(x, bool)
  return indices if bools(indices) else tuple(indices)
def _fit_value(v: Tensor, shape: tuple[sint, ...]) -> Tensor:
  # a setitem value broadcasts to the indexed shape after dropping leading dims of size 1 past its rank (torch and numpy:
  # x[0:2] = ones(1, 2, 5) writes a (2, 5) view)
  while v.ndim > len(shape) and v.shape[0] == 1: v = v.reshape(v.shape[1:])
  return v._broadcast_to(shape)
def _r(x: Any) -> str: return "" if x is None else x.render() if isinstance(x, UOp) else str(x)

# scatter_reduce: the one-hot mask's size (lines * positions * indices) up to which it beats sorting (_scatter_lines). Warm
# on CPU, (2, 32768) into (2, 32768): one-hot 0.24 s (sum) / 0.44 s (amax), sorted 0.53 s / 1.0 s; (2, 65536): 0.93 s / 0.8 s.
# Sorting also compiles ~70 kernels the first time (6-15 s cold). Past _CHUNK indices per line the one-hot's reduce splits
# and, under a pad, realizes the whole mask: sorted there already from 1/64 of the size
_SCATTER_ONEHOT_MAX = 1 << 32
def _scatter_sorts(index: Tensor, d: int, n: sint) -> bool:
  # whether a scatter of `index` (along d, into n positions) sorts rather than builds the one-hot mask
  size = index.numel() * n if all_int(index.shape) and isinstance(n, int) else 0
  return size > _SCATTER_ONEHOT_MAX or (index.shape[d] > _CHUNK and size > _SCATTER_ONEHOT_MAX >> 6)

def _flat_index(ts: list[tuple[int, Tensor, int]]) -> tuple[Tensor, int, Any]:
  """Tensor indices (as _adv_indices gives them) as one index into their axes flattened (row-major, -1 where one is out
  of its axis), with the flattened size and the index's dtype."""
  total = prod(n for _, _, n in ts)
  idt = dtypes.int64 if total > dtypes.max(dtypes.int32) else dtypes.int32
  lin, stride, inb = None, 1, None
  for _, t, n in reversed(ts):
    term = t.cast(idt) * stride if stride != 1 else t.cast(idt)
    lin, stride = term if lin is None else lin + term, stride * n
    # an index past its own axis picks nothing (0, as the one-hot masks give): in the flattened index it landed on
    # another element (x[0, 4] of a (2, 3) read x[1, 1]), and an int64 index cast to int32 wrapped (2**32 + 1 read 1)
    ok = (t >= 0) & (t < n)
    inb = ok if inb is None else inb & ok
  assert lin is not None and inb is not None
  return inb.where(lin, -1), total, idt

class IndexingMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- indexing ----
  def _index_plan(self: Tensor, indices: Any) -> _IndexPlan:
    idx = [_seq_index(i) for i in indices] if isinstance(indices, tuple) else [indices]
    for i in idx:
      if isinstance(i, bool): raise IndexError("boolean scalar indices are not supported; index with ints, slices, None, ... or int Tensors")
      if isinstance(i, slice) and any(v is not None and not isinstance(v, (int, UOp)) and not hasattr(v, "__index__") for v in (i.start, i.stop, i.step)):
        raise TypeError(f"slice indices must be ints, None or bound Variables, got {i!r}")   # as Python's slice.indices
      if not (i is None or i is Ellipsis or isinstance(i, (int, slice, Tensor, list, UOp)) or hasattr(i, "dtype")):
        raise IndexError(f"unsupported index {i!r} ({type(i).__name__}); valid: int, slice, None, Ellipsis, int Tensor, list of ints")
    if sum(i is Ellipsis for i in idx) > 1: raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(i is not None and i is not Ellipsis for i in idx)
    if consumed > self.ndim: raise IndexError(f"too many indices for tensor of shape {self.shape}: {consumed} given")
    ell = next((k for k, i in enumerate(idx) if i is Ellipsis), len(idx))
    idx = idx[:ell] + [slice(None)] * (self.ndim - consumed) + idx[ell+1:]
    # torch's rule: the ints select first, then tensor indices side by side keep their place, else their dims go first
    kept = [i for i in idx if not isinstance(i, (int, UOp))]
    written = [k for k, i in enumerate(kept) if i is not None and not isinstance(i, slice)]
    adjacent = written == list(range(written[0], written[0] + len(written))) if written else True
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
        out_pos += isinstance(i, slice)
        steps.append(1)
        lens.append(length)
        d += 1
        continue
      if isinstance(i, int):
        if not -n <= i < n: raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
        start, step, length = i + n if i < 0 else i, 1, 1
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
      if isinstance(length, UOp): shrinks.append((0, n))   # a tensor index over a symbolic axis: the whole axis, step 1
      else:
        if length == 0: step = 1
        elif step < 0:
          flips.append(d)
          start, step = n - 1 - start, -step
        shrinks.append((start, start + (length - 1) * step + 1) if length else (0, 0))
      steps.append(step)
      lens.append(length)
      d += 1
    return _IndexPlan(idx, flips, shrinks, steps, lens, out_shape, tensor_idx, adv_pos, adjacent)
  def _bool_indices(self: Tensor, indices: Any) -> Any:
    """numpy's rule: a bool mask index stands for the int indices of its True elements (its nonzero()), consuming as many
    dims as it has; this realizes the mask to count them. Other indices are returned as they are."""
    idx = [_seq_index(i) for i in indices] if isinstance(indices, tuple) else [indices]
    def as_mask(i: Any) -> Tensor | None:
      if isinstance(i, Tensor): return i if i.dtype == dtypes.bool else None
      if isinstance(i, list) and i and all(isinstance(v, bool) for v in _flatten_py(i)[1]): return Tensor(i, dtype=dtypes.bool, device=self.device)
      # a numpy bool array is a mask too (as in numpy and torch); it raised "tensor indices must be ints or bools"
      if not isinstance(i, UOp) and str(getattr(i, "dtype", "")) == "bool": return Tensor(i, device=self.device)
      return None
    masks = [as_mask(i) for i in idx]
    if all(m is None for m in masks): return indices
    consumed = sum(m.ndim if m is not None else int(i is not None and i is not Ellipsis) for i, m in zip(idx, masks))
    if consumed > self.ndim: raise IndexError(f"too many indices for tensor of shape {self.shape}: {consumed} dims indexed")
    out: list[Any] = []
    d = 0
    for i, m in zip(idx, masks):
      if m is None:
        out.append(i)
        d += self.ndim - consumed if i is Ellipsis else int(i is not None)
        continue
      if m.ndim == 0: raise IndexError("boolean scalar indices are not supported; index with ints, slices, None, ... or Tensors")
      if m.shape != self.shape[d:d+m.ndim]:
        raise IndexError(f"boolean index of shape {m.shape} does not match the indexed dims {self.shape[d:d+m.ndim]} (dims {d}..{d+m.ndim-1} of {self.shape})")
      out.extend(m.nonzero(as_tuple=True))
      d += m.ndim
    return tuple(out)
  def _adv_indices(self: Tensor, p: _IndexPlan) -> tuple[list[tuple[int, Tensor, int]], tuple[sint, ...]]:
    """The tensor indices of p as (view axis, int index tensor made non-negative, axis size), and their broadcast shape."""
    ts = []
    oob: list[str] = []   # raised unless the indices broadcast to nothing (torch and numpy pick no element then)
    for dd, pos, i in p.tensor_idx:
      n = self.shape[dd]
      if isinstance(i, list):
        vals = _flatten_py(i)[1]
        if (bad := [v for v in vals if not isinstance(v, int)]): raise IndexError(f"list indices must be ints, got {bad[0]!r} for axis {dd}")
        if (bad := [v for v in vals if not -n <= v < n]): oob.append(f"index {bad[0]!r} is out of bounds for axis {dd} with size {n} (valid: {-n}..{n-1})")
        t = Tensor(i, device=self.device, dtype=dtypes.int32 if not vals else None)
      else: t = i if isinstance(i, Tensor) else Tensor(i, device=self.device)
      if not dtypes.is_int(t.dtype): raise IndexError(f"tensor indices must be ints or bools, got {t.dtype}")
      _check_oob("index", t, n, dd, True)
      # t + n must hold n: an int8 index into an axis of 300 raised (300 does not fit int8), as torch's long indices do not
      if not dtypes.is_unsigned(t.dtype) and n > dtypes.max(t.dtype): t = t.cast(dtypes.int64 if n > dtypes.max(dtypes.int32) else dtypes.int32)
      ts.append((pos, (t < 0).where(t + n, t) if not dtypes.is_unsigned(t.dtype) else t, n))
    bshape = _broadcast_shape(*(t.shape for _, t, _ in ts))
    if oob and prod(bshape) != 0: raise IndexError(oob[0])
    return ts, bshape
  def _adv_order(self: Tensor, p: _IndexPlan, nb: int, nx: int, nt: int) -> list[int] | None:
    # torch: tensor indices next to each other (ints aside) put the broadcast dims where they were; otherwise first
    if not p.adv_adjacent: return None
    first = sum(1 for i in p.idx[:p.adv_pos[0]] if i is None or isinstance(i, slice))
    return list(range(nb, nb + first)) + list(range(nb)) + list(range(nb + first, nb + nx - nt))
  def _adv_plan(self: Tensor, p: _IndexPlan) -> tuple[Tensor, int, tuple[int, ...], list[int] | None]:
    """Advanced indexing over the basic view (shape p.out_shape): the one-hot mask (broadcast index shape + view shape) of
    the positions each index picks, the number of broadcast dims, the view axes the indices consume, and the order that
    moves the broadcast dims to where torch puts them (None: they stay first)."""
    ts, bshape = self._adv_indices(p)
    nb, nx = len(bshape), len(p.out_shape)
    mask: Tensor | None = None
    for pos, t, n in ts:
      m = t._broadcast_to(bshape).reshape(bshape + (1,) * nx) == \
        Tensor.arange(n, device=self.device).reshape((1,) * nb + tuple(n if j == pos else 1 for j in range(nx)))
      mask = m if mask is None else mask & m
    assert mask is not None
    return mask, nb, tuple(pos for pos, _, _ in ts), self._adv_order(p, nb, nx, len(ts))
  def __getitem__(self: Tensor, indices: Any) -> Tensor:
    """torch-style indexing: ints, slices (any step), None, Ellipsis, int Tensor/list/tuple indices (lazy: one-hot masks
    and a sum; their dims go where torch puts them, which differs from numpy where an int separates them: x[1, :, t] has
    t's dims in the middle; a 0-d Tensor is a tensor index, as in public tinygrad, where torch reads an int) and bool
    masks (data-dependent: they realize to count their True elements, as nonzero() does)."""
    if isinstance(indices, Tensor) and indices.dtype == dtypes.bool and indices.shape == self.shape and self.ndim:
      return self.masked_select(indices)   # t[t > 0]: the common whole-shape mask in one pass
    p = self._index_plan(self._bool_indices(indices := _list_as_tuple(indices)))
    x = self.flip(p.flips) if p.flips else self
    x = x.shrink(p.shrinks)
    if any(s > 1 for s in p.steps):
      x = x._pad_view(tuple((0, ln * s - (e - b)) for (b, e), s, ln in zip(p.shrinks, p.steps, p.lens)))   # (cut away again below)
      x = x.reshape(flatten((ln, s) for ln, s in zip(p.lens, p.steps)))
      x = x.shrink(flatten(((0, ln), (0, 1)) for ln in p.lens)).reshape(p.lens)
    x = x.reshape(p.out_shape)
    if not p.tensor_idx: return x
    if len(p.tensor_idx) > 1 and all_int(x.shape):
      # several tensor indices pick one element of their axes together: one index into those axes flattened (moved last),
      # whose one-hot sum the codegen turns into a load, O(index size); a mask per axis ANDed together summed over every
      # element of those axes, O(index size * their size) (x[0, i, j] of a (100, 200) plane: 20000x the work)
      ts, bshape = self._adv_indices(p)
      picked = [pos for pos, _, _ in ts]
      rest = [j for j in range(x.ndim) if j not in picked]
      lin, total, idt = _flat_index(ts)
      nb, nr = len(bshape), len(rest)
      xf = x.permute(rest + picked).reshape((1,) * nb + tuple(x.shape[j] for j in rest) + (total,))
      hit = lin._broadcast_to(bshape).reshape(bshape + (1,) * nr + (1,)) == Tensor.arange(total, device=self.device, dtype=idt).reshape((1,) * (nb + nr) + (total,))
      ret = hit._pick(xf, -1, self.dtype)
      order = self._adv_order(p, nb, x.ndim, len(ts))
      return ret.permute(order) if order is not None else ret
    mask, nb, axes, order = self._adv_plan(p)
    xe = x.reshape((1,) * nb + x.shape)
    ret = mask._pick(xe, tuple(nb + a for a in axes), self.dtype)
    return ret.permute(order) if order is not None else ret
  def __setitem__(self: Tensor, indices: Any, v: Tensor | ConstType) -> None:
    """Write `v` (broadcast to self[indices]'s shape) into self[indices] as an assign: basic indices, int Tensor/list
    indices (where an index repeats, the last write wins, as in numpy) and bool masks (a whole-shape mask with a value of
    one element stays lazy; others realize, as nonzero() does)."""
    if is_disk(self.device):   # a file: written through the view (mixin/disk.py)
      if any(isinstance(i, (Tensor, list)) for i in (indices if isinstance(indices, tuple) else (indices,))):
        raise NotImplementedError(f"setitem into {self.device}: tensor (advanced) indices are not supported on a DISK tensor; "
                                  "write slices, or copy it to a computing device")
      self[indices].assign(v if isinstance(v, Tensor) else Tensor(v, dtype=self.dtype))
      return
    vt, indices = self._to_tensor(v).cast(self.dtype), _list_as_tuple(indices)
    if isinstance(indices, Tensor) and indices.dtype == dtypes.bool and indices.shape == self.shape and vt.numel() == 1:
      self.assign(indices.where(vt.reshape(()), self))
      return
    p = self._index_plan(self._bool_indices(indices))
    # `x[i] += y` calls x[i].__iadd__ (already an assign into x) and then sets the result back: nothing left to write
    if not p.tensor_idx and isinstance(v, Tensor) and v._view_of is not None and v._view_of is (self._view_of if self._view_of is not None else self) and v.uop is self[indices].uop: return
    def scatter(x: Tensor) -> Tensor:  # the inverse of the basic-indexing movement ops: back to self's shape, zeros elsewhere
      x = x.reshape(p.lens)
      if any(s > 1 for s in p.steps):
        x = x.reshape(flatten((ln, 1) for ln in p.lens)).pad(flatten(((0, 0), (0, s - 1)) for s in p.steps))
        x = x.reshape([ln * s for ln, s in zip(p.lens, p.steps)]).shrink([(0, e - b) for b, e in p.shrinks])
      x = x.pad([(b, n - e) for (b, e), n in zip(p.shrinks, self.shape)])
      return x.flip(p.flips) if p.flips else x
    if not p.tensor_idx:
      try: vt = _fit_value(vt, tuple(p.out_shape))
      except ValueError: raise ValueError(f"setitem: value of shape {vt.shape} does not fit the indexed shape {tuple(p.out_shape)}") from None
      if tuple(p.out_shape) == self.shape and all(b == 0 and e == n for (b, e), n in zip(p.shrinks, self.shape)) and \
         all(s == 1 for s in p.steps) and not p.flips:
        # the whole tensor (x[:] = v, x[0:1] = v of one row): the value itself, so that writing x into itself stays the no-op
        # it is for a view (a TinyJit capture saw a write into a copied view input the first call had not written)
        self.assign(vt)
        return
      self.assign(scatter(Tensor.full(tuple(p.out_shape), True, dtype=dtypes.bool, device=self.device)).where(scatter(vt), self))
      return
    # advanced: bring v to (broadcast dims + the basic view's shape), then per view position take the last index that hits it
    mask, nb, axes, order = self._adv_plan(p)
    bshape, nx = mask.shape[:nb], len(p.out_shape)
    rest = tuple(s for j, s in enumerate(p.out_shape) if j not in axes)
    full = bshape + rest
    shape = tuple(full[o] for o in order) if order is not None else full
    try: vt = _fit_value(vt, shape)
    except ValueError: raise ValueError(f"setitem: value of shape {vt.shape} does not fit the indexed shape {shape}") from None
    if order is not None: vt = vt.permute([order.index(j) for j in range(len(order))])
    vt = vt.reshape(bshape + tuple(1 if j in axes else s for j, s in enumerate(p.out_shape)))
    nbf = prod(bshape)
    vt = vt.reshape((nbf,) + vt.shape[nb:])
    ts, _ = self._adv_indices(p)
    lin, total, _ = _flat_index(ts)
    lin = lin._broadcast_to(bshape).reshape(nbf)
    if all_int(p.out_shape) and _scatter_sorts(lin, 0, total):
      # many indices into a large axis (x[i] = v of 100003 into 100003: the one-hot raised MemoryError): the last writer of
      # each element of the indexed axes flattened is a scatter_reduce amax of the writers' numbers (sorted at this size)
      bid = Tensor.arange(1, nbf + 1, device=self.device)
      last = Tensor.zeros(total, dtype=bid.dtype, device=self.device).scatter_reduce(0, lin, bid, "amax")
      last = last.reshape(tuple(n if j in axes else 1 for j, n in enumerate(p.out_shape)))._broadcast_to(tuple(p.out_shape))
    else:
      mask = mask._broadcast_to(bshape + tuple(p.out_shape)).reshape((nbf, *p.out_shape))
      bid = Tensor.arange(1, nbf + 1, device=self.device).reshape((nbf,) + (1,) * nx)
      last = mask.where(bid, 0)._max(0)   # 0 where no index hits the position
    # read the winning value (a load), not a one-hot sum: a sum starting at +0.0 turned a written -0.0 into 0.0
    vals = vt._broadcast_to((nbf, *p.out_shape)).gather(0, (last - 1).maximum(0).unsqueeze(0)).squeeze(0)
    self.assign(scatter(last > 0).where(scatter(vals), self))
  def gather(self: Tensor, dim: int, index: Tensor) -> Tensor:
    """out[..., j, ...] = self[..., index[..., j, ...], ...] along `dim` (index may be smaller than self in other dims)."""
    d = self._resolve_dim(dim)
    if not dtypes.is_int(index.dtype): raise ArgumentError(f"gather: the index needs an int dtype, got {index.dtype}")
    if index.ndim != self.ndim: raise ArgumentError(f"gather: index shape {index.shape} and input shape {self.shape} need the same number of dims")
    if any(a > b for i, (a, b) in enumerate(zip(index.shape, self.shape)) if i != d):
      raise ArgumentError(f"gather: index shape {index.shape} is larger than input shape {self.shape} outside dim {d}")
    # a 0-d self has dim 0 as torch's (as scatter): Tensor(3.0).gather(0, Tensor(0)) raised IndexError from shape[0]
    if self.ndim == 0: return self.reshape(1).gather(0, index.reshape(1)).reshape(())
    n = self.shape[d]
    _check_oob("gather", index, n, d, False)
    x = self.shrink([None if i == d else (0, s) for i, s in enumerate(index.shape)])
    xe = x.unsqueeze(-1).transpose(d, -1).expand(*index.shape, n)
    mask = index.unsqueeze(-1) == Tensor.arange(n, device=self.device)
    return mask._pick(xe, -1, self.dtype)
  # ---- scatter: the inverse of gather, as one-hot masks over the scattered dim and a reduce (lazy, no host work) ----
  def _pre_scatter(self: Tensor, op: str, dim: int, index: Tensor, src: Tensor) -> tuple[Tensor, Tensor]:
    """(src, mask) of shape self.shape + (index.shape[dim],): mask[..., k, ..., j] says src's j-th element along dim goes
    to position k; reducing the last axis gives the scattered result."""
    if not dtypes.is_int(index.dtype): raise RuntimeError(f"{op}: index must be an int tensor, got {index.dtype}")
    if not index.ndim == src.ndim == self.ndim:
      raise RuntimeError(f"{op}: index {index.shape}, src {src.shape} and self {self.shape} need the same number of dims")
    d = self._resolve_dim(dim)
    if any(i > s or (k != d and i > t) for k, (i, s, t) in enumerate(zip(index.shape, src.shape, self.shape))):
      raise RuntimeError(f"{op}: index shape {index.shape} must be <= src shape {src.shape} in every dim and <= self shape {self.shape} outside dim {d}")
    if src.dtype != self.dtype: raise RuntimeError(f"{op}: src dtype {src.dtype} != self dtype {self.dtype}; cast one of them")
    n = self.shape[d]
    _check_oob(op, index, n, d, False)
    src = src.shrink([(0, s) for s in index.shape])
    src = src.unsqueeze(-1).expand(*index.shape, n).transpose(d, -1)
    mask = (index.unsqueeze(-1) == Tensor.arange(n, device=self.device)).transpose(d, -1)
    pads = _scatter_pads(index.shape, self.shape, d) + [None]
    return src.pad(pads), mask.pad(pads)
  def scatter(self: Tensor, dim: int, index: Tensor, src: Tensor | ConstType, reduce: str | None = None) -> Tensor:
    """out[..., index[..., j, ...], ...] = src[..., j, ...] along `dim` (torch's scatter; src a Tensor or a number).
    Where an index repeats, the last src element wins (torch leaves that order undefined). reduce='add' or 'multiply'
    combines a number src with self instead (scatter_reduce 'sum'/'prod' with include_self=True; as public tinygrad,
    a Tensor src with reduce is an error: torch deprecates that form for scatter_reduce)."""
    if reduce not in (None, "add", "multiply"): raise TypeError(f"scatter: reduce={reduce!r}; valid: None, 'add', 'multiply'")
    if isinstance(src, Tensor) and reduce is not None:
      raise TypeError(f"scatter: reduce={reduce!r} takes a number src, got a Tensor; use scatter_reduce(dim, index, src, "
                      f"{'sum' if reduce == 'add' else 'prod'!r}) for a Tensor src")
    if not isinstance(src, Tensor): src = Tensor.full(index.shape, src, dtype=self.dtype, device=self.device)
    if reduce is not None: return self.scatter_reduce(dim, index, src, "sum" if reduce == "add" else "prod", include_self=True)
    if self.ndim == 0: return self.reshape(1).scatter(0, index.reshape(1), src.reshape(1)).reshape(())
    osrc = src
    src, mask = self._pre_scatter("scatter", dim, index, src)
    d = self._resolve_dim(dim)
    if _scatter_sorts(index, d, self.shape[d]):
      # many indices per line (the one-hot of (2, 100003) raised MemoryError): the last writer of each position is the
      # largest position among its run of sorted indices (a running max), its value a load (see scatter_reduce)
      m = index.shape[d]
      pos = Tensor.arange(1, m + 1, device=self.device).reshape(*[m if k == d else 1 for k in range(self.ndim)])._broadcast_to(index.shape)
      hit, (last,), _ = self._scatter_lines(d, index, [(pos, Ops.MAX)])
      val = osrc.shrink([(0, i) for i in index.shape]).gather(d, (last - 1).maximum(0))
      pads = _scatter_pads(index.shape, self.shape, d)
      return hit.pad(pads).where(val.pad(pads), self)
    m = mask.shape[-1]
    pos = Tensor.arange(1, m + 1, device=self.device)
    last = mask.where(pos, 0)._max(-1, keepdim=True)   # the last j that writes each position (0: none)
    val = src.gather(-1, (last - 1).maximum(0)).squeeze(-1)   # a load of src[last-1] (a one-hot sum made -0.0 0.0)
    return (last.squeeze(-1) > 0).where(val, self)
  def _scatter_lines(self: Tensor, d: int, index: Tensor, vals: list[tuple[Tensor, Ops]]) -> tuple[Tensor, list[Tensor], Tensor]:
    """scatter_reduce for many indices per line, without the one-hot (n*m per line): each line's indices are sorted with
    their values, each run of equal indices reduced by a segmented scan (log2(m) doubling steps), and every target
    position k binary-searches the sorted indices for the end of its run, whose last element holds the run's reduction.
    O(m log^2 m + n log m) per line (a bitonic sort, a scan, a search). Returns, over the lines `index` reaches (self's
    shape there, n along d): which positions an index hits, each (value, op)'s reduction there (the op's identity where
    none hits) and the number of indices hitting each position."""
    n, m = self.shape[d], index.shape[d]
    ix = index.transpose(d, -1)
    lines = ix.shape[:-1]
    s, perm = ix.sort(-1)
    t = Tensor.arange(n, device=self.device)._broadcast_to(lines + (n,))
    def search(right: bool) -> Tensor:   # per target, the number of sorted indices < it (right: <= it)
      lo, hi = Tensor.zeros(*lines, n, dtype=dtypes.int32, device=self.device), Tensor.full(lines + (n,), m, dtype=dtypes.int32, device=self.device)
      for _ in range(m.bit_length()):
        mid = (lo + hi) // 2
        sv = s.gather(-1, mid.minimum(m - 1))
        go = (lo < hi) & ((sv <= t) if right else (sv < t))
        lo, hi = go.where(mid + 1, lo), go.where(hi, mid)
      return lo
    end = search(True)
    last = (end - 1).maximum(0)
    hit = (end > 0) & (s.gather(-1, last) == t)
    count = hit.where(end - search(False), 0)
    pre: list[tuple[int, int] | None] = [None] * (ix.ndim - 1)
    outs = []
    for v, op in vals:
      ident, combine = reduce_identity(op, v.dtype), _combine(op)
      r, k = v.transpose(d, -1).gather(-1, perm), 1
      while k < m:   # r[i] combines r[i-k] of the same run (the sorted index equal); after step k, runs of 2k are done
        # (past the first k: a padded constant, not an arange. The gradient pads what reads it, and an arange under a PAD is
        # realized, which left every gather of the search below a sum over the m indices: prod's backward O(n*m*log m),
        # 148 s at m = n = 1e5)
        same = Tensor.full(s.shape, True, dtype=dtypes.bool, device=self.device).pad(pre + [(k, -k)], value=False) & (s == s.pad(pre + [(k, -k)]))
        # (realized each step, values and gradient: inlined, step k read step k/2 twice, 2**steps paths per element)
        # (the other run's value masked to the identity inside too: its inf or NaN times a masked-off 0 was a NaN gradient)
        r = same.where(combine(r, same.where(r.pad(pre + [(k, -k)], value=ident), ident)), r).contiguous().contiguous_backward()
        k *= 2
      outs.append(hit.where(r.gather(-1, last), r._const(ident, shape=())).transpose(d, -1))
    return hit.transpose(d, -1), outs, count.transpose(d, -1)
  def scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool = True) -> Tensor:
    """Reduce src's elements into self at `index` along `dim` (torch's scatter_reduce): reduce is 'sum', 'prod', 'mean',
    'amax' or 'amin'; include_self=False leaves self's values out where an index hits (they stay where none does).
    Integer 'mean' rounds down, as torch; gradients as torch (amax/amin split among tied values, self's included), except
    that with include_self=False a self equal to the result is no tie (torch counts it and loses its share; docs/guide.md).
    Up to _SCATTER_ONEHOT_MAX (lines * positions * indices) a one-hot mask and a reduce, beyond it sorted (_scatter_lines)."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
      raise RuntimeError(f"scatter_reduce: reduce={reduce!r}; valid: 'sum', 'prod', 'mean', 'amax', 'amin'")
    if reduce == "amin": return self._inverse().scatter_reduce(dim, index, src._inverse(), "amax", include_self)._inverse()
    if self.ndim == 0: return self.reshape(1).scatter_reduce(0, index.reshape(1), src.reshape(1), reduce, include_self).reshape(())
    osrc = src
    src, mask = self._pre_scatter("scatter_reduce", dim, index, src)
    d = self._resolve_dim(dim)
    n, m = self.shape[d], index.shape[d]
    sorted_ = _scatter_sorts(index, d, n)
    if sorted_:
      # over the lines index reaches (the rest of self is left as it is, as the one-hot's zero pads leave it)
      pads = _scatter_pads(index.shape, self.shape, d)
      osrc = osrc.shrink([(0, s) for s in index.shape])
      def lines(vals: list[tuple[Tensor, Ops]]) -> tuple[Tensor, list[Tensor], Tensor]:
        h, rs, c = self._scatter_lines(d, index, vals)
        return h.pad(pads), [r.pad(pads, value=reduce_identity(op, v.dtype)) for r, (v, op) in zip(rs, vals)], c.pad(pads)
      def sums(vals: list[Tensor], dt: Any) -> tuple[Tensor, list[Tensor], Tensor]:
        # sorted sums forward, the one-hot sum's gradient backward (never computed forward: _with_grad's select folds it
        # away): its backward is a gather of the output gradient, O(m), where the sort's gathers' is a one-hot (n*m)
        h, rs, c = lines([(v.cast(dt), Ops.ADD) for v in vals])
        spread = [v.cast(dt).unsqueeze(-1).expand(*index.shape, n).transpose(d, -1).pad(pads + [None]) for v in vals]
        # (unsplit: a split reduce realizes its chunks, which the fold does not reach)
        return h, [mask.where(v, v._const(0, shape=()))._reduce(Ops.ADD, -1, split_ok=False)._with_grad(r.detach(), "same") for v, r in zip(spread, rs)], c
    if reduce == "amax":
      if not sorted_:
        # (the fill where no index hits is no tie of an -inf max: _window_max gives it none of the gradient, which it lost)
        cand = mask.where(src, src._const(reduce_identity(Ops.MAX, self.dtype), shape=()))
        if include_self:   # self joins the max: ties share the gradient
          return cand.cat(self.unsqueeze(-1), dim=-1)._window_max(mask.cat(Tensor.ones(*mask.shape[:-1], 1, dtype=dtypes.bool, device=self.device), dim=-1), (-1,))
        return mask.any(-1).where(cand._window_max(mask, (-1,)), self)
      hit, (r,), _ = lines([(osrc, Ops.MAX)])
      val = hit.where(r.maximum(self) if include_self else r, self)
      if not dtypes.is_float(self.dtype): return val
      # the gradient as the one-hot's: split among the src values (and with include_self, self) equal to the result. Its
      # path is never computed forward (_with_grad's select folds it away)
      out = val.detach()
      def tie(a: Tensor, b: Tensor) -> Tensor: return (a == b) | (a.isnan() & b.isnan())
      at = out.gather(d, index.maximum(0).minimum(n - 1).cast(dtypes.int32))
      ok = (index >= 0) & (index < n) & tie(osrc, at)
      _, (gs, gc), _ = sums([ok.where(osrc, 0.0), ok], self.dtype)
      if include_self:
        st = tie(self, out)
        gs, gc = gs + st.where(self, 0.0), gc + st.cast(self.dtype)
      return hit.where(gs / gc, self)._with_grad(out, "same")
    # float16/bfloat16 combine with self in float32 and round once, as torch (rounding the src's sum or product first was
    # 1 ulp off in one of seven places); an int wraps the same in its own dtype as in int64
    acc_dt = sum_acc_dtype(self.dtype) if dtypes.is_float(self.dtype) else self.dtype
    me = self.cast(acc_dt)
    if sorted_:
      # (prod's gradient goes back through the sorted scan: O(m*m) per line at these sizes, but a one-hot's is no cheaper)
      hit, (r,), count = lines([(osrc.cast(acc_dt), Ops.MUL)]) if reduce == "prod" else sums([osrc], acc_dt)
    else:
      hit = mask.any(-1)
      if reduce == "prod": r = mask.where(src, src._const(1, shape=())).prod(-1, dtype=acc_dt)
      else: r = mask.where(src, src._const(0, shape=())).sum(-1, dtype=acc_dt)
      count = mask.sum(-1)
    # (self as it is where no index hits: 0.0 + self turned a -0.0 there into 0.0)
    if reduce in ("prod", "sum"): return ((r * me if reduce == "prod" else hit.where(r + me, me)) if include_self else hit.where(r, me)).cast(self.dtype)
    count = count + int(include_self)
    total = (hit.where(r + me, me) if include_self else r).cast(self.dtype)   # torch's mean: the sum rounded, then divided
    mean = total // count.maximum(1).cast(self.dtype) if dtypes.is_int(self.dtype) else total / count.maximum(1).cast(self.dtype)
    return mean.cast(self.dtype) if include_self else hit.where(mean.cast(self.dtype), self)

  # ---- data-dependent selection (realizes to learn the size unless size= is given) ----
  def masked_select(self: Tensor, mask: Tensor, size: int | None = None, fill_value: ConstType = 0) -> Tensor:
    """The elements of self (row-major) where `mask` (a bool Tensor, broadcast with self) is True, as a 1-D tensor.
    Without `size` the result's length is the number of Trues, so this realizes the mask to count them (a host sync, not
    jittable); with a static `size` it stays lazy: the first `size` selected elements, padded with `fill_value`.
    Costs O(numel + size * log2(numel)): each output slot binary-searches the mask's running count."""
    if not isinstance(mask, Tensor) or mask.dtype != dtypes.bool: raise RuntimeError(f"masked_select: mask must be a bool Tensor, got {getattr(mask, 'dtype', type(mask).__name__)}")
    if size is not None and (not isinstance(size, int) or size < 0): raise ValueError(f"masked_select: size must be an int >= 0 or None, got {size!r}")
    shape = _broadcast_shape(self.shape, mask.shape)
    x, m = self._broadcast_to(shape).flatten(), mask._broadcast_to(shape).flatten()
    count = m.sum(dtype=dtypes.int32)
    k = int(count.item()) if size is None else size
    seen = m.cast(dtypes.int32)._cumalu(0, Ops.ADD)   # selected elements up to each position (int32: a count of elements)
    n = x.numel()
    if isinstance(n, int) and n > 0:
      # slot j's source is the first position whose running count reaches j + 1: a binary search over the (non-decreasing)
      # counts, log2(n) steps of a gather each (a one-hot sum per slot, as before, cost O(n * k): x[x > 0.5] of 300k
      # elements took 6.6 s, now 27 ms). Slots past the count end on the last position (cut below)
      want = Tensor.arange(1, k + 1, device=self.device)
      lo, hi = Tensor.zeros(k, dtype=dtypes.int32, device=self.device), Tensor.full((k,), n - 1, dtype=dtypes.int32, device=self.device)
      for _ in range(max(1, (n - 1).bit_length())):
        mid = (lo + hi) // 2
        right = seen.gather(0, mid) < want
        lo, hi = right.where(mid + 1, lo), right.where(hi, mid)
      src = lo.minimum(n - 1)
    else:   # (no element, or a symbolic count of them: each slot's position as a one-hot sum)
      hit = m & (seen - 1 == Tensor.arange(k, device=self.device).unsqueeze(-1))
      src = hit.where(Tensor.arange(n, device=self.device), 0).sum(-1, dtype=dtypes.int32)
    # (the selected values gathered, a load: summing them as a one-hot would start at +0.0 and turn a selected -0.0 into 0.0)
    out = x.gather(0, src)
    return out if size is None else (Tensor.arange(k, device=self.device) < count).where(out, out._const(fill_value, shape=()))
  def nonzero(self: Tensor, size: int | None = None, fill_value: int = 0, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The indices (int32, row-major order) of the nonzero elements (NaN counts as nonzero): shape (count, ndim), or with
    as_tuple=True one 1-D tensor per dim (the form that indexes: t[t.nonzero(as_tuple=True)]). Without `size` this
    realizes to count them (a host sync, not jittable); with a static `size` it stays lazy, rows past the count are
    `fill_value`. Costs O(numel + count * log2(numel)) (see masked_select)."""
    x = self.reshape(1) if self.ndim == 0 else self
    m = (x != 0).flatten()
    k = int(m.cast(dtypes.int32).sum().item()) if size is None else size
    flat = Tensor.arange(m.numel(), device=self.device).masked_select(m, size=k, fill_value=-1)
    coords, stride = [], m.numel()
    for s in x.shape:
      stride //= max(s, 1)
      coords.append((flat // max(stride, 1)) % max(s, 1))
    if size is not None: coords = [(flat >= 0).where(c, int(fill_value)) for c in coords]   # a float fill keeps the int dtype (truncated)
    if as_tuple: return tuple(coords)
    if self.ndim == 0: return Tensor.zeros(k, 0, dtype=dtypes.int32, device=self.device)
    return Tensor.stack(*coords, dim=1)
  def one_hot(self: Tensor, num_classes: int) -> Tensor:
    """int32 one-hot encoding along a new last dimension of size `num_classes` (public tinygrad's: no -1 to infer it)."""
    if not isinstance(num_classes, int) or num_classes < 0:
      raise ArgumentError(f"one_hot: num_classes must be an int >= 0, got {num_classes!r}; for torch's -1 pass int(t.max().item()) + 1")
    # (a float index matched no class where it was not whole: 1.5 gave a row of zeros; public tinygrad and torch raise)
    if not dtypes.is_int(self.dtype) or dtypes.is_bool(self.dtype):
      raise OpDTypeError(f"one_hot: the indices must be an int tensor, got {self.dtype}; cast whole-number labels first (t.cast(dtypes.int32))")
    _check_oob("one_hot", self, num_classes, self.ndim, False)
    return (self.unsqueeze(-1) == Tensor.arange(num_classes, device=self.device)).where(1, 0)
  def _tri(self: Tensor, diagonal: int, upper: bool) -> Tensor:
    if self.ndim < 2: raise ArgumentError(f"{'triu' if upper else 'tril'}: needs at least 2 dims (the matrix), got shape {self.shape}")
    diagonal = _whole_int("triu" if upper else "tril", "diagonal", diagonal, symbolic=True)
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
