"""TinyJit: capture the kernels a function runs on its second call and replay them on later calls, without rescheduling."""
from __future__ import annotations
import functools
from typing import Any, Callable, Generic, TypeVar
from tinygrad.uop import Ops
from tinygrad.helpers import CAPTURING, JIT, DEBUG
from tinygrad.device import Buffer
from tinygrad.engine import realize as _realize
from tinygrad.engine.buffers import buffer_of

R = TypeVar("R")

class JitError(RuntimeError):
  """A jitted function was called in a way its captured kernels cannot replay."""

def _tensors_in(x: Any) -> list[Any]:
  from tinygrad.tensor import Tensor
  if isinstance(x, Tensor): return [x]
  if isinstance(x, (list, tuple)): return [t for v in x for t in _tensors_in(v)]
  if isinstance(x, dict): return [t for v in x.values() for t in _tensors_in(v)]
  return []

def _buffer(t: Any) -> Buffer:
  u = t.uop.src[0] if t.uop.op is Ops.RESHAPE else t.uop
  if u.op is not Ops.BUFFER: raise JitError(f"jit input is not realized into a buffer ({u.op})")
  return buffer_of(u)

class TinyJit(Generic[R]):
  """Decorate a function of Tensors: call 1 runs it normally, call 2 records its kernels, later calls replay them with the
  new input buffers. Inputs must keep their shapes, dtypes and devices; the function's Python code does not run on replay."""
  def __init__(self, fxn: Callable[..., R]):
    self.fxn = fxn
    functools.update_wrapper(self, fxn)  # type: ignore[arg-type]
    self.reset()
  def reset(self) -> None:
    """Forget the capture: the next call runs normally again."""
    self.cnt = 0
    self.steps: list[_realize.ExecStep] = []
    self.in_bufs: list[Buffer] = []
    self.signature: list[tuple] = []
    self.ret: Any = None
  def __get__(self, obj: Any, objtype: Any = None) -> Callable[..., R]: return functools.partial(self.__call__, obj)  # as a method

  def __call__(self, *args: Any, **kwargs: Any) -> R:
    from tinygrad.tensor import Tensor
    inputs = _tensors_in(list(args) + [kwargs[k] for k in sorted(kwargs)])
    if inputs: Tensor.realize(*inputs)
    signature = [(t.shape, t.dtype, t.device) for t in inputs]
    if not CAPTURING or not JIT or self.cnt == 0:
      self.cnt += 1
      return self._run_and_realize(args, kwargs)
    if self.cnt == 1:
      if _realize.capturing is not None: raise JitError("TinyJit functions cannot be nested")
      self.in_bufs, self.signature = [_buffer(t) for t in inputs], signature
      _realize.capturing = []
      try: self.ret = self._run_and_realize(args, kwargs)
      finally: self.steps, _realize.capturing = _realize.capturing, None
      if DEBUG >= 1: print(f"TinyJit captured {len(self.steps)} kernels with {len(inputs)} inputs")
      self.cnt += 1
      return self.ret
    if signature != self.signature:
      raise JitError(f"jitted {getattr(self.fxn, '__name__', 'function')} was captured with inputs {self._fmt(self.signature)} "
                     f"but called with {self._fmt(signature)}; call .reset() to capture again")
    swap = {id(old): _buffer(t) for old, t in zip(self.in_bufs, inputs)}
    for step in self.steps:
      bufs = [swap.get(id(b), b) for b in step.bufs]
      _realize.ExecStep(step.runner, bufs).run(jit=True)
    self.cnt += 1
    return self.ret

  def _run_and_realize(self, args: tuple, kwargs: dict) -> Any:
    from tinygrad.tensor import Tensor
    ret = self.fxn(*args, **kwargs)
    outs = _tensors_in(ret)
    if outs: Tensor.realize(*outs)
    return ret

  @staticmethod
  def _fmt(sig: list[tuple]) -> str: return "[" + ", ".join(f"{s} {d} {dev}" for s, d, dev in sig) + "]"
