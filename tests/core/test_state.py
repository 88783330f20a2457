"""State dicts and safetensors: names, round trips (every dtype, bfloat16 included), strict-loading errors, the byte format."""
import json, struct, importlib.util
from collections import namedtuple
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.tensor import Tensor
from tinygrad.dtype import dtypes
from tinygrad import nn
from tinygrad.nn.state import get_state_dict, get_parameters, load_state_dict, safe_save, safe_load, safe_load_metadata, SAFE_DTYPES

HS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

class Block:
  def __init__(self): self.conv, self.bn = nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)
class Model:
  def __init__(self):
    self.blocks = [Block(), Block()]
    self.head = {"fc": nn.Linear(4, 3)}
    self.ln = nn.LayerNorm(3)
    self.not_a_tensor = 5

def test_state_dict_names():
  sd = get_state_dict(Model())
  assert list(sd) == [
    "blocks.0.conv.weight", "blocks.0.conv.bias", "blocks.0.bn.weight", "blocks.0.bn.bias", "blocks.0.bn.num_batches_tracked",
    "blocks.0.bn.running_mean", "blocks.0.bn.running_var",
    "blocks.1.conv.weight", "blocks.1.conv.bias", "blocks.1.bn.weight", "blocks.1.bn.bias", "blocks.1.bn.num_batches_tracked",
    "blocks.1.bn.running_mean", "blocks.1.bn.running_var",
    "head.fc.weight", "head.fc.bias", "ln.weight", "ln.bias"]

def test_state_dict_namedtuple_prefix_and_cycles():
  P = namedtuple("P", ["a", "b"])
  t1, t2 = Tensor([1.0]), Tensor([2.0])
  assert get_state_dict(P(t1, [t2]), prefix="m.") == {"m.a": t1, "m.b.0": t2}
  class Cyc: pass
  c = Cyc()
  c.me, c.w = c, t1   # a cycle ends, it does not loop
  assert get_state_dict(c) == {"w": t1}

def test_get_parameters_dedups():
  lin = nn.Linear(2, 2)
  holder = {"a": lin, "b": lin}
  assert len(get_parameters(holder)) == 2

def test_load_state_dict_round_trip():
  src, dst = Model(), Model()
  load_state_dict(dst, get_state_dict(src))
  for (k, a), b in zip(get_state_dict(src).items(), get_state_dict(dst).values()):
    np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=k)
  # the model keeps its own buffers: changing the source afterwards does not change it
  w = get_state_dict(src)["head.fc.bias"]
  before = get_state_dict(dst)["head.fc.bias"].numpy().copy()
  w.assign(w + 1).realize()
  np.testing.assert_array_equal(get_state_dict(dst)["head.fc.bias"].numpy(), before)

def test_load_state_dict_errors_list_everything():
  m = nn.Linear(2, 3)
  sd = {"weight": Tensor.zeros(3, 3), "extra": Tensor.zeros(1)}
  with pytest.raises(ValueError) as e: load_state_dict(m, sd)
  msg = str(e.value)
  assert "missing keys: ['bias']" in msg and "unexpected keys: ['extra']" in msg and "weight: model (3, 2) vs state dict (3, 3)" in msg

def test_load_state_dict_non_strict():
  m = nn.Linear(2, 3)
  load_state_dict(m, {"bias": Tensor([1.0, 2.0, 3.0]), "extra": Tensor([0.0])}, strict=False)
  np.testing.assert_array_equal(m.bias.numpy(), [1, 2, 3])
  with pytest.raises(ValueError, match="shape"): load_state_dict(m, {"bias": Tensor([1.0])}, strict=False)

def test_load_state_dict_casts_and_consumes():
  m = nn.Linear(1, 2)
  sd = {"weight": Tensor(np.array([[1.0], [2.0]], np.float64)), "bias": Tensor(np.array([3, 4], np.int32))}
  load_state_dict(m, sd, consume=True)
  assert m.weight.dtype == dtypes.float32 and sd == {}
  np.testing.assert_array_equal(m.bias.numpy(), [3.0, 4.0])

# ---- safetensors ----
NP_NAMES = {dtypes.int8: "int8", dtypes.uint8: "uint8", dtypes.int16: "int16", dtypes.uint16: "uint16", dtypes.int32: "int32",
            dtypes.uint32: "uint32", dtypes.int64: "int64", dtypes.uint64: "uint64", dtypes.float16: "float16", dtypes.float32: "float32",
            dtypes.float64: "float64"}
def T(a: np.ndarray) -> Tensor: return Tensor(a.reshape(-1)).reshape(a.shape)  # Tensor(0-d array) is (1,) in the front end for now

def make(dt, shape, seed=0) -> tuple[Tensor, np.ndarray]:
  rng = np.random.default_rng(seed)
  if dt == dtypes.bool:
    a = rng.random(shape) > 0.5
    return T(a), a
  if dt == dtypes.bfloat16:
    bits = rng.integers(0, 2**16, shape, dtype=np.uint16)
    bits[((bits >> 7) & 0xff) == 0xff] = 0x3f80   # no inf/nan patterns: compare exactly
    return T(bits).bitcast(dtypes.bfloat16), bits
  npdt = np.dtype(NP_NAMES[dt])
  a = rng.standard_normal(shape).astype(npdt) if npdt.kind == "f" else rng.integers(np.iinfo(npdt).min, np.iinfo(npdt).max, shape, dtype=npdt)
  return T(a), a

