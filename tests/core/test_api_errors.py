"""Invalid arguments to Tensor ops raise what torch and public tinygrad raise (RuntimeError, IndexError, OverflowError),
as classes that are also ValueError (ours before), with a message naming the values."""
import types
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.mixin.common import ArgumentError

torch = pytest.importorskip("torch", reason="torch (CPU) is the test reference: pip install torch")

# the same calls spelled for each library
TG = types.SimpleNamespace(empty=Tensor.empty, tensor=Tensor, conv2d=Tensor.conv2d, meshgrid=Tensor.meshgrid, einsum=Tensor.einsum,
                           cross_entropy=Tensor.cross_entropy, conv_transpose2d=Tensor.conv_transpose2d)
TH = types.SimpleNamespace(empty=torch.empty, tensor=torch.tensor, conv2d=torch.nn.functional.conv2d, meshgrid=torch.meshgrid, einsum=torch.einsum,
                           cross_entropy=torch.nn.functional.cross_entropy, conv_transpose2d=torch.nn.functional.conv_transpose2d)

# (what, the call on (tensor of `shape`, library), shapes, text our message must hold)
CASES = [
  ("flip repeated", lambda x, m: x.flip((0, 0)), [(3, 4), (1, 1), (0, 5)], "twice"),
  ("triu of a vector", lambda x, m: x.triu(1), [(3,), ()], "at least 2 dims"),   # (an IndexError 'tuple index out of range' before)
  ("tril of a vector", lambda x, m: x.tril(), [(0,), (5,)], "at least 2 dims"),
  ("flip repeated negative", lambda x, m: x.flip((1, -1)), [(3, 4), (1, 0)], "twice"),
  ("permute short", lambda x, m: x.permute((0, 2)), [(3, 4, 5), (1, 1, 1, 1)], "(0, 2)"),
  ("permute long", lambda x, m: x.permute((0, 1, 2, 2)), [(3, 4, 5), (0, 1, 7)], "(0, 1, 2, 2)"),
  ("permute repeated", lambda x, m: x.permute((0, 0, 1)), [(3, 4, 5), (1, 0, 3)], "(0, 0, 1)"),
  ("reshape two -1", lambda x, m: x.reshape((-1, -1, 2)), [(3, 4), (2, 2)], "-1"),
  ("reshape sizes", lambda x, m: x.reshape((5, 3)), [(3, 4), (1, 7)], "(5, 3)"),
  ("matmul 1d x 2d", lambda x, m: x @ m.empty(x.shape[-1] + 1, 2), [(4,), (1,), (7,)], "matmul"),
  ("matmul 2d x 1d", lambda x, m: x @ m.empty(x.shape[-1] + 3), [(2, 1), (5, 3)], "matmul"),
  ("matmul 2d x 2d", lambda x, m: x @ m.empty(x.shape[-1] + 2, 3), [(2, 4), (1, 1), (5, 3)], "matmul"),
  ("conv kernel larger than input", lambda x, m: m.conv2d(x, m.empty(2, x.shape[1], 3, 3), dilation=3), [(1, 1, 6, 7), (2, 3, 5, 5)],
   "larger than the input"),
  ("conv_transpose output too small", lambda x, m: m.conv_transpose2d(x, m.empty(x.shape[1], 2, 1, 1), padding=1), [(1, 2, 2, 2), (3, 1, 1, 5)],
   "too small"),
  ("clip without bounds", lambda x, m: x.clip(None, None), [(3,), (0, 2)], "clip"),
  ("gather index dims", lambda x, m: x.gather(0, m.tensor([1])), [(4, 5, 6), (3, 1)], "dims"),
  ("gather bool index", lambda x, m: x.gather(0, m.tensor([[True]] * x.shape[0])), [(4, 5), (1, 1)], "int dtype"),
  ("roll shifts without dims", lambda x, m: x.roll((1, 2)), [(2, 4), (5,)], "(1, 2)"),
  ("roll shifts and dims lengths", lambda x, m: x.roll(shifts=1, dims=(0, 1)), [(3, 3), (1, 2, 5)], "same length"),
  ("meshgrid indexing", lambda x, m: m.meshgrid(x, indexing="bad"), [(3,), (1,)], "'bad'"),
  ("cross_entropy target shape", lambda x, m: m.cross_entropy(x, m.empty(x.shape[0], 1)), [(32, 10), (3, 1, 2)], "target shape"),
  ("einsum sizes", lambda x, m: m.einsum("ij,jk->ik", x, m.empty(x.shape[1] + 1, 2)), [(3, 8), (2, 5)], "'j'"),
]

