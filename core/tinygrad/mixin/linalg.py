# mypy: disable-error-code="misc"
"""Tensor methods, linear algebra from Tensor ops: einsum, diag/diagonal, qr (Householder), svd (one-sided Jacobi)."""
from __future__ import annotations
import math
from typing import TYPE_CHECKING, Sequence, Union
from tinygrad.dtype import DType, dtypes, to_dtype
from tinygrad.mixin.common import ArgumentError
from tinygrad.mixin.nn import _product_dtype
from tinygrad.helpers import argfix
from tinygrad.uop.ops import sint_le
if TYPE_CHECKING: from tinygrad.tensor import Tensor

Label = Union[str, int]   # a subscript letter, or the position of a dimension the ellipsis covers

def _einsum_terms(formula: str, ndims: list[int]) -> tuple[list[list[Label]], list[Label]]:
  """The labels of each operand's dims and of the output; '...' dims get int labels (right-aligned across operands)."""
  f = formula.replace(" ", "")
  if f.count("->") > 1: raise ArgumentError(f"einsum: {formula!r} has more than one '->'")
  lhs, rhs = f.split("->") if "->" in f else (f, None)
  terms = lhs.split(",")
  if len(terms) != len(ndims): raise ArgumentError(f"einsum: {formula!r} names {len(terms)} operands but {len(ndims)} were given")
  def letters(term: str, where: str) -> str:
    rest = term.replace("...", "", 1)
    if not all(c.isascii() and c.isalpha() for c in rest):
      raise ArgumentError(f"einsum: {where} {term!r} of {formula!r} may hold only letters a-z, A-Z and one '...'")
    return rest
  ell = max((nd - len(letters(t, "subscripts")) for t, nd in zip(terms, ndims) if "..." in t), default=0)
  labels: list[list[Label]] = []
  for i, (t, nd) in enumerate(zip(terms, ndims)):
    named = letters(t, "subscripts")
    if len(named) > nd or ("..." not in t and len(named) != nd):
      raise ArgumentError(f"einsum: operand {i} has {nd} dims but its subscripts {t!r} name {len(named)}" + ("" if "..." in t else " (use '...' for the rest)"))
    head, _, tail = t.partition("...")
    k = nd - len(named) if "..." in t else 0
    labels.append(list(head) + list(range(ell - k, ell)) + list(tail))
  counts: dict[str, int] = {}
  for t in terms:
    for c in letters(t, "subscripts"): counts[c] = counts.get(c, 0) + 1
  if rhs is None: return labels, list(range(ell)) + sorted(c for c, n in counts.items() if n == 1)
  named_out = letters(rhs, "output")
  if (bad := [c for c in named_out if c not in counts]): raise ArgumentError(f"einsum: output subscripts {bad} of {formula!r} are not in any input")
  if len(set(named_out)) != len(named_out): raise ArgumentError(f"einsum: output {rhs!r} of {formula!r} repeats a subscript")
  head, _, tail = rhs.partition("...")
  return labels, list(head) + (list(range(ell)) if "..." in rhs else []) + list(tail)


class LinalgMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  @staticmethod
  def einsum(formula: str, *operands: Tensor | Sequence[Tensor], dtype: DType | str | None = None) -> Tensor:
    """Einstein summation (torch.einsum): `Tensor.einsum("ij,jk->ik", a, b)`. Without '->' the output is the subscripts
    that appear once, sorted; '...' broadcasts like numpy; a subscript repeated in one operand takes its diagonal; one
    missing from the output is summed. Operands are contracted left to right, each subscript summed as soon as no later
    operand and not the output needs it. `dtype`: the operands are cast to it, products and sums are in it."""
    xs: list[Tensor] = list(argfix(*operands))
    if not xs: raise ArgumentError("einsum needs at least one operand")
    srcs = list(xs)
    if dtype is not None: xs = [x.cast(dtype) for x in xs]   # products in dtype too: int8 * int8 would wrap before the sum
    labels, out = _einsum_terms(formula, [x.ndim for x in xs])
    sizes: dict[Label, int] = {}
    ops: list[tuple[Tensor, list[Label]]] = []
    for i, (x, ls) in enumerate(zip(xs, labels)):
      while (rep := next((l for l in ls if ls.count(l) > 1), None)) is not None:   # repeated subscript: its diagonal (moved last)
        j, k = ls.index(rep), ls.index(rep, ls.index(rep) + 1)
        if x.shape[j] != x.shape[k]: raise ArgumentError(f"einsum: subscript {rep!r} repeats in operand {i} over dims of sizes {x.shape[j]} and {x.shape[k]}")
        x, ls = x.diagonal(0, j, k), [l for d, l in enumerate(ls) if d not in (j, k)] + [rep]
      for l, s in zip(ls, x.shape):
        if sizes.get(l, 1) != 1 and s != 1 and sizes[l] != s:
          raise ArgumentError(f"einsum: subscript {l if isinstance(l, str) else '...'!r} has sizes {sizes[l]} and {s} in {formula!r}")
        if s != 1 or l not in sizes: sizes[l] = s
      ops.append((x, ls))
    def needed(after: int) -> set[Label]: return set(out).union(*(set(ls) for _, ls in ops[after:]))
    def reduce(x: Tensor, ls: list[Label], keep: set[Label]) -> tuple[Tensor, list[Label]]:
      axes = [d for d, l in enumerate(ls) if l not in keep]
      return (x.sum(axes, dtype=dtype), [l for l in ls if l in keep]) if axes else (x, ls)
    cur, cls = reduce(*ops[0], needed(1))
    for n, (x, ls) in enumerate(ops[1:], start=2):
      x, ls = reduce(x, ls, needed(n) | set(cls))
      full = cls + [l for l in ls if l not in cls]
      def align(t: Tensor, tl: list[Label]) -> Tensor:
        order = sorted(range(len(tl)), key=lambda d: full.index(tl[d]))
        t = t.permute(order) if order else t
        return t.reshape([t.shape[[tl[d] for d in order].index(l)] if l in tl else 1 for l in full])
      # float16/bfloat16 pairs are multiplied and summed in float32 and rounded once per contraction, as matmul (and
      # torch's einsum, a bmm): products rounded to half first overflowed (300 * 300: inf, and inf - inf NaN for a sum of 2)
      pdt, wide = _product_dtype(cur.dtype, x.dtype, dtype)
      a, b = (align(cur, cls), align(x, ls)) if wide is None or dtype is not None else (align(cur, cls).cast(wide), align(x, ls).cast(wide))
      cur, cls = reduce(a * b, full, needed(n))
      if wide is not None and dtype is None: cur = cur.cast(pdt)
      # a contraction of ints is a matmul, in the operands' dtype (as `a @ b` and torch's bmm): its sum returned int64 for
      # int32 operands ("ij,jk->ik"); a subscript summed within one operand stays a sum (int64, as torch's "i,j->")
      elif dtype is None and dtypes.is_int(pdt) and cur.dtype != pdt: cur = cur.cast(pdt)
    cur, cls = reduce(cur, cls, set(out))
    ret = cur.permute([cls.index(l) for l in out]) if out else cur
    return ret._broadcast_to(tuple(sizes[l] for l in out)).cast(to_dtype(dtype) if dtype is not None else ret.dtype)._own(*srcs)   # "ij->ij": a copy

  def diag(self: Tensor, diagonal: int = 0) -> Tensor:
    """torch.diag: a 1-D tensor becomes the square matrix with it on diagonal `diagonal` (> 0 above the main one); a 2-D
    tensor gives that diagonal as a 1-D tensor."""
    if self.ndim == 2: return self.diagonal(diagonal)
    if self.ndim != 1: raise ValueError(f"diag needs a 1-D or 2-D tensor, got shape {self.shape}; for batched diagonals use diagonal()")
    n, k = self.shape[0], abs(diagonal)
    # each value followed by n zeros, laid end to end and cut into rows of n: the values land one step further each row
    m = self.unsqueeze(-1).pad(((0, 0), (0, n))).flatten().shrink(((0, n * n),)).reshape(n, n)
    return m.pad(((0, k), (k, 0)) if diagonal >= 0 else ((k, 0), (0, k)))
  def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """torch.diagonal: the diagonal `offset` (> 0 above the main one) of the planes of dims dim1 and dim2, as a new last
    dimension after the remaining dims (a view: movement ops only)."""
    d1, d2 = self._resolve_dim(dim1), self._resolve_dim(dim2)
    if d1 == d2: raise RuntimeError(f"diagonal: dim1 and dim2 are the same dimension ({dim1}, {dim2}) of shape {self.shape}")
    x = self.permute([i for i in range(self.ndim) if i not in (d1, d2)] + [d1, d2])
    if isinstance(self.device, tuple) and x.uop.axis == x.ndim - 1:   # (its reshape's error named a reshape not called here)
      raise RuntimeError(f"diagonal: this tensor is sharded over {self.device} on axis {d2}, the diagonal's dim2, so each shard "
                         "holds part of every row and the diagonal steps across them; shard it on another axis, or gather "
                         "it first with .to(device)")
    r, c = x.shape[-2:]
    # min/max of sizes by their bounds: Python's min(4, n) compared n < 4 by n's bound value, so a TinyJit capture at n=3
    # assumed it and refused n=4 (x[:, :n].diagonal() of a 4-row x); an order the bounds cannot decide is still assumed
    smin = lambda a, b: a if sint_le(a, b) else b
    smax = lambda a, b: a if sint_le(b, a) else b
    lo, hi = (0, smin(r, smax(0, c - offset))) if offset >= 0 else (smin(r, -offset), smin(r, c - offset))
    n, pre = smax(0, hi - lo), [None] * (x.ndim - 2)
    if n == 0: return x.shrink(tuple(pre + [(0, 0), (0, 1 if c else 0)])).reshape(*x.shape[:-2], 0)
    x = x.shrink(tuple(pre + [(lo, lo + n), (lo + offset, lo + offset + n)]))
    # an n x n plane read with row stride n + 1 walks its diagonal (padding that the shrink cuts away again: a view of self,
    # as torch's, where pad() would be a value of its own and drop writes into the diagonal)
    x = x.flatten(-2)._pad_view(tuple([(0, 0)] * len(pre) + [(0, n)])).reshape(*x.shape[:-2], n, n + 1)
    return x.shrink(tuple(pre + [None, (0, 1)])).reshape(*x.shape[:-2], n)

  def newton_schulz(self: Tensor, steps: int, params: tuple[float, ...], eps: float = 1e-7) -> Tensor:
    """`steps` Newton-Schulz iterations of the odd polynomial with coefficients `params` (public tinygrad's, Muon's update):
    G = self / ||self|| (over the last two dims), then G <- sum_i params[i] * (G G^T)^i G, on the wide orientation."""
    if self.ndim < 2: raise ArgumentError(f"newton_schulz needs a matrix (2 or more dims), got shape {self.shape}")
    if self.shape[-2] > self.shape[-1]: return self.transpose(-2, -1).newton_schulz(steps, params, eps).transpose(-2, -1)
    # self / (||self|| + eps), with the norm taken of self / max|self|: squared, entries of 1e20 made it inf (float32) and
    # the result all 0, entries of 1e-25 made it 0
    m: Tensor | float = 1.0   # (max has no value over nothing)
    if self.numel() != 0:
      m = self.abs().max(axis=(-2, -1), keepdim=True)
      m = (m > 0).where(m, 1.0)
    g = (self / m) / ((self / m).square().sum(axis=(-2, -1), keepdim=True).sqrt() + eps / m)
    for _ in range(steps):
      a, term, acc = g @ g.transpose(-2, -1), g, None
      for i, p in enumerate(params):
        if i: term = a @ term
        acc = p * term if acc is None else acc + p * term
      g = acc if acc is not None else g * 0
    return g
  def qr(self: Tensor) -> tuple[Tensor, Tensor]:
    """(Q, R) of a (batched) matrix (..., m, n), as public tinygrad: Q (..., m, m) orthogonal, R (..., m, n) upper triangular
    (torch's mode='complete'), by Householder reflections: for each column j < min(m-1, n), H = I - tau v v^T with
    v = x - alpha e_j (alpha = -sign(x_j) ||x||: no cancellation; x scaled to max |x| = 1 first) zeroes the column below
    the diagonal. Signs of R's diagonal may differ from numpy's."""
    if self.ndim < 2: raise ValueError(f"qr needs a matrix (..., m, n), got shape {self.shape}")
    x = self._float()
    m, n = x.shape[-2:]
    rows, cols = Tensor.arange(m, device=x.device).reshape(m, 1), Tensor.arange(n, device=x.device).reshape(1, n)
    Q, R = Tensor.eye(m, dtype=x.dtype, device=x.device).expand(*x.shape[:-2], m, m), x
    for j in range(min(m - 1, n)):
      col = (rows >= j).where(R.shrink(tuple([None] * (x.ndim - 1) + [(j, j + 1)])), 0)      # (..., m, 1)
      # the reflector is the same for any multiple of v: the column scaled to max |x| = 1 keeps ||x||^2 in range (unscaled,
      # 1e20 squared overflowed float32 to inf and 1e-20 underflowed to 0: Q and R were NaN)
      mx = col.abs().max(-2, keepdim=True)
      col = col / (mx > 0).where(mx, 1)
      xj = col.shrink(tuple([None] * (x.ndim - 2) + [(j, j + 1), None]))
      norm = col.square().sum(-2, keepdim=True).sqrt()
      v = col - (rows == j).where((xj >= 0).where(-norm, norm), 0)
      vv = v.square().sum(-2, keepdim=True)
      tau = (vv > 0).where(2 / (vv > 0).where(vv, 1), 0)
      R = (R - v @ (tau * (v.transpose(-1, -2) @ R))).contiguous()
      Q = (Q - (Q @ v) @ (tau * v).transpose(-1, -2)).contiguous()
    return Q, (rows <= cols).where(R, 0)

  def svd(self: Tensor, full_matrices: bool = True) -> tuple[Tensor, Tensor, Tensor]:
    """(U, S, Vh) with A = U diag(S) Vh for a (batched) matrix (..., m, n), as torch.linalg.svd: S descending, U (..., m, m)
    and Vh (..., n, n) orthogonal, or (..., m, k) and (..., k, n), k = min(m, n), when not full_matrices. Signs of singular
    vector pairs may differ from numpy's.

    Algorithm (all Tensor ops, as public tinygrad): A = Q R (qr); one-sided Jacobi on the columns of X = R[:k]^T (the
    transposed factor converges in fewer sweeps): round-robin rounds rotate k/2 column pairs at once until the columns are
    orthogonal, X V = W diag(S). Then A = (Q V) diag(S) W^T. A fixed 5 + log2(k) sweeps (no data-dependent stop, so no
    sync) reach the dtype's precision for well-conditioned inputs; S is sorted by ranks, and W is completed to an
    orthogonal matrix (a qr) where S is 0."""
    if self.ndim < 2: raise ValueError(f"svd needs a matrix (..., m, n), got shape {self.shape}")
    m, n = self.shape[-2:]
    if m < n:
      u, s, vh = self.transpose(-1, -2).svd(full_matrices)
      return vh.transpose(-1, -2), s, u.transpose(-1, -2)
    # on the matrix scaled to max |a| = 1: the column norms squared overflowed at 1e20 (S, U, Vh all NaN) and underflowed
    # at 1e-20 (S off by 100%). float16/bfloat16 rotate in float32 and return in their own dtype (as public tinygrad's:
    # float literals in the rotation had made U, S, Vh float32 by promotion)
    # (from the input detached: its sweeps are realized one at a time, which backward cannot go through, so no gradient
    # reaches the input; the scaling alone gave S a wrong one)
    x, odt = self.detach()._float(), self._float().dtype
    if odt in (dtypes.float16, dtypes.bfloat16): x = x.float()
    mx = x.abs().max((-2, -1), keepdim=True) if m and n else x.sum((-2, -1), keepdim=True)   # (an empty matrix: 0, no max)
    sc = (mx > 0).where(mx, 1)
    Q, R = (x / sc).qr()
    b, dev, pre = self.shape[:-2], self.device, [None] * (self.ndim - 2)
    X = R.shrink(tuple(pre + [(0, n), None])).transpose(-1, -2)
    k = n + n % 2   # an even count for the round robin; the padded zero column never rotates
    if k != n: X = X.pad(tuple(pre + [(0, 0), (0, 1)]))
    # X (n rows) and V (k rows) stacked take the same column rotations; columns are laid out so that round r pairs position p
    # with k-1-p (the circle method): after each round a fixed shift of positions 1..k-1 brings the next pairing, and a
    # sweep of k-1 rounds returns every column to its place. All movement ops, so a round is a few fused kernels.
    Y, h = X.cat(Tensor.eye(k, dtype=X.dtype, device=dev).expand(*b, k, k), dim=-2), k // 2
    cols = lambda t, a, e: t.shrink(tuple(pre + [None, (a, e)]))
    for _ in range(5 + math.ceil(math.log2(k))) if k > 1 else ():
      for _ in range(k - 1):
        L, Rr = cols(Y, 0, h), cols(Y, h, k).flip(-1)
        Lx, Rx = L.shrink(tuple(pre + [(0, n), None])), Rr.shrink(tuple(pre + [(0, n), None]))
        alpha, beta, gamma = Lx.square().sum(-2, keepdim=True), Rx.square().sum(-2, keepdim=True), (Lx * Rx).sum(-2, keepdim=True)
        rot = gamma != 0
        zeta = (beta - alpha) / (2 * rot.where(gamma, 1))
        t = rot.where((zeta >= 0).where(1.0, -1.0) / (zeta.abs() + (1 + zeta.square()).sqrt()), 0)
        c = (1 + t.square()).rsqrt()
        s = c * t
        Y = (c * L - s * Rr).cat((s * L + c * Rr).flip(-1), dim=-1)
        Y = cols(Y, 0, 1).cat(cols(Y, 2, k), cols(Y, 1, 2), dim=-1).contiguous()
      Y = Y.realize()   # one sweep's graph at a time (the scheduler's work grows with the graph)
    X, V = Y.shrink(tuple(pre + [(0, n), (0, n)])), Y.shrink(tuple(pre + [(n, 2 * n), (0, n)]))
    S = X.square().sum(-2).sqrt()
    W = X / (S > 0).where(S, 1).unsqueeze(-2)
    # sort descending by rank: rank_j = #{S_i > S_j} + #{i < j: S_i == S_j}; P[j, rank_j] = 1
    i_, j_ = Tensor.arange(n, device=dev).reshape(1, n), Tensor.arange(n, device=dev).reshape(n, 1)
    Sj, Si = S.unsqueeze(-1), S.unsqueeze(-2)
    rank = ((Si > Sj) | ((Si == Sj) & (i_ < j_))).sum(-1)
    P = (rank.unsqueeze(-1) == Tensor.arange(n, device=dev)).cast(S.dtype)
    S, W, V = (S.unsqueeze(-1) * P).sum(-2), W @ P, V @ P
    # columns of W where S is 0 are 0: its qr keeps the others (up to sign) and completes them to an orthogonal matrix
    Wq, Wr = W.qr()
    W = Wq * (Wr.diagonal(0, -2, -1) < 0).where(-1.0, 1.0).unsqueeze(-2)
    U = Q.shrink(tuple(pre + [None, (0, n)])) @ V
    if full_matrices and m > n: U = U.cat(Q.shrink(tuple(pre + [None, (n, m)])), dim=-1)
    return U.cast(odt), (S * sc.squeeze(-1)).cast(odt), W.transpose(-1, -2).cast(odt)
