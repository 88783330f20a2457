"""State dicts and safetensors: names, round trips (every dtype, bfloat16 included), strict-loading errors, the byte format."""
import json, os, stat, struct, importlib.util
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

def test_state_dict_names_a_shared_module_under_each_parent():
  # a module held by two parents (a tied embedding) is listed under both names, so a checkpoint naming either one loads
  emb = nn.Embedding(4, 2)
  class Enc:
    def __init__(self): self.embed_tokens = emb
  class M:
    def __init__(self): self.shared, self.encoder = emb, Enc()
  m = M()
  sd = get_state_dict(m)
  assert list(sd) == ["shared.weight", "encoder.embed_tokens.weight"] and sd["shared.weight"] is sd["encoder.embed_tokens.weight"]
  w = np.arange(8, dtype=np.float32).reshape(4, 2)
  load_state_dict(m, {"encoder.embed_tokens.weight": Tensor(w)}, strict=False, verbose=False)
  np.testing.assert_array_equal(m.shared.weight.numpy(), w)
  assert len(get_parameters(m)) == 1

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
  assert "missing keys: ['bias']" in msg and "extra" not in msg and "Shape mismatch in layer `weight`: Expected shape (3, 2), but found (3, 3) in state dict." in msg

def test_load_state_dict_leaves_extra_keys_unused(capsys):
  # public tinygrad loads a checkpoint with more keys than the model (a classifier head, optimizer state) and ignores the
  # rest; strict raised "unexpected keys" here, so its programs stopped at the load
  m = nn.Linear(2, 3)
  sd = {"weight": Tensor.ones(3, 2), "bias": Tensor([1.0, 2.0, 3.0]), "fc.weight": Tensor.zeros(4), "step": Tensor(3)}
  assert len(load_state_dict(m, sd)) == 2
  np.testing.assert_array_equal(m.bias.numpy(), [1, 2, 3])
  np.testing.assert_array_equal(m.weight.numpy(), np.ones((3, 2)))
  assert "2 state dict keys the model does not have were not used" in capsys.readouterr().out

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

def test_load_state_dict_returns_the_loaded_tensors_and_reports(capsys):
  m = nn.Linear(2, 3)
  ret = load_state_dict(m, {"weight": Tensor.ones(3, 2), "bias": Tensor([1.0, 2.0, 3.0])})   # verbose by default, as public tinygrad's
  assert [id(t) for t in ret] == [id(m.weight), id(m.bias)] and ret[1].tolist() == [1.0, 2.0, 3.0]
  assert capsys.readouterr().out.startswith("loaded 2 weights (0.00 GB")
  assert load_state_dict(m, {"bias": Tensor([0.0, 0.0, 0.0])}, strict=False, verbose=False) == [m.bias] and capsys.readouterr().out == ""

def test_load_state_dict_takes_a_scalar_for_a_one_element_tensor():
  class Opt:
    def __init__(self, lr): self.lr = lr
  m = Opt(Tensor([0.1]))
  load_state_dict(m, {"lr": Tensor(0.5)}, verbose=False)   # an old checkpoint's () lr into a (1,) one
  assert m.lr.shape == (1,) and m.lr.tolist() == [0.5]

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
  if dt in dtypes.fp8s:   # every byte is a value (NaN too): compared as bytes
    bits = rng.integers(0, 256, shape, dtype=np.uint8)
    return T(bits).bitcast(dt), bits
  npdt = np.dtype(NP_NAMES[dt])
  a = rng.standard_normal(shape).astype(npdt) if npdt.kind == "f" else rng.integers(np.iinfo(npdt).min, np.iinfo(npdt).max, shape, dtype=npdt)
  return T(a), a

def raw_of(t: Tensor) -> np.ndarray:
  if t.dtype in dtypes.fp8s: return t.bitcast(dtypes.uint8).numpy()
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

