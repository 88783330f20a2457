"""`@function`: public tinygrad's decorator for a function of Tensors that is one unit of the graph (beautiful_mnist's
`Model.__call__`). Called, it runs the body on its arguments and returns what the body returns (a Tensor or a tuple
of Tensors), with gradients to every input.

What it checks, as public tinygrad does: the body's return is a Tensor or a tuple of Tensors (else RuntimeError), and
with `allow_implicit=False` (the default) every buffer the result reads is reachable from the arguments (the Tensors in
them, their attributes, lists and dicts: a method's `self` makes a model's weights explicit), so a weight read from a
global or a closure is named in a RuntimeError instead of being silently baked in; pass it as an argument or use
`@function(allow_implicit=True)`. A computation not yet realized that depends on no argument (a pending assign, a
`.contiguous()`) is an allowed implicit input, as there.

Differences (docs/guide.md): the body runs at every call and its kernels come from the schedule cache (public tinygrad
traces it into one reusable CALL), so `precompile` and `precompile_backward` change nothing here; `grad_fxn` (a custom
backward over that CALL) is not supported and raises."""
from __future__ import annotations
import functools
from typing import Any, Callable, Generic, TypeVar, overload
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp

R = TypeVar("R")

def _inputs(args: tuple, kwargs: dict) -> set[UOp]:
  from tinygrad.tensor import Tensor
  from tinygrad.nn.state import get_state_dict
  out = {t.uop if isinstance(t, Tensor) else t for t in get_state_dict((args, kwargs), tensor_type=(Tensor, UOp)).values()}  # type: ignore[arg-type]
  # a multi-device input's ops are built on its per-device parts (tinygrad/multi.py): those are the inputs the result reads
  return out | {s for u in out if u.op is Ops.MULTI for s in u.src}

def implicit_buffers(ret: list[UOp], explicit: set[UOp], made_from: int | None = None) -> list[UOp]:
  """The BUFFERs the graphs `ret` read that are not under an `explicit` input, nor under an unrealized ASSIGN or
  CONTIGUOUS that depends on no explicit input (those are computed once, outside, as public tinygrad captures them)."""
  topo = UOp(Ops.SINK, src=tuple(ret)).toposort(gate=lambda x: x not in explicit)
  dep: set[UOp] = set()   # the nodes computed from an explicit input
  for n in topo:
    if n in explicit or any(s in dep for s in n.src): dep.add(n)
  def gate(x: UOp) -> bool: return x not in explicit and not (x.op in (Ops.ASSIGN, Ops.CONTIGUOUS) and x not in dep)
  # (a custom kernel's output buffer made in the body, Tensor.empty/invalids numbered `made_from` on: the body's own, not an input)
  scratch = {b for n in topo if n.op is Ops.KERNEL for s in n.src if (b := s.base).op is Ops.BUFFER and made_from is not None and b.src[0].arg >= made_from}
  return [u for u in UOp(Ops.SINK, src=tuple(ret)).toposort(gate=gate) if u.op is Ops.BUFFER and u not in explicit and u not in scratch]

class _function(Generic[R]):
  depth = 0   # how many decorated bodies are running (nested calls)
  def __init__(self, fxn: Callable[..., R], *, precompile: bool, precompile_backward: bool, allow_implicit: bool, grad_fxn: Callable | None):
    if grad_fxn is not None:
      raise NotImplementedError("function(grad_fxn=...): a custom backward is not supported by tinygrad-core (docs/guide.md, differences); "
                                "write the backward with Tensor ops, which autograd differentiates")
    self.fxn, self.precompile, self.precompile_backward, self.allow_implicit = fxn, precompile, precompile_backward, allow_implicit
    self.name = getattr(fxn, "__qualname__", None) or type(fxn).__qualname__
    functools.update_wrapper(self, fxn)  # type: ignore[arg-type]
  def __get__(self, obj: Any, objtype: Any = None) -> Any: return functools.partial(self.__call__, obj) if obj is not None else self
  def __call__(self, *args: Any, **kwargs: Any) -> R:
    from tinygrad.tensor import Tensor
    from tinygrad.engine.buffers import _unique
    made_from = next(_unique)
    _function.depth += 1
    try: ret = self.fxn(*args, **kwargs)
    finally: _function.depth -= 1
    if isinstance(ret, Tensor): outs = [ret]
    elif isinstance(ret, tuple) and all(isinstance(x, Tensor) for x in ret): outs = list(ret)
    else: raise RuntimeError(f"function {self.name} returned {type(ret).__name__}; a function returns a Tensor or a tuple of Tensors")
    if not self.allow_implicit and (imp := implicit_buffers([t.uop for t in outs], _inputs(args, kwargs), made_from)):
      desc = "\n  ".join(f"{i}: dtype={b.dtype}, size={b.arg}, device={b.device}" for i, b in enumerate(imp))
      raise RuntimeError(f"function {self.name} has {len(imp)} implicit buffer(s), but allow_implicit=False (pass them as arguments, "
                         f"or use @function(allow_implicit=True))\n  {desc}")
    return ret

@overload
def function(fxn: Callable[..., R], *, precompile: bool = False, precompile_backward: bool = False, allow_implicit: bool = False,
             grad_fxn: Callable | None = None) -> _function[R]: ...
@overload
def function(fxn: None = None, *, precompile: bool = False, precompile_backward: bool = False, allow_implicit: bool = False,
             grad_fxn: Callable | None = None) -> Callable[[Callable[..., R]], _function[R]]: ...
def function(fxn: Callable[..., R] | None = None, *, precompile: bool = False, precompile_backward: bool = False, allow_implicit: bool = False,
             grad_fxn: Callable | None = None) -> Any:
  """Decorate a function of Tensors (`@function` or `@function(allow_implicit=True)`); see the module's docstring."""
  def make(f: Callable[..., R]) -> _function[R]:
    return _function(f, precompile=precompile, precompile_backward=precompile_backward, allow_implicit=allow_implicit, grad_fxn=grad_fxn)
  return make if fxn is None else make(fxn)
