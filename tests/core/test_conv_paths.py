"""Convolution paths against torch, forward and both gradients (the convs conv_backward builds), on odd shapes: stride,
padding, dilation, groups, 1x1, 7x7, batch 1 and 3, in the flattened stride-1 form and the per-row form (CONV_FLAT=0);
and the kernels they schedule: affine loads (no div/mod left in an operand's index), reduces over (cin, kh, kw)."""
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.uop.upat import graph_rewrite
from tinygrad.uop.symbolic import sym
torch = pytest.importorskip("torch", reason="the torch reference: pip install torch")

# batch, cin, cout, (h, w), kernel, stride, padding, dilation, groups
CASES = [(1, 3, 4, (9, 10), (3, 3), 1, 1, 1, 1), (3, 4, 6, (10, 7), (3, 3), 2, 1, 1, 2), (2, 4, 4, (11, 11), (3, 3), 2, 2, 2, 4),
         (1, 2, 3, (8, 8), (1, 1), 1, 0, 1, 1), (3, 4, 6, (9, 9), (1, 1), 2, 0, 1, 1), (2, 3, 5, (15, 13), (7, 7), 2, 3, 1, 1),
         (1, 4, 4, (9, 9), (3, 3), 3, 0, 2, 1), (3, 6, 4, (7, 8), (2, 3), 1, (1, 0), 1, 2), (1, 3, 8, (12, 12), (4, 4), 4, 0, 1, 1),
         (3, 8, 8, (6, 6), (3, 3), 1, 1, 1, 8), (1, 5, 7, (6, 9), (5, 5), 1, 2, 1, 1), (3, 2, 4, (10, 10), (3, 3), 1, 2, 2, 1),
         (2, 3, 4, (9, 11), (3, 3), 1, 0, 1, 1)]

def _check(bs, cin, cout, hw, k, s, p, d, g):
  rng = np.random.default_rng(0)
  xn = rng.standard_normal((bs, cin, *hw)).astype(np.float32)
  wn = rng.standard_normal((cout, cin // g, *k)).astype(np.float32)
  bn = rng.standard_normal(cout).astype(np.float32)
  xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (xn, wn, bn))
  yt = torch.nn.functional.conv2d(xt, wt, bt, stride=s, padding=p, dilation=d, groups=g)
  gn = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
  (yt * torch.tensor(gn)).sum().backward()
  x, w, b = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True), Tensor(bn, requires_grad=True)
  y = x.conv2d(w, b, stride=s, padding=p, dilation=d, groups=g)
  (y * Tensor(gn)).sum().backward()
  for name, ours, ref in (("output", y, yt), ("input grad", x.grad, xt.grad), ("weight grad", w.grad, wt.grad), ("bias grad", b.grad, bt.grad)):
    np.testing.assert_allclose(ours.numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4, err_msg=f"{name} of conv {bs, cin, cout, hw, k, s, p, d, g}")

@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("flat", [1, 0])
def test_conv_and_grads_match_torch(case, flat):
  with Context(CONV_FLAT=flat): _check(*case)

def test_strided_conv_without_space_to_depth():
  # CONV_S2D=0: the strided convs read their input with stride-s loads, as before the phase form
  with Context(CONV_S2D=0):
    for case in (c for c in CASES if c[5] != 1): _check(*case)

def test_strided_conv_is_a_vectorized_stride1_conv():
  # a stride-2 conv runs over the input's phases as a stride-1 conv: its reduce kernel's pixel axis is upcast by the vector
  # width (its loads run along memory) where the strided loads left the heuristics a 2-wide upcast of nothing contiguous
  from tinygrad.codegen.opt import hand_coded_opts, OptOps
  x, w = Tensor.empty(1, 16, 28, 28), Tensor.empty(32, 16, 3, 3)
  ks = [k for k in _kernels(x.conv2d(w, stride=2, padding=1)) if any(u.op is Ops.REDUCE for u in k.toposort())]
  assert len(ks) == 1
  opts = hand_coded_opts(ks[0], Device[Device.DEFAULT].renderer)
  assert any(o.op is OptOps.UPCAST and o.arg >= 4 for o in opts), opts