@pytest.mark.parametrize("what,call,shapes,text", CASES, ids=[c[0] for c in CASES])
def test_raises_the_class_torch_raises(what, call, shapes, text):
  for shape in shapes:
    with pytest.raises(Exception) as theirs: call(torch.empty(shape), TH)
    with pytest.raises(type(theirs.value)) as ours: call(Tensor.empty(*shape), TG)
    assert isinstance(ours.value, ValueError), f"{what}: still a ValueError, as before"
    assert text in str(ours.value), f"{what} {shape}: {ours.value}"

def test_argument_error_is_value_and_runtime_error():
  assert issubclass(ArgumentError, ValueError) and issubclass(ArgumentError, RuntimeError)

@pytest.mark.parametrize("dim", [77, -5])
def test_stack_bad_dim_is_index_error(dim):
  with pytest.raises(IndexError, match=str(dim)): Tensor.stack(Tensor.empty(4, 5, 3), dim=dim)
  with pytest.raises(IndexError): torch.stack([torch.empty(4, 5, 3)], dim=dim)

@pytest.mark.parametrize("op", ["stack", "cat", "meshgrid"])
def test_sequence_and_more_tensors_is_an_error(op):
  # Tensor.stack((a, b), c) reads as neither form; before, it silently joined all three
  a, b, c = Tensor.empty(2), Tensor.empty(2), Tensor.empty(2)
  with pytest.raises(ValueError, match=f"{op}: got a sequence of 2 tensors and 1 more"): getattr(Tensor, op)((a, b), c)
  assert getattr(Tensor, op)([a, b])[0].shape == getattr(Tensor, op)(a, b)[0].shape

@pytest.mark.parametrize("n", [-1, -7])
def test_one_hot_needs_a_class_count(n):
  # public tinygrad's one_hot has no torch-style -1 (infer the count, which would realize): a negative count is an error
  with pytest.raises(ValueError, match="num_classes"): Tensor([1, 2, 4]).one_hot(n)
  assert Tensor([1, 2, 4]).one_hot(6).shape == (3, 6) and Tensor.empty(0, dtype=dtypes.int32).one_hot(0).shape == (0, 0)

def test_shape_checks_public_tinygrad_asserts_are_assertion_errors_too():
  # public tinygrad checks these with assert: code catching its AssertionError missed ours (a ValueError, for cat and stack
  # a ValueError and RuntimeError); all three catch them now (found comparing errors with 0.14 after upstream's suites)
  t = Tensor.empty(2, 3)
  for bad in (lambda: t.cat(Tensor.empty(3, 2)), lambda: Tensor.stack(t, Tensor.empty(3)), lambda: t.split([1, 2]), lambda: t.item(),
              lambda: Tensor.empty(1, 2, 4, 4).conv2d(Tensor.empty(1, 3, 2, 2)), lambda: t.conv2d(Tensor.empty(1, 3, 2, 2))):
    for exc in (AssertionError, ValueError, RuntimeError):
      with pytest.raises(exc): bad()

def test_split_sizes_must_be_ints_at_least_0():
  # [2, -1, 2] sums to the dim's 3 and failed in shrink ("((2, 1),) is out of bounds"), a call the user never made
  t = Tensor.arange(3)
  for bad in ([2, -1, 2], [4, -1], [1.5, 1.5]):
    for exc in (ValueError, RuntimeError):
      with pytest.raises(exc, match="split: sizes must be ints >= 0"): t.split(bad)
  assert [p.tolist() for p in t.split([0, 3, 0])] == [[], [0, 1, 2], []]

def test_flatten_start_after_end_raises():
  # flatten(1, 0) of (2, 3, 4) merged the empty range 1..0 into a new dim: (2, 1, 3, 4); torch raises
  for a, b in ((1, 0), (-1, -2), (2, 0)):
    for exc in (ValueError, RuntimeError):
      with pytest.raises(exc, match="start_dim"): Tensor.empty(2, 3, 4).flatten(a, b)
  assert Tensor.empty(2, 3, 4).flatten(1, 1).shape == (2, 3, 4) and Tensor.empty(2, 3, 4).flatten(-2).shape == (2, 12)

