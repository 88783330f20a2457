"""Graph templates for the Tensor methods whose graph costs more Python to build than to copy (gelu, tanh, erf, softmax,
layernorm, attention: 20-150 Tensor ops, 0.3-2 ms per call, paid again by every call of a model that is not jitted).

Such a method's graph depends only on its tensor arguments' (dtype, device, and the movement ops over the node below them,
which a method may read: matmul packs a transposed operand), its other arguments and the flags (ContextVars,
Tensor.training): the first call with a given key builds it over placeholders (names of buffers that are never allocated,
under the arguments' movement ops) and keeps the nodes above them in order; a later call rebuilds those nodes over the actual arguments'
graphs, which is what building the graph again through Tensor ops gives (node for node, up to the constant folding a
constant argument allows). A key whose build is not a pure template (its result is a placeholder or a view of one, the
graph reads a placeholder's buffer other than through its name, or it drew random numbers) is built directly, every time."""
from __future__ import annotations
import functools, math, numbers
from typing import TYPE_CHECKING, Any, Callable
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp, _rebuild
from tinygrad.dtype import DType
from tinygrad.helpers import ContextVar, TRAINING, CHECK_OOB
if TYPE_CHECKING:
  from tinygrad.tensor import Tensor

_MAX_ENTRIES = 256   # per method; the cache is dropped whole when full (a model uses a handful of shapes)
_UNCACHEABLE = object()

class _Template:
  # reads_training: its build read Tensor.training (its graph is the mode's): every use counts as a read (tensor.training_reads)
  __slots__ = ("phs", "order", "out", "reads_training")
  def __init__(self, phs: tuple[UOp, ...], order: list[UOp], out: UOp, reads_training: bool = False):
    self.phs, self.order, self.out, self.reads_training = phs, order, out, reads_training
    # every node's shape and device found once, here, for apply to hand on
    for n in order:
      try: n.shape, n.device
      except Exception: pass   # (a node without one: apply hands on what there is)
  def apply(self, srcs: list[UOp]) -> UOp:
    done: dict[UOp, UOp] = dict(zip(self.phs, srcs))
    for n in self.order:
      new = done[n] = _rebuild(n, tuple([done.get(s, s) for s in n.src]))
      # each node's shape and device are its template node's (the placeholders have the call's base shapes, movement ops
      # and devices: they are the key), so the first realize does not walk the new graph to find them
      have, known = new.__dict__, n.__dict__
      for k in ("_shape", "_device"):
        if k not in have and k in known: have[k] = known[k]
    return done[self.out]

def _arg_key(v: Any, tensors: list[Tensor]) -> Any:
  # a value's key: its type and repr (1, 1.0 and True are equal in a dict but give other dtypes; -0.0 and 0.0 too); a
  # tensor is the next placeholder (appended to `tensors`; the same tensor twice is two placeholders given one graph)
  if type(v).__name__ == "Tensor":
    tensors.append(v)
    return ("T",)
  if v is None or isinstance(v, (str, DType)): return (type(v), v)
  if isinstance(v, numbers.Real): return (type(v), repr(v))   # (numpy scalars too: a numpy value is strongly typed)
  if isinstance(v, (tuple, list)): return (type(v), tuple(_arg_key(x, tensors) for x in v))
  raise TypeError   # anything else (an object, a callable): no key, the method is built directly

_FLAGS: list = [-1, ()]   # (ContextVar.version, every flag's value then)
def _flags() -> tuple:
  if _FLAGS[0] != ContextVar.version:
    _FLAGS[:] = ContextVar.version, tuple(v.value if isinstance(v.value, (int, float, str)) else repr(v.value) for v in ContextVar._cache.values())
  return _FLAGS[1]

def _eligible(t: Tensor) -> bool:
  return isinstance(t.device, str) and all(isinstance(s, int) and s > 0 for s in t.shape)

_MOVES = {Ops.RESHAPE: "reshape", Ops.PERMUTE: "permute", Ops.EXPAND: "expand", Ops.PAD: "pad", Ops.SHRINK: "shrink", Ops.FLIP: "flip"}
def _chain(u: UOp) -> tuple[UOp, tuple]:
  """The node below u's movement ops and those ops, lowest first. Part of the key, and the placeholder repeats them: a
  method may read its argument's structure (matmul packs a transposed operand: weight.T in nn.Linear), so a placeholder
  of another structure would give another graph."""
  moves = []
  while u.op in _MOVES:
    moves.append((u.op, u.arg))
    u = u.src[0]
  return u, tuple(reversed(moves))