def test_safetensors_reads_handwritten_fp8(tmp_path):
  # F8_E4M3 / F8_E5M2 (the OCP formats, as torch's float8_e4m3fn / float8_e5m2 save them): one byte each
  header = json.dumps({"a": {"dtype": "F8_E4M3", "shape": [5], "data_offsets": [0, 5]},
                       "b": {"dtype": "F8_E5M2", "shape": [5], "data_offsets": [5, 10]}}).encode()
  fn = tmp_path / "f8.safetensors"
  fn.write_bytes(struct.pack("<Q", len(header)) + header + bytes([0x38, 0x7e, 0x01, 0xb8, 0x80]) + bytes([0x3c, 0x7b, 0x7c, 0x01, 0xc0]))
  sd = safe_load(fn)
  assert sd["a"].dtype == dtypes.fp8e4m3 and sd["b"].dtype == dtypes.fp8e5m2
  assert sd["a"].tolist() == [1.0, 448.0, 2**-9, -1.0, -0.0] and sd["b"].tolist() == [1.0, 57344.0, float("inf"), 2**-16, -2.0]
  safe_save(sd, fn2 := tmp_path / "f8b.safetensors")
  assert fn2.read_bytes().endswith(bytes([0x38, 0x7e, 0x01, 0xb8, 0x80, 0x3c, 0x7b, 0x7c, 0x01, 0xc0]))   # the bytes written back as read
  assert {k: v["dtype"] for k, v in safe_load_metadata(fn2).items()} == {"a": "F8_E4M3", "b": "F8_E5M2"}

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

def test_safetensors_read_from_a_tensor_of_the_file_bytes(tmp_path):
  # public tinygrad's safe_load takes the file's bytes as a uint8 Tensor too (Tensor(pathlib.Path(fn)), Tensor.from_url):
  # a Tensor raised TypeError from open()
  import pathlib
  fn = tmp_path / "x.safetensors"
  src = {"w": Tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), "b": Tensor([1.5, -2.0], dtype=dtypes.bfloat16), "e": Tensor.zeros(0, 2)}
  safe_save(src, fn, metadata={"k": "v"})
  for t in (Tensor(pathlib.Path(fn)), Tensor(fn.read_bytes())):
    back = safe_load(t)
    assert list(back) == list(src) and safe_load_metadata(t)["__metadata__"] == {"k": "v"}
    for k, v in src.items(): np.testing.assert_array_equal(raw_of(back[k]), raw_of(v))
  with pytest.raises(ValueError, match="not a safetensors file"): safe_load(Tensor(b"\x01\x02"))
  with pytest.raises(ValueError, match="not a safetensors file"): safe_load(Tensor(b""))

def test_tensor_io_reads_a_tensors_bytes_as_a_file():
  # public tinygrad's nn.state.TensorIO: a read-only seekable file over a 1-d uint8 tensor
  import io, pickle
  from tinygrad.nn.state import TensorIO
  f = TensorIO(Tensor(b"Hello World!"))
  assert (f.read(1), f.read(5), f.read(100), f.read(100)) == (b"H", b"ello ", b"World!", b"")
  assert f.seek(2) == 2 and f.read() == b"llo World!" and f.tell() == 12
  assert f.seek(-3, io.SEEK_END) == 9 and f.read(2) == b"ld" and f.seek(-100, io.SEEK_CUR) == 0 and f.seek(50) == 12
  assert pickle.load(TensorIO(Tensor(pickle.dumps({"a": [1, 2]})))) == {"a": [1, 2]}
  assert list(TensorIO(Tensor(b"ab\ncd\n")[3:])) == [b"cd\n"]   # a view: its own bytes
  with pytest.raises(io.UnsupportedOperation): f.write(b"x")
  with pytest.raises(ValueError, match="1-d uint8"): TensorIO(Tensor([1, 2]))

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

# ---- safe_save writes through a private temporary file ----
def test_safe_save_does_not_follow_a_planted_tmp_symlink(tmp_path):
  victim = tmp_path / "victim.txt"
  victim.write_text("precious")
  fn = tmp_path / "m.safetensors"
  (tmp_path / "m.safetensors.tmp").symlink_to(victim)
  safe_save({"w": Tensor([1.0, 2.0])}, fn)
  assert victim.read_text() == "precious"
  np.testing.assert_array_equal(safe_load(fn)["w"].numpy(), np.array([1.0, 2.0], np.float32))

def test_safe_save_does_not_depend_on_a_fixed_temp_name(tmp_path):
  fn = tmp_path / "m.safetensors"
  (tmp_path / "m.safetensors.tmp").mkdir()   # whatever another process left at the old fixed name
  safe_save({"w": Tensor([3.0])}, fn)
  assert safe_load(fn)["w"].tolist() == [3.0]

def _save_many(fn, k, n):
  for i in range(n): safe_save({"w": Tensor(np.full(1000, k * 1000 + i, np.float32))}, fn)