def raw_of(t: Tensor) -> np.ndarray:
  return t.bitcast(dtypes.uint16).numpy() if t.dtype == dtypes.bfloat16 else t.numpy()

@HS
@given(shape=st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple))
def test_safetensors_round_trip_all_dtypes(tmp_path_factory, shape):
  fn = tmp_path_factory.mktemp("st") / "all.safetensors"
  tensors, arrays = {}, {}
  for i, dt in enumerate(SAFE_DTYPES.values()):
    tensors[f"t.{dt.name}"], arrays[f"t.{dt.name}"] = make(dt, shape, i)
  safe_save(tensors, fn, metadata={"format": "pt", "step": 3})
  back = safe_load(fn)
  assert list(back) == list(tensors)
  for k, t in back.items():
    assert t.dtype == tensors[k].dtype and t.shape == shape, k
    np.testing.assert_array_equal(raw_of(t), arrays[k], err_msg=k)
  assert safe_load_metadata(fn)["__metadata__"] == {"format": "pt", "step": "3"}

def test_safetensors_byte_format(tmp_path):
  fn = tmp_path / "x.safetensors"
  safe_save({"a": Tensor(np.array([1.0, 2.0], np.float32)), "b": Tensor(np.array([[7]], np.int64))}, fn)
  raw = fn.read_bytes()
  n = struct.unpack("<Q", raw[:8])[0]
  assert (8 + n) % 8 == 0
  header = json.loads(raw[8:8 + n])
  assert header["a"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
  assert header["b"] == {"dtype": "I64", "shape": [1, 1], "data_offsets": [8, 16]}
  data = raw[8 + n:]
  assert struct.unpack("<2f", data[:8]) == (1.0, 2.0) and struct.unpack("<q", data[8:16]) == (7,)

def test_safetensors_reads_a_handwritten_file(tmp_path):
  # written by hand (not by safe_save): a reader bug can't hide behind a matching writer bug
  header = json.dumps({"__metadata__": {"k": "v"}, "w": {"dtype": "F16", "shape": [3], "data_offsets": [0, 6]},
                       "i": {"dtype": "U8", "shape": [], "data_offsets": [6, 7]}}).encode()
  body = np.array([1.5, -2.0, 0.25], "<f2").tobytes() + bytes([200])
  fn = tmp_path / "h.safetensors"
  fn.write_bytes(struct.pack("<Q", len(header)) + header + body)
  sd = safe_load(fn)
  np.testing.assert_array_equal(sd["w"].numpy(), np.array([1.5, -2.0, 0.25], np.float16))
  assert sd["i"].shape == () and sd["i"].item() == 200

def test_safetensors_corrupt_files(tmp_path):
  short = tmp_path / "short"
  short.write_bytes(b"\x01\x02")
  with pytest.raises(ValueError, match="not a safetensors file"): safe_load(short)
  huge = tmp_path / "huge"
  huge.write_bytes(struct.pack("<Q", 10**9) + b"{}")
  with pytest.raises(ValueError, match="header length"): safe_load(huge)
  bad = tmp_path / "bad"
  header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}).encode()
  bad.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
  with pytest.raises(ValueError, match="needs 16 bytes"): safe_load(bad)

def test_model_save_load_round_trip(tmp_path):
  m1, m2 = Model(), Model()
  safe_save(get_state_dict(m1), tmp_path / "m.safetensors")
  load_state_dict(m2, safe_load(tmp_path / "m.safetensors"))
  x = Tensor(np.random.default_rng(0).standard_normal((1, 1, 4, 4)).astype(np.float32))
  f = lambda m: m.blocks[0].bn(m.blocks[0].conv(x)).numpy()
  np.testing.assert_array_equal(f(m1), f(m2))

HAVE_ST = importlib.util.find_spec("safetensors") is not None
@pytest.mark.skipif(not HAVE_ST, reason="the safetensors package is not installed (optional cross-check)")
def test_cross_check_with_safetensors_package(tmp_path):
  from safetensors.numpy import save_file, load_file
  arrays = {"f32": np.arange(6, dtype=np.float32).reshape(2, 3), "i16": np.array([-3, 4], np.int16), "b": np.array([True, False])}
  save_file(arrays, str(tmp_path / "theirs.safetensors"), metadata={"m": "1"})
  ours = safe_load(tmp_path / "theirs.safetensors")
  for k, a in arrays.items(): np.testing.assert_array_equal(ours[k].numpy(), a)
  safe_save({k: Tensor(a) for k, a in arrays.items()}, tmp_path / "ours.safetensors")
  theirs = load_file(str(tmp_path / "ours.safetensors"))
  for k, a in arrays.items(): np.testing.assert_array_equal(theirs[k], a)
