"""The CPU heuristics (codegen/opt.py's hand_coded_opts) on the CPU renderers: the register tile follows the renderer's SIMD
registers, a big matmul's right operand is packed into panels (Tensor.dot, renderer.matmul_pack) and its kernel is
panel-blocked; and what they produce is right on odd shapes (primes, 1, sizes the tile does not divide), against numpy."""
import numpy as np, pytest
from tinygrad import Tensor, Device, Context
from tinygrad.codegen import PASSES
from tinygrad.codegen.opt import Opt, OptOps, hand_coded_opts, register_tile, kernel_ranges, apply_opts
from tinygrad.engine.realize import method_cache

def _renderer(register_bytes: int, registers: int):
  from tinygrad_cpu.renderer import LLVMRenderer
  ren = LLVMRenderer()
  ren.register_bytes, ren.registers = register_bytes, registers
  return ren

def _kernel(ast, ren):
  """The kernel as the optimizer sees it (the passes before "optimize")."""
  for name, fxn in PASSES[:[n for n, _ in PASSES].index("optimize")]: ast = fxn(ast, ren, None)
  return ast

def _matmul_asts(m, k, n, device="CPU"):
  return [si.ast for si in (Tensor.empty(m, k, device=device) @ Tensor.empty(k, n, device=device)).schedule()]

@pytest.mark.parametrize("regs, want", [((32, 16), (6, 1)), ((64, 32), (6, 4)), ((16, 16), (2, 1))])
def test_register_tile_fits_the_registers(regs, want):
  ren = _renderer(*regs)
  # 16 floats per LLVM vector: 2 AVX2 registers, 1 AVX-512 register, 4 SSE registers
  r, c = register_tile(ren, 24, 64, 64)
  per_vec = max(1, 64 // regs[0])
  assert (r * c + c) * per_vec + 1 <= regs[1], "accumulators + one row of vectors + a broadcast must fit"
  assert (r, c) == want

class _host:
  """The CPU device's renderer with these SIMD registers for a while: Tensor.dot sizes its panels by them, the tests' opts too."""
  def __init__(self, register_bytes, registers): self.regs = (register_bytes, registers)
  def __enter__(self):
    self.ren = Device["CPU"].renderer
    self.saved = (self.ren.register_bytes, self.ren.registers)
    self.ren.register_bytes, self.ren.registers = self.regs
    return self.ren
  def __exit__(self, *exc): self.ren.register_bytes, self.ren.registers = self.saved

# (registers, m=k=n) -> the matmul kernel's opts and its global loops after them: the tile (rows x vectors of 16 floats),
# the panel axis outside the rows (SWAP), the rows cut into chunks of 1 MB of A (THREAD) where that makes several
@pytest.mark.parametrize("regs, size, want, loops", [
  # AVX2, 16 ymm: 6x16 (12 accumulators of 2 registers: 15 of 16 with B's vector and the broadcast), 64-byte panels; the
  # rows padded to a multiple of 6 (2052: 342 tiles, in 18 chunks); 1026 rows make 171 tiles, no even count of chunks
  ((32, 16), 2048, [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.PADTO, 0, 6), Opt(OptOps.UPCAST, 0, 6), Opt(OptOps.SWAP, 0, 1), Opt(OptOps.THREAD, 1, 18)], [18, 128, 19]),
  ((32, 16), 1024, [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.PADTO, 0, 6), Opt(OptOps.UPCAST, 0, 6), Opt(OptOps.SWAP, 0, 1), Opt(OptOps.UNROLL, 0, 4)], [64, 171]),
  # AVX-512, 32 zmm: 4x64 (16 accumulators, 21 registers), 256-byte panels, so one k step reads one panel's row
  ((64, 32), 1024, [Opt(OptOps.UPCAST, 1, 64), Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.SWAP, 0, 1), Opt(OptOps.THREAD, 1, 4)], [4, 16, 64])])
def test_big_matmul_is_packed_and_panel_blocked(regs, size, want, loops):
  with _host(*regs) as ren, Context(MATMUL_PACK=1):
    asts = _matmul_asts(size, size, size)
    assert len(asts) == 2, "the right operand is packed into panels by a copy kernel first"
    opts = hand_coded_opts(_kernel(asts[-1], ren), ren)
    assert opts[:len(want)] == want
    glob, _ = kernel_ranges(apply_opts(_kernel(asts[-1], ren), opts))
    assert [g.src[0].arg for g in glob] == loops