def test_safe_save_concurrent_savers_of_one_path(tmp_path):
  import multiprocessing as mp
  fn = str(tmp_path / "m.safetensors")
  ctx = mp.get_context("fork")
  procs = [ctx.Process(target=_save_many, args=(fn, k, 40)) for k in range(2)]
  for p in procs: p.start()
  for p in procs: p.join(120)
  assert [p.exitcode for p in procs] == [0, 0]
  w = safe_load(fn)["w"].numpy()
  assert w[0] in (39.0, 1039.0) and (w == w[0]).all()   # one saver's last file, whole
  assert sorted(os.listdir(tmp_path)) == ["m.safetensors"]

def test_safe_save_failure_leaves_no_temp_file(tmp_path, monkeypatch):
  fn = tmp_path / "m.safetensors"
  def boom(*a): raise OSError("disk full")
  monkeypatch.setattr(os, "replace", boom)
  with pytest.raises(OSError, match="disk full"): safe_save({"w": Tensor([1.0])}, fn)
  assert os.listdir(tmp_path) == []

@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_safe_save_file_mode_follows_umask(tmp_path, umask):
  old = os.umask(umask)
  try: safe_save({"w": Tensor([1.0])}, tmp_path / "m.safetensors")
  finally: os.umask(old)
  assert stat.S_IMODE(os.stat(tmp_path / "m.safetensors").st_mode) == 0o666 & ~umask
  os.chmod(tmp_path / "m.safetensors", 0o640)   # overwriting keeps the existing file's mode, as open() does
  safe_save({"w": Tensor([2.0])}, tmp_path / "m.safetensors")
  assert stat.S_IMODE(os.stat(tmp_path / "m.safetensors").st_mode) == 0o640

def test_safe_save_refuses_the_metadata_name(tmp_path):
  with pytest.raises(ValueError, match="__metadata__"): safe_save({"__metadata__": Tensor([1.0]), "w": Tensor([2.0])}, tmp_path / "m.safetensors")
  assert not (tmp_path / "m.safetensors").exists()

def test_safe_save_aligns_mixed_dtypes(tmp_path):
  # a byte tensor before a float one: the float must not start at an odd offset, and the reader of record agrees
  a, b, c = np.arange(3, dtype=np.uint8), np.arange(2, dtype=np.float32), np.arange(3, dtype=np.int16)
  fn = tmp_path / "m.safetensors"
  safe_save({"a": Tensor(a), "b": Tensor(b), "c": Tensor(c)}, fn)
  header = safe_load_metadata(fn)
  for k, isz in (("a", 1), ("b", 4), ("c", 2)): assert header[k]["data_offsets"][0] % isz == 0, header
  back = safe_load(fn)
  assert list(back) == ["a", "b", "c"]
  for k, ref in (("a", a), ("b", b), ("c", c)): np.testing.assert_array_equal(back[k].numpy(), ref)
  if HAVE_ST:
    from safetensors.numpy import load_file
    theirs = load_file(str(fn))
    for k, ref in (("a", a), ("b", b), ("c", c)): np.testing.assert_array_equal(theirs[k], ref)

# ---- malformed headers: one ValueError naming the file and the entry ----
def _raw_file(path, header_text: str, data: bytes = b"\0" * 64):
  h = header_text.encode()
  path.write_bytes(struct.pack("<Q", len(h)) + h + data)
  return path

