# mypy: disable-error-code="misc"
"""Tensor methods, multi-device tensors: shard, shard_, shard_like (the lowering to per-device graphs is tinygrad/multi.py)."""
from __future__ import annotations
from typing import TYPE_CHECKING, Sequence
from tinygrad.uop import Ops
from tinygrad.mixin.common import _canon_device
if TYPE_CHECKING: from tinygrad.tensor import Tensor

class ShardingMixin:
  def shard(self: Tensor, devices: Sequence[str], axis: int | None = None) -> Tensor:
    """This tensor split over `devices` along `axis` (None: a whole copy on each, replicated): a multi-device tensor whose
    `.device` is the tuple of their canonical names. An axis that does not divide gives each shard ceil(size/n) and the last
    the remainder (tinygrad 0.9's rule); a split that would leave a shard empty is an error."""
    from tinygrad.multi import to_layout
    devs = _canon_device(tuple(devices))
    return Tensor(to_layout(self.uop, devs, None if axis is None else self._resolve_dim(axis)))
  def shard_like(self: Tensor, y: Tensor) -> Tensor:
    """This tensor laid out like `y`: sharded over y's devices on y's axis, or moved to y's one device."""
    if y.uop.op is not Ops.MULTI: return self.to(y.device)
    return self.shard(y.device, y.uop.arg)