@pytest.mark.parametrize("regs, panel", [((32, 16), 16), ((64, 32), 64), ((16, 16), 16)])
def test_panel_is_the_register_tile_width(regs, panel):
  with _host(*regs) as ren, Context(MATMUL_PACK=1, MATMUL_PACK_BYTES=0):
    pack = _matmul_asts(64, 64, 4 * panel)[0]
    assert [g.src[0].arg for g in kernel_ranges(_kernel(pack, ren))[0]] == [4, 64, panel], "(n/panel, k, panel)"
    assert len(_matmul_asts(64, 64, panel)) == 1, "n as wide as one panel: b is its own panel, read in place"
    assert len(_matmul_asts(64, 64, 2 * panel)) == 2

def test_small_matmul_is_not_packed():
  with _host(64, 32), Context(MATMUL_PACK=1):
    assert len(_matmul_asts(64, 64, 64)) == 1
    # a right operand of up to MATMUL_PACK_BYTES (one core's L2) is read in place: at 512 the pack's kernel and the host
    # work of its extra ops and kernel (~250 us) cost more than the panels save (AVX-512: the matmul kernel ~0-40 us of ~650)
    assert len(_matmul_asts(512, 512, 512)) == 1 and len(_matmul_asts(512, 512, 528)) == 2
  with _host(32, 16), Context(MATMUL_PACK=1):
    # AVX2's tile is one cache line wide: read in place, each k step reads one line of another row; packed from half of
    # MATMUL_PACK_BYTES in a big matmul (UNROLL_WORK multiply-adds: matmul 512, its kernel 2.9 -> 2.0 ms)
    assert len(_matmul_asts(512, 512, 512)) == 2 and len(_matmul_asts(512, 256, 512)) == 1 and len(_matmul_asts(256, 512, 512)) == 1
  with Context(MATMUL_PACK=1):
    # 1000 columns padded to 64-wide panels (at most a quarter more), not 8-wide ones (12.8 -> 7.4 ms)
    assert [a.arg.split("_")[0] for a in _matmul_asts(1024, 1024, 1000)] == ["E", "r", "E"]
    # no 4-wide vector divides 1002 columns: read in place the kernel is scalar; packed into panels padded to 1024 (the
    # pack, the matmul, and the 1002 columns kept copied out where the result is realized on its own)
    assert [a.arg.split("_")[0] for a in _matmul_asts(1024, 1024, 1002)] == ["E", "r", "E"]
    # (4 columns are one 4-wide vector, read in place: attention's narrow heads)
    assert len(_matmul_asts(1024, 1024, 4)) == 1

@pytest.mark.parametrize("regs, want", [
  # AVX-512: 8 rows x 2 vectors (16 accumulators, as 4x4, with half the vectors of B per k step), stripes of B outermost
  ((64, 32), [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.UPCAST, 1, 2), Opt(OptOps.UPCAST, 0, 8), Opt(OptOps.SWAP, 0, 1)]),
  ((32, 16), [Opt(OptOps.UPCAST, 1, 16), Opt(OptOps.PADTO, 0, 6), Opt(OptOps.UPCAST, 0, 6), Opt(OptOps.SWAP, 0, 1)])])   # AVX2: 6x1 on 516 rows
def test_streamed_operand_runs_in_stripes(regs, want):
  # B of 1 MB read in place (matmul 512) does not stay in one core's L2 beside the rows: each stripe of it stays while
  # every row passes, and the tile takes more rows and fewer of B's vectors; below STREAMED the rows stay outermost
  with _host(*regs) as ren, Context(MATMUL_PACK=1, MATMUL_PACK_BYTES=4 << 20):   # (read in place, not packed)
    opts = hand_coded_opts(_kernel(_matmul_asts(512, 512, 512)[-1], ren), ren)
    small = hand_coded_opts(_kernel(_matmul_asts(512, 256, 512)[-1], ren), ren)
  assert opts[:len(want)] == want
  assert not any(o.op is OptOps.SWAP for o in small), small

@pytest.mark.parametrize("regs, rows, want", [
  ((32, 16), 512, (6, 1)),    # AVX2: 4x1 divides 512 (8 accumulator registers); 6x1 on 516 rows holds 12
  ((32, 16), 522, (6, 1)),    # 6 divides 522: no padding needed
  ((64, 32), 512, (8, 2)),    # AVX-512: 8x2 divides 512, 16 accumulator registers: enough, no padding
  ((32, 16), 40, (4, 1))])    # 40 rows: the 2 padded rows are more than 1/32 of them