def cached_graph(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
  """`fn` (a Tensor method returning a new Tensor) with its graph built once per key."""
  from tinygrad.tensor import Tensor, training_reads
  cache: dict[Any, Any] = {}
  @functools.wraps(fn)
  def wrapper(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    # (CHECK_OOB=1: the losses read their labels' values, which placeholders do not have)
    if CHECK_OOB: return fn(self, *args, **kwargs)
    tensors: list[Tensor] = [self]
    try:
      akey = tuple(_arg_key(a, tensors) for a in args)
      kkey = tuple((k, _arg_key(kwargs[k], tensors)) for k in sorted(kwargs))
    except TypeError: return fn(self, *args, **kwargs)
    if not all(_eligible(t) for t in tensors): return fn(self, *args, **kwargs)
    chains = [_chain(t.uop) for t in tensors]
    # (a constant argument is built directly: its graph folds, and a method may read the constant, as // does)
    if any(b.op is Ops.CONST for b, _ in chains): return fn(self, *args, **kwargs)
    key = (tuple((t.dtype, t.device, b.shape, moves) for t, (b, moves) in zip(tensors, chains)), akey, kkey, bool(TRAINING.value), _flags())
    if (hit := cache.get(key)) is None:
      tmpl, reusable = _build(fn, tensors, chains, args, kwargs)
      if len(cache) >= _MAX_ENTRIES: cache.clear()
      cache[key] = tmpl if reusable else _UNCACHEABLE
      hit = tmpl if tmpl is not None else _UNCACHEABLE   # (a build that drew: this call's graph, with this call's draw)
    if not isinstance(hit, _Template): return fn(self, *args, **kwargs)   # (_UNCACHEABLE)
    if hit.reads_training: training_reads[0] += 1
    return Tensor(hit.apply([b for b, _ in chains]))
  return wrapper

def _build(fn: Callable[..., Tensor], tensors: list[Tensor], chains: list[tuple[UOp, tuple]], args: tuple,
           kwargs: dict) -> tuple[_Template | None, bool]:
  """(template, reusable): None when the graph over the placeholders is not the call's graph; not reusable when the build
  drew random numbers (the graph holds that draw's counter snapshot: the next call draws anew)."""
  from tinygrad.tensor import Tensor, training_reads
  from tinygrad.engine.buffers import new_buffer
  bufs = [new_buffer(t.device, math.prod(b.shape), t.dtype) for t, (b, _) in zip(tensors, chains)]
  phs = tuple(buf.reshape(b.shape) for buf, (b, _) in zip(bufs, chains))   # never allocated: names only
  def moved(u: UOp, moves: tuple) -> UOp:   # the argument's movement ops again, over its placeholder
    for op, arg in moves: u = getattr(u, _MOVES[op])(arg)
    return u
  pts = iter([Tensor(moved(p, moves)) for p, (_, moves) in zip(phs, chains)])
  def swap(v: Any) -> Any:   # the arguments again, each tensor replaced by its placeholder (in _arg_key's order)
    if type(v).__name__ == "Tensor": return next(pts)
    return type(v)(swap(x) for x in v) if isinstance(v, (tuple, list)) else v
  draws, reads = Tensor._draws, training_reads[0]
  out = fn(swap(tensors[0]), *[swap(a) for a in args], **{k: swap(kwargs[k]) for k in sorted(kwargs)})
  if not isinstance(out, Tensor) or any(v.uop in phs for v in _view_chain(out)): return None, False
  # the nodes above a placeholder, sources first; a graph that reaches a placeholder's buffer other than through its name
  # (a buffer read as a whole) would keep reading the placeholder after the copy
  above: dict[UOp, None] = dict.fromkeys(phs)
  named = {b for b, p in zip(bufs, phs) if p is not b}
  order = []
  for n in out.uop.toposort():
    if n in above: continue
    if any(s in named for s in n.src): return None, False
    if any(s in above for s in n.src):
      above[n] = None
      order.append(n)
  if out.uop not in above: return None, False   # a graph of none of its arguments (a constant): nothing to copy onto
  return _Template(phs, order, out.uop, training_reads[0] != reads), Tensor._draws == draws

def _view_chain(t: Tensor) -> list[Tensor]:
  # t and the tensors it is a view of: a view of an argument is that argument's storage, not a copy to template (a view of
  # an intermediate, a matmul's reshaped reduce, is a value: no one else can reach that intermediate)
  chain = [t]
  while (v := chain[-1]._view_of) is not None: chain.append(v)
  return chain

# the methods given templates (attention with dropout while training draws: built directly, a new mask every call)
CACHED = ("exp", "tanh", "gelu", "quick_gelu", "erf", "sigmoid", "silu", "swish", "mish", "softplus", "elu", "celu", "selu", "hardswish",
          "sinh", "cosh", "atan", "asinh", "acosh", "atanh", "logsigmoid", "relu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid",
          "softsign", "softmax", "log_softmax", "logsumexp", "mean", "var", "std", "layernorm", "batchnorm", "scaled_dot_product_attention", "linear",
          "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "sparse_categorical_crossentropy", "cross_entropy",
          "binary_crossentropy", "binary_crossentropy_logits", "nll_loss")

def install(cls: type) -> None:
  for name in CACHED: setattr(cls, name, cached_graph(getattr(cls, name)))