@pytest.mark.parametrize("kw", [dict(padding=1), dict(stride=2), dict(padding=(1, 0), stride=(1, 2)), dict(groups=2, padding=1)], ids=str)
def test_conv_of_an_empty_batch_has_a_zero_weight_grad(kw):
  # as torch: (0, cout, ...) out and zeros for the weight's and the bias's gradients (the padded and the strided forms
  # and conv_backward crashed on the empty batch: a division by bs*cout, a permute of the phases' reshape)
  x, w, b = Tensor.randn(0, 4, 7, 6, requires_grad=True), Tensor.randn(6, 4 // kw.get("groups", 1), 3, 3, requires_grad=True), Tensor.randn(6, requires_grad=True)
  yt = torch.nn.functional.conv2d(torch.zeros(0, 4, 7, 6), torch.tensor(w.numpy()), **kw)
  y = x.conv2d(w, b, **kw)
  assert y.shape == tuple(yt.shape)
  y.sum().backward()
  np.testing.assert_equal(w.grad.numpy(), np.zeros(w.shape, np.float32))
  np.testing.assert_equal(b.grad.numpy(), np.zeros(6, np.float32))
  xt, wt = Tensor.randn(0, 4, 5, 5), Tensor.randn(4, 3, 3, 3, requires_grad=True)
  xt.conv_transpose2d(wt, stride=2, padding=1).sum().backward()
  np.testing.assert_equal(wt.grad.numpy(), np.zeros(wt.shape, np.float32))

@pytest.mark.parametrize("pad_copy", [0, 10**6])
def test_conv_with_and_without_padded_copy(pad_copy):
  # the padded input as a copy (border gates gone) or read in place (border gates in the conv's loads)
  with Context(CONV_PAD_COPY=pad_copy):
    for case in CASES[:3]: _check(*case)

def test_conv_grad_of_grad():
  # conv_backward's convs are tagged convs too: a second derivative goes through them
  rng = np.random.default_rng(1)
  xn, wn = rng.standard_normal((2, 3, 7, 7)).astype(np.float32), rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
  x, w = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
  gx, = (x.conv2d(w, padding=1) ** 2).sum().gradient(x)
  ggw, = (gx * gx).sum().gradient(w)
  xt, wt = torch.tensor(xn, requires_grad=True), torch.tensor(wn, requires_grad=True)
  gxt, = torch.autograd.grad((torch.nn.functional.conv2d(xt, wt, padding=1) ** 2).sum(), xt, create_graph=True)
  ggwt, = torch.autograd.grad((gxt * gxt).sum(), wt)
  np.testing.assert_allclose(ggw.numpy(), ggwt.numpy(), rtol=1e-3, atol=1e-3)

def _kernels(t: Tensor) -> list:
  return [graph_rewrite(ei.ast, sym) for ei in t.schedule() if ei.ast.op is Ops.SINK]

def _reduce_kernel_loads(t: Tensor) -> list[tuple[int, object]]:
  # (reduce size, index) of every load of every reduce kernel
  out = []
  for k in _kernels(t):
    reds = [u for u in k.toposort() if u.op is Ops.REDUCE]
    if not reds: continue
    size = int(np.prod([r.src[0].arg for r in reds[0].src[1:]]))
    out += [(size, u.src[0].src[1]) for u in k.toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX]
  return out

@pytest.mark.parametrize("which", ["forward", "input grad", "weight grad"])
def test_conv_kernels_index_affinely(which):
  # a 3x3 conv and its gradients read their operands through affine indices (the heuristics vectorize and tile those):
  # the window view's div/mod fold away, and the input grad is a 3x3 conv again, not a 4x4 reduce over the pooled view
  x, w = Tensor.empty(1, 16, 12, 12, requires_grad=True), Tensor.empty(16, 16, 3, 3, requires_grad=True)
  y = x.conv2d(w, padding=1)
  t = y if which == "forward" else y.gradient(x if which == "input grad" else w, gradient=Tensor.empty(*y.shape))[0]
  loads = _reduce_kernel_loads(t)
  assert loads, f"no reduce kernel for the conv's {which}"
  for size, idx in loads:
    bad = [u.op for u in idx.toposort() if u.op in (Ops.IDIV, Ops.MOD)]
    assert not bad, f"{which}: a load indexes with {bad}: {idx.render()}"
  if which != "weight grad": assert {s for s, _ in loads} == {16 * 3 * 3}

@pytest.mark.parametrize("hw,k,pad", [((12, 12), (3, 3), 1), ((24, 24), (5, 5), 0), ((9, 11), (3, 3), 0)])
def test_flat_conv_kernels_index_affinely(hw, k, pad):
  # every load of the flattened form's kernels (its padded copy, the conv, the bias added to the valid columns) is affine:
  # the copy is padded by whole rows below the image, not by a tail past the flattened image (a div/mod per element)
  x, w, b = Tensor.empty(2, 4, *hw), Tensor.empty(16, 4, *k), Tensor.empty(16)
  for kern in _kernels(x.conv2d(w, b, padding=pad)):
    for u in kern.toposort():
      if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX:
        assert not [d for d in u.src[0].src[1].toposort() if d.op in (Ops.IDIV, Ops.MOD)], u.src[0].src[1].render()

def test_flat_conv_bias_grad_reads_the_valid_columns():
  # the bias is added after the flattened conv, to its valid columns: the bias gradient sums the output gradient over
  # (batch, oh, ow) with ungated affine loads. Added inside the flattened form it summed the padded flat gradient, a gate
  # and a mod per element, scalar (the MNIST CNN's first conv: 13 ms of a ~60 ms step)
  x, w, b = Tensor.empty(4, 8, 24, 24), Tensor.empty(8, 8, 5, 5), Tensor.empty(8, requires_grad=True)
  y = x.conv2d(w, b)
  g = Tensor.empty(*y.shape)
  for kern in _kernels(y.relu().gradient(b, gradient=g)[0]):
    if not any(u.op is Ops.REDUCE for u in kern.toposort()): continue   # (the forward's copy gates its zero rows)
    for u in kern.toposort():
      if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX:
        idx = u.src[0]
        assert len(idx.src) == 2 and not [d for d in idx.src[1].toposort() if d.op in (Ops.IDIV, Ops.MOD)], idx.render()

def test_conv_kernel_count():
  # a padded conv with bias and relu: the padded copy, the flattened conv, the bias and relu on its valid columns;
  # in the per-row form the padded copy and the conv with bias and relu fused
  x, w, b = Tensor.empty(1, 8, 14, 14), Tensor.empty(8, 8, 3, 3), Tensor.empty(8)
  assert len(_kernels(x.conv2d(w, b, padding=1).relu())) == 3
  with Context(CONV_FLAT=0): assert len(_kernels(x.conv2d(w, b, padding=1).relu())) == 2

def _reduce_counts(t: Tensor) -> list[int]:
  return [sum(1 for u in k.toposort() if u.op is Ops.REDUCE) for k in _kernels(t)]

def test_reduce_under_pad_is_its_own_kernel():
  # a reduce whose value is padded (the next conv's flattened padded copy of a conv's bn/relu output) runs on its own:
  # inlined, every padded lane ran it gated, with the pad's offset and the flattening's div/mod in every step (9 s a kernel)
  a = np.arange(24, dtype=np.float32).reshape(4, 6)
  t = Tensor(a).sum(1).relu().pad(((1, 2),)).reshape(7, 1).pad(((0, 0), (1, 0))).contiguous()
  assert sorted(_reduce_counts(t)) == [0, 1]
  np.testing.assert_equal(t.numpy(), np.pad(np.pad(a.sum(1), (1, 2)).reshape(7, 1), ((0, 0), (1, 0))))

def test_expanded_elementwise_producer_is_realized():
  # an elementwise chain broadcast into a reduce (dy of a conv's weight gradient, made by the bn/relu/pool backward) is
  # computed once into a buffer, not once per step of the reduce; a single op (a cast, a scale) stays fused
  rng = np.random.default_rng(0)
  an, bn, wn = (rng.standard_normal(s).astype(np.float32) for s in ((5, 8), (5, 8), (16, 8)))
  a, b, w = Tensor(an), Tensor(bn), Tensor(wn)
  t = ((a * b + 1).relu().reshape(5, 1, 8) * w.reshape(1, 16, 8)).sum(-1)
  assert sorted(_reduce_counts(t)) == [0, 1]
  np.testing.assert_allclose(t.numpy(), np.maximum(an * bn + 1, 0) @ wn.T, rtol=1e-5, atol=1e-5)
  assert len(_kernels(((a * 2).reshape(5, 1, 8) * w.reshape(1, 16, 8)).sum(-1))) == 1

def test_conv_bn_relu_pool_stack_trains_like_torch():
  # a training step's gradients through conv -> batchnorm (batch statistics) -> relu -> max-pool -> stride-2 conv -> conv:
  # the realize rules above split its kernels differently; the values must stay torch's
  rng = np.random.default_rng(2)
  xn = rng.standard_normal((3, 3, 13, 13)).astype(np.float32)
  w1, w2, w3 = (rng.standard_normal(s).astype(np.float32) * 0.3 for s in ((8, 3, 3, 3), (6, 8, 3, 3), (5, 6, 1, 1)))
  def run(T, conv, x, ws):
    y = conv(x, ws[0], padding=1)
    m = y.mean((0, 2, 3), keepdims=True) if T is torch else y.mean((0, 2, 3), keepdim=True)
    v = ((y - m) ** 2).mean((0, 2, 3), keepdims=True) if T is torch else ((y - m) ** 2).mean((0, 2, 3), keepdim=True)
    y = ((y - m) / (v + 1e-5).sqrt()).relu()
    y = torch.nn.functional.max_pool2d(y, 2) if T is torch else y.max_pool2d(2)
    y = conv(conv(y, ws[1], stride=2, padding=1).relu(), ws[2])
    return (y * y).sum()
  xt, *wt = (torch.tensor(a, requires_grad=True) for a in (xn, w1, w2, w3))
  run(torch, torch.nn.functional.conv2d, xt, wt).backward()
  x, *ws = (Tensor(a, requires_grad=True) for a in (xn, w1, w2, w3))
  run(Tensor, Tensor.conv2d, x, ws).backward()
  for ours, ref in zip([x, *ws], [xt, *wt]): np.testing.assert_allclose(ours.grad.numpy(), ref.grad.numpy(), rtol=1e-3, atol=1e-3)

@pytest.mark.parametrize("dw_vec", [1, 0])
def test_weight_grad_paths_match_torch(dw_vec):
  # CONV_DW_VEC=1: every weight grad takes the channels-innermost reduce (channels 1, 2, 3 too, depthwise, stride, dilation,
  # a batch split past _CHUNK); 0: every one the conv over the batch
  with Context(CONV_DW_VEC=dw_vec):
    for case in CASES + [(3, 1, 5, (45, 47), (3, 3), 1, 0, 1, 1), (1, 7, 3, (13, 11), (3, 2), (2, 1), 1, (1, 2), 1),
                         (2, 1, 16, (14, 13), (5, 7), 1, 0, 1, 1)]: _check(*case)

@pytest.mark.parametrize("cin,cout", [(32, 32), (1, 32), (32, 3)])
def test_weight_grad_is_vectorized_over_a_channel(cin, cout):
  # the weight grad's reduce kernel (over batch and output pixels) stores its widest channel axis innermost and upcasts it
  # by the vector width, with affine loads (the batch split past _CHUNK too: 1->32 at 24x24 x 128 is 73728 per output);
  # as a conv over the batch it was a scalar kernel over (cout, cin, kh, kw) reading dy and the input along the pixels
  from tinygrad.codegen.opt import hand_coded_opts, OptOps
  ren = Device[Device.DEFAULT].renderer
  if not ren.vector_bytes: pytest.skip("the device's renderer has no SIMD vectors")
  x, w = Tensor.empty(128, cin, 28, 28, requires_grad=True), Tensor.empty(cout, cin, 5, 5, requires_grad=True)
  y = x.conv2d(w)
  ks = [k for k in _kernels(y.gradient(w, gradient=Tensor.empty(*y.shape))[0]) if any(u.op is Ops.REDUCE for u in k.toposort())]
  # (the batch chunks' partial sums, then their sum: the first one is the reduce over pixels)
  assert 1 <= len(ks) <= 2, f"{len(ks)} reduce kernels"
  loads = [u.src[0].src[1] for u in ks[0].toposort() if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX]
  assert not [u for idx in loads for u in idx.toposort() if u.op in (Ops.IDIV, Ops.MOD)], [i.render() for i in loads]
  opts, vw = hand_coded_opts(ks[0], ren), ren.vector_bytes // 4
  assert any(o.op is OptOps.UPCAST and o.arg >= min(vw, max(cin, cout)) for o in opts), opts

@pytest.mark.parametrize("bs,c,hw,k", [(128, 32, 24, 5), (64, 64, 10, 3), (4, 32, 24, 5)])
def test_weight_grad_batch_chunks_fit_the_cache_budget(bs, c, hw, k):
  # the weight grad sums batch chunks of at most _DW_CHUNK_BYTES of input and dy into partials (a kernel whose outermost
  # axis is the chunk, so each chunk stays in cache across the output tiles), then sums the partials. One reduce over the
  # whole batch reread the MNIST CNN's conv2 input from L3 for every tile: 140 GFLOPS, against 298 chunked
  from tinygrad.mixin.nn import _DW_CHUNK_BYTES
  x, w = Tensor.empty(bs, c, hw, hw, requires_grad=True), Tensor.empty(c, c, k, k, requires_grad=True)
  y = x.conv2d(w)
  o = hw - k + 1
  per_image = (c * hw * hw + c * o * o) * 4
  ks = [kern for kern in _kernels(y.gradient(w, gradient=Tensor.empty(*y.shape))[0]) if any(u.op is Ops.REDUCE for u in kern.toposort())]
  if bs * per_image <= _DW_CHUNK_BYTES:
    assert len(ks) == 1, [kern.arg for kern in ks]
    return
  assert len(ks) == 2, [kern.arg for kern in ks]
  part = next(u for u in ks[0].toposort() if u.op is Ops.STORE).src[0]
  nchunks = next(u.src[0].dtype.size for u in part.toposort() if u.op is Ops.INDEX) // (c * c * k * k)
  assert nchunks > 1 and bs % nchunks == 0 and bs // nchunks * per_image <= _DW_CHUNK_BYTES, nchunks

def test_weight_grad_of_a_big_weight_over_small_images_makes_no_partials():
  # hlb_cifar10's 512x512 3x3 conv over 4x4 pixels, batch 32: its input and dy are 2 MB, past _DW_CHUNK_BYTES, and the
  # batch chunks summed into 4 partials of the 9.4 MB weight gradient (37.7 MB of a jitted training step's 165 MB peak:
  # public tinygrad allows 120 MB). Partials over 4x the batch's input and dy cost more than the cache saves: one reduce
  x, w = Tensor.empty(32, 512, 4, 4, requires_grad=True), Tensor.empty(512, 512, 3, 3, requires_grad=True)
  y = x.conv2d(w, padding=1)
  ks = [kern for kern in _kernels(y.gradient(w, gradient=Tensor.empty(*y.shape))[0]) if any(u.op is Ops.REDUCE for u in kern.toposort())]
  assert len(ks) == 1, [kern.arg for kern in ks]

@pytest.mark.parametrize("case", [(48, 8, 16, (30, 30), (3, 3), 1, 1, 1, 1), (40, 8, 8, (33, 31), (3, 3), 2, 1, 1, 2),
                                  (36, 16, 16, (28, 28), (5, 5), 1, 2, 2, 16), (64, 4, 12, (35, 29), (4, 2), (2, 1), 0, 1, 1),
                                  (45, 6, 6, (32, 32), (3, 3), 1, 1, 1, 3)], ids=str)
def test_weight_grad_batch_chunked_matches_torch(case):
  # batches past _DW_CHUNK_BYTES sum chunks into partials (strided, dilated, grouped, depthwise; batch sizes whose divisors
  # are odd or prime-ish): every gradient as torch's
  # (sums of ~40000 products: compared with float64 torch, relative to the gradient's largest value, as torch's own float32
  # is off by 2e-7..6e-6 here)
  from tinygrad.mixin.nn import _DW_CHUNK_BYTES
  bs, cin, cout, hw, k, s, p, d, g = case
  assert bs * (cin + cout) * hw[0] * hw[1] * 4 // 2 > _DW_CHUNK_BYTES   # (roughly: the output is about the input's size)
  rng = np.random.default_rng(0)
  xn, wn = rng.standard_normal((bs, cin, *hw)).astype(np.float32), rng.standard_normal((cout, cin // g, *k)).astype(np.float32)
  xt, wt = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (xn, wn))
  yt = torch.nn.functional.conv2d(xt, wt, stride=s, padding=p, dilation=d, groups=g)
  gn = rng.standard_normal(tuple(yt.shape)).astype(np.float32)
  (yt * torch.tensor(gn, dtype=torch.float64)).sum().backward()
  x, w = Tensor(xn, requires_grad=True), Tensor(wn, requires_grad=True)
  (x.conv2d(w, stride=s, padding=p, dilation=d, groups=g) * Tensor(gn)).sum().backward()
  for name, ours, ref in (("input grad", x.grad, xt.grad), ("weight grad", w.grad, wt.grad)):
    ref = ref.numpy()
    assert np.abs(ours.numpy() - ref).max() <= 1e-5 * np.abs(ref).max(), f"{name} of conv {case}"

def test_flat_conv_input_grad_reads_dy_without_nested_division():
  # the flattened form's output gradient is the valid one's (bs, cout, oh, ow) padded, flattened and padded: the input
  # grad's padded copy of dy reads that valid gradient directly; cut back out of the flat one its index nested a dozen
  # div/mods (the MNIST CNN's copy ran at 0.3 GFLOPS)
  x, w = Tensor.empty(4, 8, 24, 24, requires_grad=True), Tensor.empty(8, 8, 5, 5, requires_grad=True)
  y = x.conv2d(w)
  for k in _kernels(y.gradient(x, gradient=Tensor.empty(*y.shape))[0]):
    for u in k.toposort():
      if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX:
        divs = [d for d in u.src[0].src[1].toposort() if d.op in (Ops.IDIV, Ops.MOD)]
        assert not any(s.op in (Ops.IDIV, Ops.MOD) for d in divs for s in d.src[0].toposort() if s is not d), u.src[0].src[1].render()[:300]
