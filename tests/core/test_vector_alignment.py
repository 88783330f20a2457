"""The vectorize pass and a renderer's vector alignment (Renderer.unaligned_vectors, docs/plugins.md "Vector alignment"):
where the language's vectors need their own alignment, a vector load or store is emitted only at an element offset that is a
multiple of its lane count by construction; elsewhere the lanes stay scalar. Where they need only the element's, every
consecutive run is one vector access, whatever its offset."""
from tinygrad import Tensor
from tinygrad.uop import Ops
from tinygrad.dtype import dtypes
from tinygrad.codegen import full_rewrite
from tinygrad.codegen.opt import Opt, OptOps
from tinygrad.codegen.vectorize import _multiple_of, vectorize
from tinygrad.renderer.cstyle import CStyleLanguage
from tinygrad.uop.ops import UOp

class Aligned(CStyleLanguage):
  vector_bytes, vector_ops, vector_dtypes = 16, frozenset({Ops.ADD, Ops.MUL}), frozenset({dtypes.float32})

class Unaligned(Aligned):
  unaligned_vectors = True

def accesses(t: Tensor, ren, opt: Opt = Opt(OptOps.UPCAST, 0, 4)) -> list[tuple[str, int, int]]:
  """(LOAD/STORE, buffer slot, lanes) of every global access, and each vector access's offset is checked by _multiple_of."""
  ret = []
  for u in full_rewrite(t.schedule()[-1].ast, ren, [opt]):
    if u.op not in (Ops.LOAD, Ops.STORE) or u.src[0].op is not Ops.INDEX or u.src[0].src[0].op is not Ops.DEFINE_GLOBAL: continue
    n = (u.dtype if u.op is Ops.LOAD else u.src[1].dtype).count
    if n > 1 and not ren.unaligned_vectors: assert _multiple_of(u.src[0].src[1], n), f"unaligned {u.op} at {u.src[0].src[1].render()}"
    ret.append((u.op.name, u.src[0].src[0].arg, n))
  return ret

def test_aligned_only_renderer_keeps_odd_offsets_scalar():
  x = Tensor.empty(40, device="NULL")
  acc = accesses(x[1:33] * 2 + x[4:36], Aligned())
  assert ("LOAD", 1, 4) in acc                               # x[4:36]: lanes 4i..4i+3, a multiple of 4
  assert [a for a in acc if a[:2] == ("LOAD", 1) and a[2] == 1] == [("LOAD", 1, 1)] * 4   # x[1:33]: four scalar loads
  assert ("STORE", 0, 4) in acc                              # the output starts at element 0

def test_unaligned_renderer_vectorizes_any_offset():
  x = Tensor.empty(40, device="NULL")
  acc = accesses(x[1:33] * 2 + x[4:36], Unaligned())
  assert sorted(acc) == [("LOAD", 1, 4), ("LOAD", 1, 4), ("STORE", 0, 4)]

def test_aligned_only_store_runs_start_at_multiples():
  # out[16r+3 .. 16r+10] = in[16r+3 ..]: chunks of 1, 4, 2, 1 at elements 3, 4, 8, 10 (not 4 at 3 and 4 at 7); unaligned: 4 at 3, 4 at 7
  out, inp = UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(64), (), 0), UOp(Ops.DEFINE_GLOBAL, dtypes.float32.ptr(64), (), 1)
  r = UOp.range(4, 0)
  sink = UOp.sink(*[out.index(r * 16 + c).store(inp.index(r * 16 + c).load() * 2.0) for c in range(3, 11)])
  def runs(ren) -> list[tuple[int, int]]:
    return sorted((u.src[0].src[1].src[1].arg if u.src[0].src[1].op is Ops.ADD else 0, u.src[1].dtype.count) for u in vectorize(sink, ren).src)
  assert runs(Aligned()) == [(3, 1), (4, 4), (8, 2), (10, 1)]
  assert runs(Unaligned()) == [(3, 4), (7, 4)]

def test_multiple_of():
  r = UOp.range(8, 0)
  assert _multiple_of(r * 8 + 16, 4) and _multiple_of((r * 2) * 2 + 4, 4) and _multiple_of(r << 3, 8)
  assert not _multiple_of(r * 8 + 1, 2) and not _multiple_of(r * 2, 4) and not _multiple_of(r // 4 * 2, 4) and _multiple_of(r // 4 * 4 - 8, 4)