def test_unflatten_to_no_sizes_raises():
  # (2, 1, 4).unflatten(1, ()) dropped the dim of size 1: (2, 4); torch raises "sizes must be non-empty"
  for exc in (ValueError, RuntimeError):
    with pytest.raises(exc, match="non-empty"): Tensor.empty(2, 1, 4).unflatten(1, ())
  assert Tensor.empty(2, 1, 4).unflatten(1, (1, 1)).shape == (2, 1, 1, 4)

def test_a_float_axis_or_shift_is_a_type_error_naming_it():
  # sum(1.0) and roll(1.5, 1) raised "'float' object is not iterable" from inside the axis handling
  t = Tensor.empty(2, 3)
  for f in (lambda: t.sum(1.0), lambda: t.max((0, 1.0)), lambda: t.softmax(0.5)):
    with pytest.raises(TypeError, match="an axis must be an int, got"): f()
  for f in (lambda: t.roll(1.5, 1), lambda: t.roll((1, 0.5), (0, 1)), lambda: t.roll(1.5)):
    with pytest.raises(TypeError, match="roll: shifts must be an int"): f()
  assert t.sum(np.int64(1)).shape == (2,) and t.sum(True).shape == (2,) and t.roll(np.int64(1), 1).shape == (2, 3)

def test_one_hot_of_a_float_or_bool_tensor_raises():
  # as public tinygrad ("expect integer dtype") and torch (RuntimeError): Tensor([1.5]).one_hot(3) gave [[0, 0, 0]] (1.5 matched
  # no class) and Tensor([1.0]) the class 1 (found comparing errors with 0.14 after upstream's suites)
  for t in (Tensor([1.5]), Tensor([1.0, 2.0]), Tensor([True, False]), Tensor([1.0], dtype=dtypes.float16)):
    for exc in (TypeError, RuntimeError):
      with pytest.raises(exc, match="int tensor"): t.one_hot(3)
  assert Tensor([1, 2], dtype=dtypes.uint8).one_hot(3).tolist() == [[0, 1, 0], [0, 0, 1]]

@pytest.mark.parametrize("args,dt", [((2**33,), dtypes.int32), ((129,), dtypes.int8), ((-129, 128), dtypes.int8), ((128, 0, -1), dtypes.int8),
                                     ((127, -130, -1), dtypes.int8), ((0, 2**16 + 1, 2**15), dtypes.uint16), ((-1, 3), dtypes.uint8)])
def test_arange_past_the_dtype_is_overflow(args, dt):
  # torch wraps these silently; the first or the last value does not fit the given dtype
  with pytest.raises(OverflowError, match="does not fit"): Tensor.arange(*args, dtype=dt)

@pytest.mark.parametrize("args,dt", [((128,), dtypes.int8), ((-128, 128), dtypes.int8), ((127, -129, -1), dtypes.int8), ((0, 256, 255), dtypes.uint8)])
def test_arange_at_the_dtype_edges(args, dt):
  got = Tensor.arange(*args, dtype=dt, device="CPU")
  assert got.dtype == dt and got.tolist() == list(range(*args))

@pytest.mark.parametrize("dev", ["PYTHON", "CPU", "CPU:LLVM"])
@pytest.mark.parametrize("args,dt", [((5, 0, -1), dtypes.uint8), ((255, 0, -7), dtypes.uint8), ((200, 3, -100), dtypes.uint16),
                                     ((2**64 - 1, 2**64 - 5, -1), dtypes.uint64), ((2**32 - 1, 0, -2**31), dtypes.uint32),
                                     ((100, -101, -200), dtypes.int8), ((-2**31, 2**31, 2**31 + 1), dtypes.int32), ((1, 0, -1), dtypes.bool)])
def test_arange_step_the_dtype_cannot_hold(args, dt, dev):
  # every value fits the dtype, the step does not (negative with an unsigned dtype): numpy's values, not an OverflowError
  if dev == "CPU:LLVM": pytest.importorskip("llvmlite")
  got = Tensor.arange(*args, dtype=dt, device=dev)
  assert got.dtype == dt and got.tolist() == [bool(v) if dt == dtypes.bool else v for v in range(*args)]