def test_padded_register_tile(regs, rows, want):
  assert register_tile(_renderer(*regs), rows, 32, 64, streamed=True, pad=True) == want
  assert register_tile(_renderer(*regs), rows, 32, 64, streamed=True) == (want if rows % want[0] == 0 else (4, 1))

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("mkn", [(512, 512, 512), (1024, 256, 512), (514, 512, 528), (1000, 256, 528)])
def test_padded_tile_matmul_matches_numpy(device, mkn):
  # AVX2's registers on whatever host runs this: the rows padded to a multiple of 6, the padded rows' loads clamped to the
  # last real row and their stores dropped; with a bias and relu after (an epilogue read per row), packed or not
  m, k, n = mkn
  rng = np.random.default_rng(m + k + n)
  a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n), (n,)))
  method_cache.clear()
  with _host(32, 16) as ren, Context(MATMUL_PACK=1):
    opts = hand_coded_opts(_kernel(_matmul_asts(m, k, n, _dev(device))[-1], ren), ren)
    assert Opt(OptOps.PADTO, 0, 6) in opts, opts
    got = ((Tensor(a, device=device) @ Tensor(b, device=device) + Tensor(c, device=device)).relu()).numpy()
  method_cache.clear()
  np.testing.assert_allclose(got, np.maximum(a.astype(np.float64) @ b + c, 0), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("mkn", [(512, 512, 512), (40, 512, 512), (518, 512, 512), (30, 1024, 256)])
def test_streamed_matmul_matches_numpy(device, mkn):
  m, k, n = mkn
  rng = np.random.default_rng(m + k + n)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  method_cache.clear()
  with Context(MATMUL_PACK=1, MATMUL_PACK_BYTES=4 << 20):   # (read in place, whatever the host's tile)
    got = (Tensor(a, device=_dev(device)) @ Tensor(b, device=device)).numpy()
  np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)

def _dev(name):
  try: Device[name]
  except Exception as e: pytest.skip(f"{name} unavailable: {e}")
  return name

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("shape", [(16, 1, 96), (17, 13, 48), (31, 97, 96), (64, 64, 160), (2, 19, 23, 80), (1, 16, 5, 96), (19, 7, 40), (23, 11, 36)])
def test_packed_matmul_matches_numpy(device, shape):
  *batch, m, k, n = shape
  rng = np.random.default_rng(sum(shape))
  a, b = rng.standard_normal((*batch, m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  method_cache.clear()
  with Context(MATMUL_PACK=1, MATMUL_PACK_BYTES=0):   # pack even these small operands
    assert len((Tensor.empty(*batch, m, k, device=_dev(device)) @ Tensor.empty(k, n, device=device)).schedule()) == 2
    got = (Tensor(a, device=_dev(device)) @ Tensor(b, device=device)).numpy()
    grad_in = Tensor(a, device=device, requires_grad=True)
    (grad_in @ Tensor(b, device=device)).sum().backward()
  np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
  assert grad_in.grad is not None
  np.testing.assert_allclose(grad_in.grad.numpy(), np.broadcast_to(b.sum(1), a.shape), rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 13, 5), (97, 31, 33), (96, 16, 96), (100, 64, 36)])
def test_tiled_matmul_matches_numpy(device, mkn):
  m, k, n = mkn
  rng = np.random.default_rng(m * k * n)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  method_cache.clear()
  got = (Tensor(a, device=_dev(device)) @ Tensor(b, device=device)).numpy()
  np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)

@pytest.mark.parametrize("regs, cols", [((32, 16), 208), ((64, 32), 224)])
def test_transposed_operand_is_packed_whatever_its_size(regs, cols):
  # x @ W.T (nn.Linear, attention's q @ k.T): the right operand's rows run along k, so read in place no axis of it is
  # contiguous in n; it is packed (n padded up to the panel width, the result realized and cut) even when small: 197 keys
  # in 13 16-wide panels (AVX2: one vector of the tile) or 7 32-wide ones (AVX-512: 256 bytes would add 30% more columns)
  with _host(*regs), Context(MATMUL_PACK=1):
    lin = (Tensor.empty(197, 192) @ Tensor.empty(768, 192).T).schedule()
    att = (Tensor.empty(3, 197, 64) @ Tensor.empty(3, 197, 64).transpose(-1, -2)).schedule()
    plain = (Tensor.empty(197, 192) @ Tensor.empty(192, 768)).schedule()
  assert len(lin) == 2, "the pack, the matmul"
  assert len(att) == 3 and att[1].bufs[0].arg == 3 * 197 * cols, "the pack, the matmul over the padded panels, the cut"
  assert len(plain) == 1, "an operand contiguous in n below MATMUL_PACK_BYTES is read in place"

