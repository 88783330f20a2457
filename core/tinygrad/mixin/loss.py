# mypy: disable-error-code="misc"
"""Tensor methods, losses: cross entropy (class indices or probabilities), NLL, binary cross entropy (on probabilities
or logits). `self` is the prediction, `Y` the target; reduction is one of "none", "sum", "mean" as in torch."""
from __future__ import annotations
from typing import TYPE_CHECKING
from tinygrad.dtype import dtypes, least_upper_dtype, OPMATH_F32
from tinygrad.uop.ops import _broadcast_shape
from tinygrad.helpers import CHECK_OOB
from tinygrad.mixin.common import ArgumentError
from tinygrad.mixin.indexing import _check_oob
if TYPE_CHECKING: from tinygrad.tensor import Tensor

_REDUCTIONS = ("none", "sum", "mean")

def _check_reduction(op: str, reduction: str) -> str:
  if reduction not in _REDUCTIONS: raise ValueError(f"{op}: reduction {reduction!r} is not one of {', '.join(_REDUCTIONS)}")
  return reduction

def _check_smoothing(op: str, label_smoothing: float) -> float:
  # torch raises RuntimeError here
  if not 0.0 <= label_smoothing <= 1.0: raise RuntimeError(f"{op}: label_smoothing must be in [0.0, 1.0], got {label_smoothing}")
  return label_smoothing

def _check_labels(op: str, Y: Tensor) -> None:
  if not dtypes.is_int(Y.dtype): raise TypeError(f"{op}: class-index targets need an int dtype, got {Y.dtype}; pass probabilities of the input's shape instead")

def _check_target_shape(op: str, x: Tensor, Y: Tensor) -> None:
  # torch raises where the target's shape differs; a target that broadcasts into the input's shape stays allowed (public
  # tinygrad's), one that grows it is an error: (N, 1) logits against (N,) targets gave an (N, N) loss and its mean, silently
  try: ok = _broadcast_shape(x.shape, Y.shape) == x.shape
  except ValueError: ok = False
  if not ok: raise ArgumentError(f"{op}: target shape {Y.shape} must be the input's {x.shape} (or broadcast into it), as torch's")

def _check_label_range(op: str, Y: Tensor, n: int, axis: int, ignore_index: int | None) -> None:
  # CHECK_OOB=1: a label outside 0..n-1 (other than ignore_index) raises as torch's; off, its row matches no class (loss 0)
  if CHECK_OOB: _check_oob(op, Y if ignore_index is None else (Y != ignore_index).where(Y, 0), n, axis, False)


class LossMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  def _reduce_loss(self: Tensor, op: str, reduction: str) -> Tensor:
    r = _check_reduction(op, reduction)
    return self if r == "none" else self.sum() if r == "sum" else self.mean()
  def _one_hot_at(self: Tensor, n: int, dim: int) -> Tensor:
    """A bool one-hot of int labels along a new axis `dim` with n classes (labels outside 0..n-1 give an all-False row)."""
    ar = Tensor.arange(n, device=self.device).reshape(n, *[1] * (self.ndim - dim))
    return self.unsqueeze(dim) == ar

  def binary_crossentropy(self: Tensor, Y: Tensor, reduction: str = "mean") -> Tensor:
    """-(Y log p + (1-Y) log(1-p)) with p = self (probabilities in [0, 1]); each log is clamped at -100 as torch's BCELoss,
    so p = 0 or 1 gives a finite loss."""
    _check_reduction("binary_crossentropy", reduction)
    _check_target_shape("binary_crossentropy", self, Y)
    x = self._float()
    out = least_upper_dtype(x.dtype, Y.dtype)
    # float16/bfloat16 in float32, the reduction too, rounded once as torch's (each product and log rounded to float16 the
    # loss was 2-4x torch's error)
    if out in OPMATH_F32: x, Y = x.float(), Y.float()
    # the clamped logs' gradients are torch's, finite at p = 0 and 1 (gradient.py GRAD_RULES)
    logp, log1mp = x._with_grad(x.log().maximum(-100), "bce_log"), x._with_grad((1 - x).log().maximum(-100), "bce_log1m")
    # Y's gradient is torch's log(1-p) - log(p), from the unclamped logs (inf at p = 0, the clamped ones' 100 was finite):
    # the clamped loss's value with the unclamped terms' gradient
    ulogp, ulog1mp = x._with_grad(x.log(), "bce_log"), x._with_grad((1 - x).log(), "bce_log1m")
    loss = -(Y * ulogp + (1 - Y) * ulog1mp)._with_grad((Y * logp + (1 - Y) * log1mp).detach(), "same")
    return loss._reduce_loss("binary_crossentropy", reduction).cast(out)
  def binary_crossentropy_logits(self: Tensor, Y: Tensor, reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy on logits (self), computed stably through logsigmoid; pos_weight scales the positive term."""
    _check_reduction("binary_crossentropy_logits", reduction)
    _check_target_shape("binary_crossentropy_logits", self, Y)
    pos = Y * self.logsigmoid()
    loss = -((pos if pos_weight is None else pos_weight * pos) + (1 - Y) * (-self).logsigmoid())
    return loss._reduce_loss("binary_crossentropy_logits", reduction)

  def sparse_categorical_crossentropy(self: Tensor, Y: Tensor, ignore_index: int = -1, label_smoothing: float = 0.0,
                                      reduction: str = "mean") -> Tensor:
    """Cross entropy of logits (classes on the LAST axis, unlike torch) against int labels Y (self.shape[:-1]); labels equal
    to ignore_index add nothing and are left out of the mean. label_smoothing mixes in the uniform distribution as torch."""
    op = "sparse_categorical_crossentropy"
    _check_reduction(op, reduction)
    _check_smoothing(op, label_smoothing)
    _check_labels(op, Y)
    # labels broadcast against the logits' other axes, as in public tinygrad (a batch of labels for one row of logits), but
    # not both ways: (N, 1) labels of (N, C) logits made an (N, N) loss, every label against every row, and its mean silently
    try: out = _broadcast_shape(Y.shape, self.shape[:-1])
    except ValueError: raise ValueError(f"{op}: labels of shape {Y.shape} do not broadcast with logits {self.shape} without the class (last) axis") from None
    if out not in (Y.shape, self.shape[:-1]):
      raise ArgumentError(f"{op}: labels of shape {Y.shape} and logits {self.shape} broadcast to {out}, larger than both; labels of the logits' "
                          f"shape without the class (last) axis {self.shape[:-1]} are expected")
    _check_label_range(op, Y, self.shape[-1], self.ndim - 1, ignore_index)
    # (the mask over every row scored: labels () of (N, C) logits are N terms, the mean divided their sum by 1)
    logp, keep = self.log_softmax(-1), (Y != ignore_index)._broadcast_to(out)
    nll = -(Y._one_hot_at(self.shape[-1], Y.ndim).where(logp, 0).sum(-1))
    # (the smoothing term only with smoothing: 0 * the mean of a row with a masked -inf logit was NaN, torch's loss is finite)
    loss = keep.where((1 - label_smoothing) * nll - label_smoothing * logp.mean(-1) if label_smoothing else nll, 0)
    if reduction == "mean": return loss.sum() / keep.sum()
    return loss.sum() if reduction == "sum" else loss

  def cross_entropy(self: Tensor, Y: Tensor, reduction: str = "mean", label_smoothing: float = 0.0, ignore_index: int = -100) -> Tensor:
    """Cross entropy of logits (classes on axis 1, or 0 for a 1-d input, as torch) against class indices (an int Y of the
    input's shape without the class axis) or class probabilities (a float Y of the input's shape). Class indices equal to
    ignore_index (torch's -100 by default) add nothing and are left out of the mean, as torch's."""
    op = "cross_entropy"
    _check_reduction(op, reduction)
    _check_smoothing(op, label_smoothing)
    cdim = 0 if self.ndim == 1 else 1
    n = self.shape[cdim]
    if Y.shape != self.shape:
      if Y.shape != self.shape[:cdim] + self.shape[cdim + 1:]:   # the shapes first: a (32, 1) target of a (32, 10) input is a shape error
        raise ArgumentError(f"{op}: target shape {Y.shape} is neither the input's {self.shape} (probabilities) nor it without axis {cdim} (class indices)")
      _check_labels(op, Y)
      _check_label_range(op, Y, n, cdim, ignore_index)
      # the target's log-probability picked, not a one-hot product: a masked (-inf) logit of another class gave 0 * -inf =
      # NaN (torch's loss is finite there); the smoothing term reads every class, as torch's (inf with a -inf logit)
      logp = self.log_softmax(cdim)
      loss = -(Y._one_hot_at(n, cdim).where(logp, 0).sum(cdim))
      if label_smoothing: loss = (1 - label_smoothing) * loss - label_smoothing * logp.mean(cdim)
      # (torch's -100 labels (padding) were a loss of 0 counted in the mean, and took the smoothing term: a mean off torch's)
      keep = Y != ignore_index
      loss = keep.where(loss, 0)
      return loss.sum() / keep.sum() if reduction == "mean" else loss._reduce_loss(op, reduction)
    if not dtypes.is_float(Y.dtype): raise TypeError(f"{op}: probability targets need a float dtype, got {Y.dtype}")
    Y = Y * (1 - label_smoothing) + label_smoothing / n
    return (-(self.log_softmax(cdim) * Y).sum(cdim))._reduce_loss(op, reduction)

  def nll_loss(self: Tensor, Y: Tensor, weight: Tensor | None = None, ignore_index: int | None = None, reduction: str = "mean") -> Tensor:
    """Negative log likelihood of log-probabilities (classes on axis 1, or 0 for a 1-d input) at int labels Y; `weight`
    (one per class) scales each term and the mean divides by the summed weights of the labels kept, as torch."""
    op = "nll_loss"
    _check_reduction(op, reduction)
    _check_labels(op, Y)
    cdim = 0 if self.ndim == 1 else 1
    n = self.shape[cdim]
    if Y.shape != self.shape[:cdim] + self.shape[cdim + 1:]: raise ValueError(f"{op}: target shape {Y.shape} does not match input {self.shape} without axis {cdim}")
    if weight is not None and weight.shape != (n,): raise ValueError(f"{op}: weight of shape {weight.shape} needs one value per class ({n},)")
    _check_label_range(op, Y, n, cdim, ignore_index)
    hit = Y._one_hot_at(n, cdim)  # an ignored label outside 0..n-1 just matches no class
    w = hit.where(self._const(1.0, shape=()) if weight is None else weight.reshape(n, *[1] * (Y.ndim - cdim)), 0.0).sum(cdim)
    nll = -(hit.where(self, 0).sum(cdim) * w)
    if ignore_index is not None:
      # an ignored label's term is 0, not 0 * its log-probability: a -inf there (a masked class) was NaN, as torch's it is 0
      keep = Y != ignore_index
      w, nll = keep.where(w, 0.0), keep.where(nll, 0.0)
    if reduction == "mean": return nll.sum() / w.sum()
    return nll.sum() if reduction == "sum" else nll