F32 = lambda offs, shape=(2,): {"dtype": "F32", "shape": list(shape), "data_offsets": offs}
MALFORMED = {
  "list": ("[1, 2]", "JSON object"),
  "string": ('"hello"', "JSON object"),
  "entry_not_object": (json.dumps({"w": [1, 2]}), "'w' must be an object"),
  "no_dtype": (json.dumps({"w": {"shape": [2], "data_offsets": [0, 8]}}), "'w' lacks dtype"),
  "no_offsets": (json.dumps({"w": {"dtype": "F32", "shape": [2]}}), "'w' lacks data_offsets"),
  "unknown_dtype": (json.dumps({"w": {"dtype": "F128", "shape": [2], "data_offsets": [0, 8]}}), "'w' has dtype 'F128'"),
  "list_dtype": (json.dumps({"w": {"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]}}), "'w' has dtype"),
  "string_offsets": (json.dumps({"w": F32(["0", "8"])}), "'w' has data_offsets"),
  "float_offsets": (json.dumps({"w": F32([0.0, 8.0])}), "'w' has data_offsets"),
  "negative_offsets": (json.dumps({"w": F32([-8, 0])}), "'w' has data_offsets"),
  "three_offsets": (json.dumps({"w": F32([0, 8, 16])}), "'w' has data_offsets"),
  "reversed_offsets": (json.dumps({"w": F32([8, 0])}), "'w' has data_offsets"),
  "bool_shape": (json.dumps({"w": F32([0, 4], (True,))}), "'w' has shape"),
  "negative_shape": (json.dumps({"w": F32([0, 8], (-2,))}), "'w' has shape"),
  "past_the_file": (json.dumps({"w": F32([64, 72])}), "'w' has offsets 64..72 past the end"),
  "size_mismatch": (json.dumps({"w": F32([0, 12])}), "'w' has offsets 0..12 .* needs 8 bytes"),
  "overlap": (json.dumps({"a": F32([0, 8]), "b": F32([4, 12])}), "'a' and 'b' overlap"),
  "duplicate": ('{"w": %s, "w": %s}' % (json.dumps(F32([0, 8])), json.dumps(F32([8, 16]))), "'w' appears twice"),
  "metadata_not_object": (json.dumps({"__metadata__": ["x"], "w": F32([0, 8])}), "'__metadata__' must map str to str"),
  "deeply_nested": ('{"w": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),   # RecursionError in json before
}

@pytest.mark.parametrize("case", list(MALFORMED))
def test_safetensors_malformed_header(tmp_path, case):
  text, why = MALFORMED[case]
  fn = _raw_file(tmp_path / f"{case}.safetensors", text)
  for reader in (safe_load, safe_load_metadata):
    with pytest.raises(ValueError, match=f"{case}.safetensors: corrupt safetensors header: .*{why}"): reader(fn)

def test_safetensors_data_not_covered_by_its_tensors_is_rejected(tmp_path):
  # as the safetensors library (it raises "file not fully covered" / "invalid offset"): bytes after the last tensor and a
  # gap before or between tensors loaded silently here
  data = np.arange(4, dtype="<f4").tobytes()
  st = pytest.importorskip("safetensors.numpy", reason="the reference reader: pip install safetensors")
  for case, text, tail, why in (("trailing", json.dumps({"a": F32([0, 16], (4,))}), b"\0" * 8, "8 bytes after the last tensor"),
                                ("nothing", "{}", b"abcd", "20 bytes after the last tensor"),
                                ("gap_first", json.dumps({"a": F32([8, 16])}), b"", "8 bytes before entry 'a'"),
                                ("gap_between", json.dumps({"a": F32([0, 4], (1,)), "b": F32([8, 16])}), b"", "4 bytes before entry 'b'")):
    fn = _raw_file(tmp_path / f"{case}.safetensors", text, data + tail)
    with pytest.raises(Exception): st.load_file(fn)
    for reader in (safe_load, safe_load_metadata):
      with pytest.raises(ValueError, match=f"{case}.safetensors: corrupt safetensors .*{why}"): reader(fn)
    with pytest.raises(ValueError, match=why): safe_load(Tensor(fn.read_bytes()))
  fn = _raw_file(tmp_path / "ok.safetensors", json.dumps({"a": F32([0, 16], (4,))}), data)
  np.testing.assert_array_equal(safe_load(fn)["a"].numpy(), st.load_file(fn)["a"])

def test_safetensors_wellformed_edge_cases_load(tmp_path):
  # what the checks must still accept: empty tensors anywhere, gaps-free order different from the header's, no entries
  text = json.dumps({"e": F32([3, 3], (0,)), "b": F32([8, 16]), "a": F32([0, 8])})
  data = np.arange(4, dtype="<f4").tobytes()
  sd = safe_load(_raw_file(tmp_path / "ok.safetensors", text, data))
  assert list(sd) == ["e", "b", "a"] and sd["e"].shape == (0,)
  np.testing.assert_array_equal(sd["a"].numpy(), [0, 1])
  np.testing.assert_array_equal(sd["b"].numpy(), [2, 3])
  assert safe_load(_raw_file(tmp_path / "none.safetensors", "{}", b"")) == {}

def test_safetensors_unaligned_offsets_load_as_the_reference_reader(tmp_path):
  # a float32 at byte 1 after a uint8: the safetensors library reads it, and public tinygrad 0.14's safe_save writes such
  # files (in order, unaligned: its state dict of a bias-free conv before a BatchNorm put the int64 count at byte 60);
  # it was refused here as a corrupt header ("'b' starts at 1, not a multiple of its item size 4")
  text = json.dumps({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}, "b": F32([1, 9]), "c": {"dtype": "I64", "shape": [1], "data_offsets": [9, 17]}})
  data = bytes([7]) + np.array([1.5, -2.0], "<f4").tobytes() + np.array([-3], "<i8").tobytes()
  fn = _raw_file(tmp_path / "u.safetensors", text, data)
  for src in (fn, Tensor(fn.read_bytes())):
    sd = safe_load(src)
    assert sd["a"].tolist() == [7] and sd["b"].tolist() == [1.5, -2.0] and sd["c"].tolist() == [-3] and sd["c"].dtype == dtypes.int64
  assert safe_load_metadata(fn)["b"]["data_offsets"] == [1, 9]
  if HAVE_ST:
    from safetensors.numpy import load_file
    assert load_file(str(fn))["b"].tolist() == [1.5, -2.0]

def test_load_state_dict_does_not_compute_the_init_it_overwrites():
  # a fresh model's parameters are lazy random inits: each gets an empty buffer the loaded value is copied into, without
  # running the init (GPT-2 small: 124M random numbers, ~3 s) and in one realize; a realized parameter keeps its buffer
  from tinygrad.helpers import GlobalCounters
  m, src = nn.Linear(64, 32), nn.Linear(64, 32)
  sd = {k: Tensor(v.numpy()) for k, v in get_state_dict(src).items()}
  from tinygrad.engine.buffers import base_buffer
  old = base_buffer(m.bias.realize().uop)
  GlobalCounters.reset()
  load_state_dict(m, sd, verbose=False)
  assert GlobalCounters.kernel_count == 2, "one copy per weight, no random init"
  for k, v in get_state_dict(m).items(): np.testing.assert_array_equal(v.numpy(), sd[k].numpy(), err_msg=k)
  assert base_buffer(m.bias.uop) is old, "a realized parameter is loaded in place"

def test_load_state_dict_of_a_fresh_models_own_tensors_keeps_their_values():
  # a source that is the model's own lazy parameter (its own state dict loaded back, a weight tied or swapped on load) was
  # read from the empty buffer that replaces the init: zeros or garbage loaded without an error
  class Two:
    def __init__(self): self.a, self.b = nn.Linear(3, 2), nn.Linear(3, 2)
  Tensor.manual_seed(7)
  ref = {k: v.numpy() for k, v in get_state_dict(Two()).items()}
  Tensor.manual_seed(7)
  m = Two()
  load_state_dict(m, get_state_dict(m), verbose=False)
  for k, v in get_state_dict(m).items(): np.testing.assert_array_equal(v.numpy(), ref[k], err_msg=k)
  Tensor.manual_seed(7)
  m = Two()
  sd = get_state_dict(m)
  load_state_dict(m, {"a.weight": sd["b.weight"], "b.weight": sd["a.weight"], "a.bias": sd["a.bias"], "b.bias": sd["a.bias"]}, verbose=False)
  np.testing.assert_array_equal(m.a.weight.numpy(), ref["b.weight"])
  np.testing.assert_array_equal(m.b.weight.numpy(), ref["a.weight"])
  np.testing.assert_array_equal(m.b.bias.numpy(), ref["a.bias"])

def test_pickle_tensor_keeps_its_data():
  # public tinygrad pickles a realized tensor's buffer with its bytes (torch.save-like); the data must come back after the
  # original is gone, and in another process, where the buffer's node must not be mistaken for one of that process's
  import pickle, subprocess, sys
  t = Tensor.rand(10, 10).realize()
  half = (Tensor.arange(6).reshape(2, 3) * 2).realize()
  lazy = half + 1
  ref, ref_lazy = t.numpy(), lazy.numpy()
  blob = pickle.dumps((t, lazy))
  del t, half, lazy
  t2, lazy2 = pickle.loads(blob)
  assert t2.uop.is_realized
  np.testing.assert_array_equal(t2.numpy(), ref)
  np.testing.assert_array_equal(lazy2.numpy(), ref_lazy)
  other = ("import pickle, sys; from tinygrad import Tensor; a = Tensor([7.0, 8.0]).realize(); b = Tensor([9.0]).realize();"
           "t, l = pickle.loads(sys.stdin.buffer.read()); print(t.numpy().tobytes().hex(), l.tolist(), a.tolist(), b.tolist())")
  out = subprocess.run([sys.executable, "-c", other], input=blob, capture_output=True, check=True, env=os.environ).stdout.decode().split(" ", 1)
  assert bytes.fromhex(out[0]) == ref.tobytes()
  assert out[1].strip() == f"{ref_lazy.tolist()} [7.0, 8.0] [9.0]"

def test_pickle_tensor_is_its_value_alone():
  # a tensor with live views pickles (the engine's weak map of them is not pickled), and a realized tensor's pickle holds its
  # own bytes, not the graph (and input buffers) it was computed from, which it keeps for backward
  import pickle
  big = Tensor.rand(4096).realize()
  s = (big * 2).sum().realize()
  assert len(pickle.dumps(s)) < 4096
  t = Tensor([1.0, 2.0, 3.0], requires_grad=True).realize()
  v = t[1:]
  t.grad = Tensor([0.5, 0.5, 0.5])
  t2 = pickle.loads(pickle.dumps(t))
  assert t2.tolist() == [1.0, 2.0, 3.0] and t2.requires_grad is True and t2.grad.tolist() == [0.5, 0.5, 0.5] and v.tolist() == [2.0, 3.0]

def test_pickle_keeps_an_implicit_gradient_lazy_as_the_original_one():
  # a gradient backward() gave a requires_grad=None tensor stays lazy through an update (never computed: torch has none),
  # and one that read the old values raises when read. Unpickled, the tensor was missing from the index of such gradients
  # (grad_holders), so the update computed it early: [1, 1, 1] where the original raises
  import pickle
  x = Tensor([1.0, 2.0, 3.0]).realize()
  w = Tensor([1.0, 1.0, 1.0], requires_grad=True).realize()
  (x * w * w).sum().backward()
  x2, w2 = pickle.loads(pickle.dumps((x, w)))
  for a, b in ((x, w), (x2, w2)):
    b += 1
    b.realize()
    with pytest.raises(RuntimeError, match="did not ask for one"): a.grad.tolist()

def test_pickle_tensors_out_of_band():
  # protocol 5 passes a buffer's bytes out of band (buffer_callback) and in band; each buffer handed to loads is copied in
  # and let go, not held until the whole load ends (peak: one buffer, not all of them)
  import pickle, tracemalloc
  n, size = 6, 1 << 20
  ts = [Tensor.full((size,), float(i)).contiguous().realize() for i in range(n)]
  for i, t in enumerate(pickle.loads(pickle.dumps(ts, protocol=5))): assert t[::4096].tolist() == [float(i)] * (size // 4096)
  oob: list = []
  blob = pickle.dumps(ts, protocol=5, buffer_callback=oob.append)
  assert len(oob) == n and len(blob) < 10000
  datas = [bytes(b.raw()) for b in oob]
  del oob
  tracemalloc.start()
  try:
    back = pickle.loads(blob, buffers=(bytearray(d) for d in datas))
    peak = tracemalloc.get_traced_memory()[1]
  finally: tracemalloc.stop()
  assert peak < 2.5 * size * 4, peak
  for i, t in enumerate(back): assert t[::4096].tolist() == [float(i)] * (size // 4096)

def test_deepcopy_of_a_model_has_buffers_of_its_own():
  # copy.deepcopy(net) (a DQN target network, an EMA model) is independent of net, as torch's: a write into net's realized
  # weights must not show in the copy (it shared their buffers), and the copy's own writes not in net
  import copy
  net = nn.Linear(3, 2)
  for p in get_parameters(net): p.realize()
  x = Tensor([[1.0, 2.0, 3.0]])
  y0 = net(x).numpy()
  tgt = copy.deepcopy(net)
  np.testing.assert_array_equal(tgt(x).numpy(), y0)
  net.weight.assign(net.weight * 0).realize()
  np.testing.assert_array_equal(tgt(x).numpy(), y0)
  tgt.bias.assign(tgt.bias + 1).realize()
  np.testing.assert_array_equal(net(x).numpy(), np.broadcast_to(net.bias.numpy(), (1, 2)))
  np.testing.assert_allclose(tgt(x).numpy(), y0 + 1, rtol=1e-6)