@pytest.mark.parametrize("regs", [(32, 16), (64, 32)])
def test_matmul_with_a_bias_is_panel_blocked(regs):
  # a bias added to the product is read once per output, not along the reduce: it does not make the packed operand look
  # non-contiguous (ViT's MLPs and projections ran rows-outer, re-reading every panel of the weight for each row tile)
  with _host(*regs) as ren, Context(MATMUL_PACK=1):
    ast = (Tensor.empty(197, 192) @ Tensor.empty(768, 192).T + Tensor.empty(768)).schedule()[-1].ast
    opts = hand_coded_opts(_kernel(ast, ren), ren)
  assert Opt(OptOps.SWAP, 0, 1) in opts, opts

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("mkn", [(197, 192, 768), (33, 64, 100), (16, 7, 200), (64, 48, 320)])
def test_packed_matmul_with_a_bias_matches_numpy(device, mkn):
  m, k, n = mkn
  rng = np.random.default_rng(m + k + n)
  x, w, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32), rng.standard_normal(n).astype(np.float32)
  method_cache.clear()
  with Context(MATMUL_PACK=1):
    got = (Tensor(x, device=_dev(device)) @ Tensor(w, device=device).T + Tensor(b, device=device)).numpy()
  np.testing.assert_allclose(got, x.astype(np.float64) @ w.T.astype(np.float64) + b, rtol=1e-4, atol=1e-4)

def test_prime_block_axis_is_padded_and_tiled():
  # 197 rows (ViT's tokens): no tile height divides them; the rows are padded to 200 and register-blocked, not run one by one
  ren = Device["CPU"].renderer
  with Context(MATMUL_PACK=1):
    ast = (Tensor.empty(197, 192) @ Tensor.empty(768, 192).T).schedule()[-1].ast
  opts = hand_coded_opts(_kernel(ast, ren), ren)
  assert Opt(OptOps.PADTO, 0, 8) in opts, opts
  assert any(o.op is OptOps.UPCAST and o.axis == 0 and o.arg > 1 for o in opts), opts

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("shape", [(197, 64, 197), (17, 13, 67), (3, 5, 67), (1, 7, 1), (2, 29, 16, 97), (197, 19, 3), (16, 1, 64)])
def test_transposed_matmul_matches_numpy(device, shape):
  *batch, m, k, n = shape
  rng = np.random.default_rng(sum(shape))
  a, w = rng.standard_normal((*batch, m, k)).astype(np.float32), rng.standard_normal((*batch, n, k)).astype(np.float32)
  method_cache.clear()
  with Context(MATMUL_PACK=1):
    got = (Tensor(a, device=_dev(device)) @ Tensor(w, device=device).transpose(-1, -2)).numpy()
    wt = Tensor(w, device=device, requires_grad=True)
    (Tensor(a, device=device) @ wt.transpose(-1, -2)).relu().sum().backward()
  want = a @ np.swapaxes(w, -1, -2)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
  assert wt.grad is not None
  np.testing.assert_allclose(wt.grad.numpy(), np.swapaxes((want > 0).astype(np.float32), -1, -2) @ a, rtol=1e-4, atol=1e-4)

def test_short_block_axis_is_upcast_whole():
  # a block axis of 5 or 7 (kernel taps: the weight grad of a 1->32 5x5 conv, vectorized over cout) has no tile height
  # dividing it: it is upcast whole, so every vector of dy loaded serves 5 taps (else the 9 MB of dy streamed once per tap)
  ren = Device["CPU"].renderer
  x, w = Tensor.empty(16, 1, 28, 28, requires_grad=True), Tensor.empty(32, 1, 5, 5, requires_grad=True)
  y = x.conv2d(w)
  asts = [si.ast for si in y.gradient(w, gradient=Tensor.empty(*y.shape))[0].schedule()]
  red = [a for a in asts if "REDUCE" in str([u.op for u in a.toposort()])]
  assert 1 <= len(red) <= 2   # (the batch chunks' partial sums, then their sum)
  opts = hand_coded_opts(_kernel(red[0], ren), ren)
  assert any(o.op is OptOps.UPCAST and o.arg == 5 for o in opts), opts

def _layernorm_over_tokens(x, cls):
  # ViT's first LayerNorm's statistics: the class token concatenated before the patch tokens, which are a conv's output
  # (channel-major: read with stride 196 along the embedding axis the mean reduces)
  t = cls.cat(x.flatten(2).transpose(1, 2), dim=1)
  return (t - t.mean(-1, keepdim=True)).square().mean(-1)

