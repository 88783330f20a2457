# mypy: disable-error-code="misc"
"""Tensor methods, sorting: sort, argsort, topk. Built from Tensor ops, so they run as kernels on every device (no host
sort). Both methods order by the key (value, original index), which makes them stable, and put NaN after every number
(descending: first), as torch does. Along a dim of n elements:
  n <= _RANK_SORT_MAX (1024): rank counting, each element's place is the number of elements that go before it: n*n
    comparisons in two fused reduce kernels, two kernels to compile (4 rows of 1000 on CPU: 3.5 s cold, 28 ms warm);
  larger n: a bitonic sorting network on n padded to a power of two: log2(n)*(log2(n)+1)/2 compare-exchange steps,
    each an elementwise kernel for values and one for indices: O(n log^2 n) work instead of n*n, and the same two
    kernels every step (the partner's distance read from a buffer), so a few kernels to compile for any n.
Realize the values and indices together (Tensor.realize(v, i)): each alone computes the whole sort.
Gradients reach the input's values through the selects (as torch's: the output gradient goes back to each element's
original place); indices are int32, tinygrad's index dtype (torch gives int64)."""
from __future__ import annotations
from typing import TYPE_CHECKING
from tinygrad.dtype import dtypes
from tinygrad.uop.ops import smax
if TYPE_CHECKING: from tinygrad.tensor import Tensor

_RANK_SORT_MAX = 1024   # the largest sorted dim that uses rank counting (n*n compares) rather than the bitonic network

def _before(a: Tensor, ai: Tensor, b: Tensor, bi: Tensor, descending: bool) -> Tensor:
  """Whether element a (at original index ai) goes before b: by value (NaN last, descending: first), ties by index."""
  if dtypes.is_bool(a.dtype): a, b = a.cast(dtypes.int8), b.cast(dtypes.int8)
  lt = (b < a) if descending else (a < b)
  eq = a == b
  if dtypes.is_float(a.dtype):
    an, bn = a.isnan(), b.isnan()
    lt = lt | ((an & bn.logical_not()) if descending else (bn & an.logical_not()))
    eq = eq | (an & bn)
  return lt | (eq & (ai < bi))

class SortingMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  def _rank_sort(self: Tensor, descending: bool) -> tuple[Tensor, Tensor]:
    # along the last dim: rank[i] = #{j going before i}; then output r takes the element whose rank is r
    n = self.shape[-1]
    ar = Tensor.arange(n, device=self.device)
    rank = _before(self.unsqueeze(-2), ar, self.unsqueeze(-1), ar.unsqueeze(-1), descending).sum(-1, dtype=dtypes.int32)
    onehot = rank.unsqueeze(-1) == ar   # [..., i, r]
    idx = onehot.where(ar.unsqueeze(-1), 0).sum(-2, dtype=dtypes.int32)
    # the values read at those indices, not summed out of the one-hot like the indices: a sum starts at +0.0, so a -0.0 came
    # out as 0.0 (torch keeps it); a gather of known in-range indices is one load each, and its gradient goes to each place
    return self.gather(-1, idx), idx
  def _bitonic_sort(self: Tensor, descending: bool) -> tuple[Tensor, Tensor]:
    # along the last dim, padded to N = 2**k; the pads (index >= n) go after everything. Stage s sorts blocks of 2**s:
    # first each element against its mirror in the block, then half-cleaners of distance 2**(s-2) .. 1, all one direction.
    # A step is one kernel each for values and indices: position i reads its partner i ^ m (m = 2d-1 for the mirror, else
    # the distance d) and keeps the one that belongs there (the lower position of a pair the one going first). m is read
    # from a one-element buffer, not a constant (or a variable: one graph binds it once), so every step is the same two
    # kernels to compile, not 2*(2k-1) (rand(50257).sort() compiled 67 programs, ~7 s cold on 2 loaded cores; now 10,
    # 1.4 s). The partner is picked by a one-hot sum the codegen folds into a load, forward and backward (r == i ^ m ->
    # i == r ^ m: a step's gradient is O(N) too)
    n, pre = self.shape[-1], self.shape[:-1]
    k = (n - 1).bit_length()
    N = 1 << k
    v = self.pad([None] * len(pre) + [(0, N - n)])
    ar = Tensor.arange(N, device=self.device)
    ix = ar._broadcast_to(v.shape)
    steps: dict[int, tuple[Tensor, Tensor]] = {}   # m -> (i is the lower of its pair, the one-hot [i, r]: r is i's partner)
    # a strict total order (the pads after everything, among themselves by index): one comparison decides the pair
    def before(a: Tensor, ai: Tensor, b: Tensor, bi: Tensor) -> Tensor: return (bi >= n).where(ai < bi, (ai < n) & _before(a, ai, b, bi, descending))
    for s in range(1, k + 1):
      for j in range(s - 1, -1, -1):
        m = (2 << j) - 1 if j == s - 1 else 1 << j
        if m not in steps:
          p = ar ^ Tensor([m], dtype=ar.dtype, device=self.device)
          steps[m] = (ar < p, p == ar.unsqueeze(-1))
        low, onehot = steps[m]
        vp, ip = (onehot._pick(t.unsqueeze(-2)._broadcast_to(t.shape[:-1] + (N, N)), -1, t.dtype) for t in (v, ix))
        take = low != before(v, ix, vp, ip)   # the lower position takes the partner if it goes first, the upper if it does not
        # (each step's gradient realized too: inlined, a step read the next one's gradient at two places, and the backward
        # through the whole network became one kernel of 2**steps index paths: sort of 2x1025 never finished scheduling)
        v, ix = take.where(vp, v).contiguous().contiguous_backward(), take.where(ip, ix).contiguous()
    keep = [None] * len(pre) + [(0, n)]
    return v.shrink(keep), ix.shrink(keep).cast(dtypes.int32)
  def sort(self: Tensor, dim: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
    """(values, indices) of self sorted along `dim`: stable (equal values keep their order), NaN last (descending: first),
    indices int32. Rank counting up to _RANK_SORT_MAX elements along dim, a bitonic network beyond (see the module doc)."""
    d = self._resolve_dim(dim)
    if self.ndim == 0 or smax(self.shape[d]) <= 1: return self._own(self), Tensor.zeros(self.shape, dtype=dtypes.int32, device=self.device)
    x = self.transpose(d, -1)
    vals, idx = x._rank_sort(descending) if x.shape[-1] <= _RANK_SORT_MAX else x._bitonic_sort(descending)
    return vals.transpose(d, -1), idx.transpose(d, -1)
  def argsort(self: Tensor, dim: int = -1, descending: bool = False) -> Tensor:
    """The int32 indices that sort self along `dim` (stable; see sort)."""
    return self.sort(dim, descending)[1]
  def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted_: bool = True, *, sorted: bool = True) -> tuple[Tensor, Tensor]:
    """(values, indices) of the k largest (largest=False: smallest) elements along `dim`, in sorted order; ties keep their
    original order. sorted_=False (public tinygrad's name; torch's `sorted=` too) gives the same (sorted) answer, one of
    those torch allows."""
    d = self._resolve_dim(dim)
    n = self.shape[d] if self.ndim else 1
    if not isinstance(k, int) or not 0 <= k <= n: raise ValueError(f"topk: k={k!r} is out of range for dim {d} of shape {self.shape} (valid: 0..{n})")
    vals, idx = self.sort(d, descending=largest)
    if self.ndim == 0: return vals, idx
    keep = [(0, k) if i == d else None for i in range(self.ndim)]
    return vals.shrink(keep), idx.shrink(keep)
