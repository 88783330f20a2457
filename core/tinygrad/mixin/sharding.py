# mypy: disable-error-code="misc"
"""Tensor methods, multi-device tensors: shard, shard_, shard_like (the lowering to per-device graphs is tinygrad/multi.py)."""
from __future__ import annotations
from typing import TYPE_CHECKING, Callable, Sequence
from tinygrad.uop import Ops
from tinygrad.mixin.common import _canon_device
from tinygrad.mixin.disk import is_disk
if TYPE_CHECKING: from tinygrad.tensor import Tensor

class ShardingMixin:
  def shard(self: Tensor, devices: Sequence[str], axis: int | None = None) -> Tensor:
    """This tensor split over `devices` along `axis` (None: a whole copy on each, replicated): a multi-device tensor whose
    `.device` is the tuple of their canonical names (one device: this tensor moved there, as in public tinygrad). An axis
    that does not divide gives each shard ceil(size/n) and the last the remainder (tinygrad 0.9's rule); a split that would
    leave a shard empty is an error (an empty axis gives empty shards)."""
    from tinygrad.multi import to_layout
    devs, ax = _canon_device(tuple(devices)), None if axis is None else self._resolve_dim(axis)
    if self.uop.op is Ops.MULTI:
      if (devs, ax) == (self.device, self.uop.arg): return self
      raise RuntimeError(f"can't shard a multi-device tensor (sharded over {self.device} on axis {self.uop.arg}) again, as in public "
                         f"tinygrad: gather it first, t.to({self.device[0]!r}).shard(devices, axis)")
    if isinstance(devs, str): return self.to(devs)   # one device: a move, as public tinygrad's shard
    if is_disk(self.device): return self.to(devs[0]).shard(devs, ax)   # (read, then split)
    return Tensor(to_layout(self.uop, devs, ax))
  def shard_like(self: Tensor, y: Tensor) -> Tensor:
    """This tensor laid out like `y`: sharded over y's devices on y's axis, or moved to y's one device."""
    if y.uop.op is not Ops.MULTI: return self.to(y.device)
    return self.shard(y.device, y.uop.arg)
  def _multi_like(self: Tensor, make: Callable[[tuple, str], Tensor]) -> Tensor:
    """A new tensor laid out like this multi-device one, made by `make(shape, device)`: per shard on its device, or, when
    replicated, once on the first device and copied to the others."""
    from tinygrad.multi import multi, to_layout
    if self.uop.arg is None: return Tensor(to_layout(make(self.shape, self.device[0]).uop, self.device, None))
    return Tensor(multi([make(s.shape, s.device).uop for s in self.uop.src], self.uop.arg))