def test_strided_reduce_is_not_unrolled_wide():
  # its loads do not move with the reduce contiguously, so no vector accumulator can hold it: a 64-lane unroll made
  # 70-90 KB of scalar IR per kernel (~0.4 s of LLVM each) for a loop no faster than a 4-lane one
  ren = Device["CPU"].renderer
  asts = [si.ast for si in _layernorm_over_tokens(Tensor.empty(1, 192, 14, 14), Tensor.empty(1, 1, 192)).schedule()]
  unrolls = [o.arg for a in asts for o in hand_coded_opts(_kernel(a, ren), ren) if o.op is OptOps.UNROLL]
  assert unrolls and max(unrolls) <= 4, unrolls
  # a contiguous reduce still unrolls into vector accumulators
  opts = hand_coded_opts(_kernel(Tensor.empty(197, 192).sum(-1).schedule()[-1].ast, ren), ren)
  assert any(o.op is OptOps.UNROLL and o.arg >= 16 for o in opts), opts

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
def test_strided_reduce_matches_numpy(device):
  rng = np.random.default_rng(3)
  x, cls = rng.standard_normal((1, 192, 14, 14)).astype(np.float32), rng.standard_normal((1, 1, 192)).astype(np.float32)
  method_cache.clear()
  got = _layernorm_over_tokens(Tensor(x, device=_dev(device)), Tensor(cls, device=device)).numpy()
  t = np.concatenate([cls, x.reshape(1, 192, 196).transpose(0, 2, 1)], axis=1).astype(np.float64)
  np.testing.assert_allclose(got, ((t - t.mean(-1, keepdims=True))**2).mean(-1), rtol=1e-5, atol=1e-6)

def test_matvec_along_rows_keeps_vector_accumulators():
  # a classifier head or GPT-2's logits (1 x 192 @ 1000 x 192.T, 1 x 768 @ 50257 x 768.T): no vector axis, and the only
  # block axis is W's rows, whose upcast reuses no load of W. Upcast, the vectorize pass packed those rows' lanes, each
  # gathered from its own row (a scalar loop: the 154 MB head at 5 GB/s); instead each row runs along W's memory in
  # vector accumulators (no upcast, a reduce unrolled by vectors), as a row sum does
  ren = Device["CPU"].renderer
  for n, k in ((1000, 192), (50257, 768)):
    ast = (Tensor.empty(1, k) @ Tensor.empty(n, k).T).schedule()[-1].ast
    opts = hand_coded_opts(_kernel(ast, ren), ren)
    assert not any(o.op in (OptOps.UPCAST, OptOps.PADTO) for o in opts), opts
    assert min(o.arg for o in opts if o.op is OptOps.UNROLL) >= ren.vector_bytes // 4, opts
  # a reduce shorter than a vector (a 10-class head's gradient, 128 x 10): the rows stay upcast
  ast = (Tensor.empty(1, 10) @ Tensor.empty(128, 10).T).schedule()[-1].ast
  assert Opt(OptOps.UPCAST, 0, 4) in hand_coded_opts(_kernel(ast, ren), ren)