def test_argmax_is_int32_whatever_default_int():
  # argmax counts down with an arange of its own index dtype: a default_int of uint8 could not hold the step -1
  from tinygrad import Context
  with Context(DEFAULT_INT="uint8"):
    for t, want in ((Tensor([False, True, True]), 1), (Tensor([3.0, 1.0, 5.0, 5.0]), 2)):
      assert t.argmax().dtype == dtypes.int32 and t.argmax().item() == want and t.argmin().item() == [0, 1][want == 2]

@pytest.mark.parametrize("idx", [(slice(0.0, None), 0), (slice(None, 2.5),), (0, slice(None, None, 1.0))])
def test_float_slice_is_a_type_error(idx):
  # Python's slice.indices and numpy raise TypeError for a float bound (a float int-index is an IndexError, as numpy)
  with pytest.raises(TypeError): np.zeros((3, 4))[idx]
  with pytest.raises(TypeError, match="slice indices"): Tensor.empty(3, 4)[idx]
  with pytest.raises(IndexError): Tensor.empty(3, 4)[0.0, :]

@pytest.mark.parametrize("pad", ["same", "valid"])
def test_string_padding_of_tensor_conv_and_pool_is_named(pad):
  # public tinygrad's Tensor.conv2d/pools take int padding (nn.Conv2d takes the strings): a string was read as its
  # characters ("invalid literal for int() with base 10: 's'", or 5 pads for 'valid')
  x = Tensor.empty(1, 2, 5, 5)
  for f in (lambda: x.conv2d(Tensor.empty(3, 2, 3, 3), padding=pad), lambda: x.max_pool2d(3, padding=pad), lambda: x.avg_pool2d(3, padding=pad)):
    with pytest.raises(ValueError, match=f"padding '{pad}'.*nn.Conv2d"): f()

def test_operands_on_two_devices_raise_when_built_and_constants_join():
  # public tinygrad raises RuntimeError ("all buffers must be on the same device", "expected index and self on the same
  # device") when the op is built. A where's condition was never compared: x.gather(0, idx) with idx's data on another
  # device made a lazy result claiming idx's device, failing only when realized, and `a + b` raised a ValueError alone
  x, y = Tensor([[1.0, 2.0], [3.0, 4.0]], device="PYTHON"), Tensor([[5.0, 6.0], [7.0, 8.0]], device="PYTHON")
  idx, mask = Tensor([[0, 1], [1, 0]], device="CPU"), Tensor([[True, False], [False, True]], device="CPU")
  for f in (lambda: x.gather(0, idx), lambda: x[idx], lambda: mask.where(x, y), lambda: x.masked_fill(mask, 0.0), lambda: x + idx):
    with pytest.raises(RuntimeError, match="different devices"): f()
    with pytest.raises(ValueError, match="different devices"): f()
  # a graph of constants has no data to move: it joins the other operands' device (a constant mask failed when realized)
  assert (Tensor.arange(2) < 1).where(x[0], y[0]).tolist() == [1.0, 6.0]
  assert mask[0].where(Tensor.ones(2, device="PYTHON"), 5.0).tolist() == [1.0, 5.0]   # constant values join the mask
  with pytest.raises(RuntimeError, match="different devices"): mask[0].where(Tensor.ones(2, device="PYTHON"), y[0])   # y has data
  assert x[Tensor.arange(2)].tolist() == [[1.0, 2.0], [3.0, 4.0]] and x.gather(0, Tensor.zeros(2, 2, dtype=dtypes.int32)).tolist() == [[1.0, 2.0], [1.0, 2.0]]

@pytest.mark.parametrize("make", [lambda: Tensor.ones(2.0), lambda: Tensor.empty(2.5), lambda: Tensor.zeros(2, 2.0), lambda: Tensor.full((2.0,), 1),
                                  lambda: Tensor.ones(1).expand(2.0), lambda: Tensor.ones(3, -2)], ids=["ones", "empty", "zeros", "full", "expand", "negative"])
def test_a_size_that_is_not_an_int_is_a_runtime_error(make):
  # public tinygrad raises RuntimeError "shape must be int" (torch RuntimeError for a negative size); ours was a ValueError alone
  with pytest.raises(RuntimeError, match="invalid shape .* shape must be int"): make()
  with pytest.raises(ValueError, match="invalid shape"): make()
