"""Streaming stores: a large output that the kernel writes once and never reads is written past the caches.

A plain store into memory that is not in the cache first reads the line it writes into (write-allocate): a kernel writing
64 MB moves 128 MB. On a renderer with `nontemporal_stores`, a STORE marked "nontemporal" writes the line without reading
it (x86's movntps). That pays only where the whole line is written at once and nothing reads the output back from the
cache soon: outputs of STREAM_BYTES or more (past what the caches keep for the next kernel), each store a vector of a
whole cache line, ungated, into a buffer the kernel never loads from. codegen/rowcache.py, by the same rule, keeps a fused
softmax's rows in a scratch row instead of the output, so that its output store is one this pass marks.
"""
from __future__ import annotations
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, PtrDType
from tinygrad.renderer import Renderer

STREAM_BYTES = 1 << 26   # an output this large or larger is written past the caches (on this project's 2-core VM a 32 MB
                         # output was still read back from the cache by its next kernel, and 8% faster stored plainly)
LINE_BYTES = 64          # a store this wide writes a whole cache line

def streams(buf: UOp, value: DType, ren: Renderer) -> bool:
  """Whether stores of `value`s into output buffer `buf` (DEFINE_GLOBAL) go past the caches on `ren`: a large output, whole
  lines (the rest of this rule, the output never loaded and the store ungated, is the caller's)."""
  return ren.nontemporal_stores and isinstance(buf.dtype, PtrDType) and buf.dtype.size * buf.dtype.base.itemsize >= STREAM_BYTES \
    and value.itemsize >= LINE_BYTES

def _buffer(idx: UOp) -> UOp | None:
  while idx.op is Ops.CAST: idx = idx.src[0]
  return idx.src[0] if idx.op is Ops.INDEX and idx.src[0].op is Ops.DEFINE_GLOBAL else None

def stream_stores(sink: UOp, ren: Renderer) -> UOp:
  if not ren.nontemporal_stores: return sink
  topo = sink.toposort()
  read = {_buffer(u.src[0]) for u in topo if u.op is Ops.LOAD}
  marks = {u: u.replace(arg="nontemporal") for u in topo if u.op is Ops.STORE and u.arg is None and
           (b := _buffer(u.src[0])) is not None and b not in read and len(u.src[0].src) == 2 and streams(b, u.src[1].dtype, ren)}
  return sink.substitute(marks) if marks else sink