def test_matvec_along_columns_reads_wide_row_strips():
  # x @ W for one row of x (W row-major, k x n), or a column sum: each step of the reduce reads MATVEC_BYTES of a row of W
  # (several vectors of columns), not one vector 12 KB from the last one, which the prefetchers did not follow (GPT-2's
  # 768 x 3072 at 9-20 GB/s). A short reduce (a few rows) keeps one vector
  from tinygrad.codegen.opt import MATVEC_BYTES
  ren = Device["CPU"].renderer
  lanes = ren.vector_bytes // 4
  for t in (Tensor.empty(1, 768) @ Tensor.empty(768, 3072), Tensor.empty(512, 640).sum(0)):
    opts = hand_coded_opts(_kernel(t.schedule()[-1].ast, ren), ren)
    assert opts[:2] == [Opt(OptOps.UPCAST, 0, lanes), Opt(OptOps.UPCAST, 0, MATVEC_BYTES // ren.vector_bytes)], opts
  opts = hand_coded_opts(_kernel(Tensor.empty(4, 640).sum(0).schedule()[-1].ast, ren), ren)
  assert [o for o in opts if o.op is OptOps.UPCAST] == [Opt(OptOps.UPCAST, 0, lanes)], opts

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("k, n, along_rows", [(768, 3072, False), (64, 128, False), (100, 80, False), (65, 64, False), (300, 1088, False),
                                              (192, 1000, True), (64, 12, True), (256, 20, True), (768, 50, True), (80, 33, True)])
def test_matvec_matches_numpy(device, k, n, along_rows):
  # one row of x against W (k x n), or against W.T with W (n x k) as a classifier head's; and W's column sums
  rng = np.random.default_rng(k + n)
  x, w = rng.standard_normal((1, k)).astype(np.float32), rng.standard_normal((n, k) if along_rows else (k, n)).astype(np.float32)
  method_cache.clear()
  tw = Tensor(w, device=device)
  got = (Tensor(x, device=_dev(device)) @ (tw.T if along_rows else tw)).numpy()
  np.testing.assert_allclose(got, x.astype(np.float64) @ (w.T if along_rows else w).astype(np.float64), rtol=1e-5, atol=1e-4)
  np.testing.assert_allclose(tw.sum(0).numpy(), w.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)

@pytest.mark.parametrize("m, rows", [(5, 5), (8, 8), (12, 6), (7, 7)])
def test_few_rows_linear_blocks_the_rows(m, rows):
  # x @ W.T over a few rows (an nn.Linear in a short prompt's prefill): no vector axis, both operands run along the reduce.
  # The rows of x are the block axis (W does not move with them), so every vector of W loaded serves all of them, and the
  # reduce keeps a vector accumulator per row; blocked along W's rows instead, W was read once per row of x (GPT-2's
  # 5-token prefill at 7 GFLOPS, 5x the time of reading its weights once)
  ren = Device["CPU"].renderer
  ast = (Tensor.empty(m, 768) @ Tensor.empty(2304, 768).T).schedule()[-1].ast
  opts = hand_coded_opts(_kernel(ast, ren), ren)
  # one vector a step per row: wider unrolls of several rows took LLVM 4-5x as long (GPT-2 tiny's 5 x 64 @ 256 x 64.T)
  assert Opt(OptOps.UPCAST, 0, rows) in opts and [o.arg for o in opts if o.op is OptOps.UNROLL] == [ren.vector_bytes // 4], opts

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("shape", [(5, 768, 300), (3, 100, 7), (7, 33, 129), (2, 1, 5), (12, 64, 40), (2, 5, 9, 72)])
def test_few_rows_linear_matches_numpy(device, shape):
  *batch, m, k, n = shape
  rng = np.random.default_rng(sum(shape) + 1)
  x, w = rng.standard_normal((*batch, m, k)).astype(np.float32), rng.standard_normal((n, k)).astype(np.float32)
  method_cache.clear()
  got = (Tensor(x, device=_dev(device)) @ Tensor(w, device=device).T).numpy()
  np.testing.assert_allclose(got, x.astype(np.float64) @ w.T.astype(np.float64), rtol=1e-4, atol=1e-4)

def _mlp_out(h, w, x, cls, pos):
  # ViT's first MLP down-projection plus its residual stream, which is never realized: the class token concatenated before
  # the channel-major conv output (read with stride 196 along the embedding axis, behind the cat's gates), plus positions
  return cls.cat(x.flatten(2).transpose(1, 2), dim=1) + pos + h @ w.T

def _reduce_kernel(asts, ren):
  return _kernel([a for a in asts if any(u.op.name == "REDUCE" for u in a.toposort())][-1], ren)

@pytest.mark.parametrize("regs, lanes", [((32, 16), 16), ((64, 32), 64)])
def test_matmul_with_a_gathered_epilogue_is_still_tiled(regs, lanes):
  # the epilogue's strided, gated loads run once per output: the kernel is vectorized and register-blocked like the same
  # matmul adding a plain buffer (it was left scalar and unblocked: 32 ms of ViT-Ti's 62, against 0.9 ms for each other
  # layer's), with a tile of at most 128 outputs, as its gathered lanes are scalar code (4x4 vectors: 1 s of LLVM): one
  # vector wide where the panel is one vector (AVX2), 2 rows of the 4-vector panel on AVX-512
  h, w = Tensor.empty(1, 197, 768), Tensor.empty(192, 768)
  with _host(*regs) as ren, Context(MATMUL_PACK=1):
    fused = _reduce_kernel([si.ast for si in _mlp_out(h, w, Tensor.empty(1, 192, 14, 14), Tensor.empty(1, 1, 192), Tensor.empty(1, 197, 192)).schedule()], ren)
    plain = _reduce_kernel([si.ast for si in (Tensor.empty(1, 197, 192) + h @ w.T).schedule()], ren)
    opts, want = hand_coded_opts(fused, ren), hand_coded_opts(plain, ren)
  assert opts[:2] == want[:2] == [Opt(OptOps.UPCAST, 1, lanes), Opt(OptOps.PADTO, 0, 8)], (opts, want)
  def tile(o): return np.prod([x.arg for x in o if x.op is OptOps.UPCAST])
  assert any(o.op is OptOps.UPCAST and o.axis == 0 and o.arg >= 2 for o in opts) and 64 <= tile(opts) <= 128, opts
  assert not any(o.op is OptOps.UPCAST and o.axis == 1 for o in opts[1:]), "no more vectors than the panel's"
  assert tile(want) >= tile(opts), "the plain matmul's tile is at least as big"

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("shape", [(192, 14, 768), (32, 4, 48), (16, 3, 20)])
def test_matmul_with_a_gathered_epilogue_matches_numpy(device, shape):
  d, side, f = shape
  n = side * side + 1
  rng = np.random.default_rng(d + f)
  h, w, x = rng.standard_normal((1, n, f)).astype(np.float32), rng.standard_normal((d, f)).astype(np.float32), rng.standard_normal((1, d, side, side)).astype(np.float32)
  cls, pos = rng.standard_normal((1, 1, d)).astype(np.float32), rng.standard_normal((1, n, d)).astype(np.float32)
  method_cache.clear()
  with Context(MATMUL_PACK=1):
    got = _mlp_out(*(Tensor(v, device=_dev(device)) for v in (h, w, x, cls, pos))).numpy()
  want = np.concatenate([cls, x.reshape(1, d, n - 1).transpose(0, 2, 1)], axis=1) + pos + h.astype(np.float64) @ w.T.astype(np.float64)
  np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

def test_prime_reduce_is_peeled_into_vector_accumulators():
  # attention's softmax over 197 tokens: no unroll divides 197, so the reduce ran one scalar step at a time (0.4 ms per
  # ViT-Ti softmax kernel); its last 5 steps are peeled off and the first 192 kept in 16-wide vector accumulators
  from tinygrad.codegen import get_program
  ren = Device["CPU"].renderer
  x = Tensor.empty(3, 197, 197)
  # (softmax is one kernel per row now, its max and its sum each peeled along their own range)
  for t, want in [(x.max(-1), 1), (x.exp().sum(-1), 1), (x.softmax(-1), 2)]:
    red = [si.ast for si in t.schedule() if any(u.op.name == "REDUCE" for u in si.ast.toposort())]
    assert len(red) == 1
    assert hand_coded_opts(_kernel(red[0], ren), ren) == [o for i in range(want) for o in (Opt(OptOps.PEEL, i, 64), Opt(OptOps.UNROLL, i, 64))]
    assert "<16 x float>" in get_program(red[0], ren, compile=False).src

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("n", [197, 131, 67])
def test_peeled_softmax_matches_numpy(device, n):
  x = np.random.default_rng(n).standard_normal((3, 5, n)).astype(np.float32) * 4
  x[0, 0, n-1] = 60.0   # the row's max in the peeled tail
  method_cache.clear()
  t = Tensor(x, device=_dev(device))
  e = np.exp(x.astype(np.float64) - x.max(-1, keepdims=True))
  np.testing.assert_allclose(t.softmax(-1).numpy(), e / e.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(t.max(-1).numpy(), x.max(-1))
  np.testing.assert_allclose(t.sum(-1).numpy(), x.astype(np.float64).sum(-1), rtol=1e-5, atol=1e-4)

@pytest.mark.parametrize("regs", [(32, 16), (64, 32)])
@pytest.mark.parametrize("m, k, n", [(197, 192, 768), (1024, 1024, 1024), (5, 64, 48)])
def test_optimize_applies_each_chosen_action_once(regs, m, k, n, monkeypatch):
  # optimize takes the kernel the heuristics built while choosing and applies only the actions they did not apply (the
  # list applied again from the start cost ViT-Ti's matmuls 25-95 ms each: their split of a packed axis, simplified on the
  # way, missed apply_opt's cache); forced actions (OPTS) are applied once too
  from tinygrad.codegen import opt as O
  calls = []
  real = O.apply_opt
  monkeypatch.setattr(O, "apply_opt", lambda s, o, ren=None: calls.append(o) or real(s, o, ren))
  with _host(*regs) as ren, Context(MATMUL_PACK=1):
    kern = _reduce_kernel(_matmul_asts(m, k, n), ren)
    opts = hand_coded_opts(kern, ren)
    assert len(opts) >= 2
    calls.clear()
    O.optimize(kern, ren)
    assert calls == opts
    calls.clear()
    with Context(OPTS=",".join(f"{o.op.name}:{o.axis}:{o.arg}" for o in opts)):
      O.optimize(kern, ren)
    assert calls == opts

@pytest.mark.parametrize("regs, n, unroll", [((32, 16), 256, [Opt(OptOps.UNROLL, 0, 4)]), ((64, 32), 256, []),
                                             ((64, 32), 1024, [Opt(OptOps.UNROLL, 0, 4)])])
def test_only_small_tiles_or_long_kernels_unroll_their_step(regs, n, unroll):
  # AVX2's 4x16 matmul tile (64 lanes) unrolls its k step by 4; AVX-512's 4x64 one (256 lanes) is long enough as it is
  # (unrolled by 2 it ran no faster, with twice the IR for LLVM: 15% of ViT-Ti's cold-call CPU), unless the kernel has
  # UNROLL_WORK multiply-adds or more (1024^3): there 4 steps a loop run ~10% faster, worth the longer compile
  from tinygrad.codegen.opt import UNROLL_WORK
  assert 256 ** 3 < UNROLL_WORK <= 1024 ** 3
  with _host(*regs) as ren, Context(MATMUL_PACK=1):
    opts = hand_coded_opts(_reduce_kernel(_matmul_asts(n, n, n), ren), ren)
    assert [o for o in opts if o.op is OptOps.UNROLL] == unroll
    a, b = np.random.default_rng(3).standard_normal((2, 67, 45)).astype(np.float32)
    np.testing.assert_allclose((Tensor(a) @ Tensor(b).T).numpy(), a @ b.T, rtol=1e-4, atol=1e-4)

def _elementwise_kernel(t, ren):
  asts = [si.ast for si in t.schedule()]
  assert len(asts) == 1
  return _kernel(asts[0], ren)

@pytest.mark.parametrize("regs", [(32, 16), (64, 32)])
def test_transpose_upcasts_its_store_axis(regs):
  # a channels-last copy (n, c, h, w) -> (n, h, w, c): no axis runs along memory in both the store and the load, so the
  # store's axis (c) is upcast by the vector width, its loads gathered lane by lane (the CNN's conv weight-grad operands:
  # 0.59 -> 0.35 ms one thread), and from TRANSPOSE_BYTES on the axis the loads run along (w) too, a tile: each line read
  # serves several outputs at once; not under a gate along it (a cat of two inputs): gathered gated loads only lengthen the IR
  with _host(*regs) as ren:
    a, b = Tensor.empty(8, 32, 24, 24), Tensor.empty(8, 32, 24, 24)
    kern = _elementwise_kernel((a > 0).where(b, 0).permute(0, 2, 3, 1).contiguous(), ren)
    assert hand_coded_opts(kern, ren) == [Opt(OptOps.UPCAST, 3, ren.vector_bytes // 4)]   # (576 KB: below TRANSPOSE_BYTES)
    a, b = Tensor.empty(16, 32, 24, 24), Tensor.empty(16, 32, 24, 24)
    kern = _elementwise_kernel((a > 0).where(b, 0).permute(0, 2, 3, 1).contiguous(), ren)
    assert hand_coded_opts(kern, ren) == [Opt(OptOps.UPCAST, 3, ren.vector_bytes // 4), Opt(OptOps.UPCAST, 2, 4)]
    cat = _elementwise_kernel(Tensor.empty(8, 16, 24, 24).cat(Tensor.empty(8, 16, 24, 24), dim=1).permute(0, 2, 3, 1).contiguous(), ren)
    assert hand_coded_opts(cat, ren) == []

@pytest.mark.parametrize("device", ["CPU", "CPU:CLANG"])
@pytest.mark.parametrize("shape", [(3, 16, 5, 7), (2, 48, 3, 3), (1, 32, 1, 9), (4, 24, 6, 5)])
def test_transpose_matches_numpy(device, shape):
  rng = np.random.default_rng(sum(shape))
  a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(shape).astype(np.float32)
  got = (Tensor(a, device=_dev(device)) > 0).where(Tensor(b, device=device), 0).permute(0, 2, 3, 1).contiguous().numpy()
  np.testing.assert_array_equal(got, np.where(a > 0, b, 0).transpose(0, 2, 3, 1))
  x = Tensor(a, device=device, requires_grad=True)
  (x.permute(0, 2, 3, 1) * Tensor(b.transpose(0, 2, 3, 1).copy(), device=device)).sum().backward()
  assert x.grad is not None
  np.testing.assert_allclose(x.grad.numpy(), b, rtol=1e-6)
