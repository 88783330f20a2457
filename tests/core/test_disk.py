"""The DISK device: a file as a tensor ("disk:/path"), read and written in place, as public tinygrad's."""
import pathlib
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, dtypes, Device
from tinygrad.dtype import to_numpy

@pytest.fixture
def fn(tmp_path):
  p = tmp_path / "data.bin"
  np.arange(24, dtype=np.float32).tofile(p)
  return p

def test_empty_on_a_file_reads_its_bytes(fn):
  t = Tensor.empty(24, dtype=dtypes.float32, device=f"disk:{fn}")
  assert t.device == f"DISK:{fn}" and t.shape == (24,) and t.dtype == dtypes.float32
  np.testing.assert_equal(t.numpy(), np.arange(24, dtype=np.float32))
  np.testing.assert_equal(t.to("CPU").numpy(), np.arange(24, dtype=np.float32))
  assert t.to("CPU").device == "CPU" and t[:3].tolist() == [0.0, 1.0, 2.0] and t[5].item() == 5.0
  assert t.reshape(4, 6).data().tolist()[1] == [6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
  # any case of "disk" names one device per file, the path kept as given
  assert Device[f"DISK:{fn}"] is Device[f"disk:{fn}"] and Device[f"disk:{fn}"].device == f"DISK:{fn}"

VIEWS = {
  "slice": (lambda t: t[4:9], lambda a: a[4:9]),
  "row": (lambda t: t.reshape(4, 6)[2], lambda a: a.reshape(4, 6)[2]),
  "step": (lambda t: t[1::3], lambda a: a[1::3]),
  "permute": (lambda t: t.reshape(4, 6).T, lambda a: a.reshape(4, 6).T),
  "flip": (lambda t: t.reshape(4, 6).flip(1), lambda a: a.reshape(4, 6)[:, ::-1]),
  "negative step": (lambda t: t.reshape(2, 3, 4)[:, ::-2, 1:3], lambda a: a.reshape(2, 3, 4)[:, ::-2, 1:3]),
  "reshape of a permute": (lambda t: t.reshape(4, 6).T.reshape(24), lambda a: a.reshape(4, 6).T.reshape(24)),
  "expand": (lambda t: t[:3].reshape(3, 1).expand(3, 2), lambda a: np.broadcast_to(a[:3].reshape(3, 1), (3, 2))),
  "pad": (lambda t: t[:4].pad(((1, 2),)), lambda a: np.pad(a[:4], (1, 2))),
  "empty": (lambda t: t[3:3], lambda a: a[3:3]),
}

@pytest.mark.parametrize("view", VIEWS)
def test_views_read_as_numpy_reads_the_file(fn, view):
  tv, nv = VIEWS[view]
  t, a = Tensor.empty(24, dtype=dtypes.float32, device=f"disk:{fn}"), np.fromfile(fn, dtype=np.float32)
  np.testing.assert_equal(tv(t).numpy(), nv(a))
  np.testing.assert_equal(tv(t).to("CPU").numpy(), nv(a))
  assert tv(t).shape == nv(a).shape

def test_bitcast_is_a_view_of_the_bytes(fn):
  t, a = Tensor.empty(24, dtype=dtypes.float32, device=f"disk:{fn}"), np.fromfile(fn, dtype=np.float32)
  np.testing.assert_equal(t.bitcast(dtypes.int32).numpy(), a.view(np.int32))
  np.testing.assert_equal(t[2:4].bitcast(dtypes.uint8).numpy(), a[2:4].view(np.uint8))
  np.testing.assert_equal(t.reshape(4, 6)[1:3].bitcast(dtypes.float16).numpy(), a.reshape(4, 6)[1:3].view(np.float16))
  u8 = Tensor.empty(96, dtype=dtypes.uint8, device=f"disk:{fn}")
  np.testing.assert_equal(u8[8:16].bitcast(dtypes.float32).numpy(), a[2:4])
  # writing through a bitcast view changes the file's bytes
  u8.reshape(24, 4)[1:2].bitcast(dtypes.float32).assign(Tensor([7.5]))
  assert np.fromfile(fn, dtype=np.float32)[1] == 7.5
  with pytest.raises(ValueError, match="contiguous range"): t.reshape(4, 6).T.bitcast(dtypes.float16)
  with pytest.raises(ValueError, match="whole"): u8[:3].bitcast(dtypes.float16)
  # also the RuntimeError public tinygrad raises (and a bitcast off the disk here): it was only a ValueError (upstream's disk suite)
  for bad in (lambda: u8[:3].bitcast(dtypes.float16), lambda: t.reshape(4, 6).T.bitcast(dtypes.float16), lambda: t[0].bitcast(dtypes.float16)):
    with pytest.raises(RuntimeError): bad()

def test_assign_and_setitem_write_the_file(fn):
  t = Tensor.empty(24, dtype=dtypes.float32, device=f"disk:{fn}")
  before = t[0:4].to("CPU")   # read when built: keeps the old values, as a lazy tensor keeps the value it was built from
  t[0:4].assign(Tensor([10.0, 11.0, 12.0, 13.0]))
  t[5] = 50.0
  t[6:8] = [60.0, 70.0]
  t.reshape(4, 6)[3, ::2] = Tensor([1.0, 2.0, 3.0])
  t.reshape(4, 6)[:, 5] = Tensor.full((4,), -1.0)
  want = np.arange(24, dtype=np.float32)
  want[0:4], want[5], want[6:8] = [10, 11, 12, 13], 50, [60, 70]
  w = want.reshape(4, 6)
  w[3, ::2], w[:, 5] = [1, 2, 3], -1
  np.testing.assert_equal(np.fromfile(fn, dtype=np.float32), want)
  np.testing.assert_equal(t.numpy(), want)
  np.testing.assert_equal(before.numpy(), [0.0, 1.0, 2.0, 3.0])
  t.assign(Tensor.arange(24, dtype=dtypes.float32) * 2)   # a lazy value is computed on its device, then written
  np.testing.assert_equal(np.fromfile(fn, dtype=np.float32), np.arange(24, dtype=np.float32) * 2)

def test_writes_that_have_no_place_raise(fn):
  t = Tensor.empty(24, dtype=dtypes.float32, device=f"disk:{fn}")
  with pytest.raises(ValueError, match="broadcast"): t[:3].reshape(3, 1).expand(3, 2).assign(Tensor.ones(3, 2))
  with pytest.raises(ValueError, match="padding"): t[:4].pad(((1, 1),)).assign(Tensor.ones(6))
  with pytest.raises(TypeError, match="dtype"): t[:2].assign(Tensor([1, 2], dtype=dtypes.int32))
  with pytest.raises(NotImplementedError, match="advanced"): t[Tensor([0, 2])] = 5.0
  np.testing.assert_equal(np.fromfile(fn, dtype=np.float32), np.arange(24, dtype=np.float32))

def test_copy_to_a_file_and_tensor_on_a_file(tmp_path):
  p = tmp_path / "out.bin"
  d = (Tensor.arange(6, dtype=dtypes.int32) * 3).to(f"disk:{p}")
  assert d.device == f"DISK:{p}"
  np.testing.assert_equal(np.fromfile(p, dtype=np.int32), np.arange(6) * 3)
  np.testing.assert_equal(d[2:4].numpy(), [6, 9])
  q = tmp_path / "made.bin"
  Tensor([[1, 2], [3, 4]], dtype=dtypes.int16, device=f"disk:{q}")
  np.testing.assert_equal(np.fromfile(q, dtype=np.int16), [1, 2, 3, 4])
  # a new file is created (and an existing one extended, never cut) to the size the tensor needs
  r = tmp_path / "new.bin"
  Tensor.empty(8, dtype=dtypes.uint8, device=f"disk:{r}")[2:4].assign(Tensor([7, 9], dtype=dtypes.uint8))
  assert r.read_bytes() == bytes([0, 0, 7, 9, 0, 0, 0, 0])

def test_a_0d_tensor_on_a_file_reads_back(tmp_path):
  # Tensor(3.5, device="disk:...") was a CONST on the file, which runs no kernels: numpy/tolist/item raised
  # NotImplementedError (public tinygrad 0.14 returns 3.5); it is written to the file as a list's values are
  for v, dt in ((3.5, dtypes.float32), (7, dtypes.int32), (True, dtypes.bool), (-2, dtypes.int8)):
    p = tmp_path / f"{dt.name}.bin"
    t = Tensor(v, dtype=dt, device=f"disk:{p}")
    assert t.shape == () and t.tolist() == v and t.item() == v and t.numpy().shape == () and t.numpy() == v
    assert bytes(t.data()) == p.read_bytes() == np.array(v, dtype=to_numpy(dt)).tobytes()

def test_a_copy_off_a_file_keeps_what_it_read(fn):
  # "a tensor read before a write keeps what it read" (docs/guide.md): to() read at once, clone(device) was a lazy copy
  # that read the file when realized, after the write ([100, 101, 102, 103] for [0, 1, 2, 3]), and of a flipped or strided
  # view raised NotImplementedError (a kernel on DISK), where to() reads any view
  t = Tensor.empty(24, dtype=dtypes.float32, device=f"disk:{fn}")
  reads = [t[:4].to("CPU"), t[:4].clone("CPU"), t[:4].flip(0).clone("PYTHON"), t.reshape(4, 6)[:2, :2].clone("CPU")]
  t.assign(Tensor.arange(24, dtype=dtypes.float32) + 100).realize()
  assert [r.tolist() for r in reads] == [[0, 1, 2, 3], [0, 1, 2, 3], [3, 2, 1, 0], [[0, 1], [6, 7]]]
  assert reads[1].device == "CPU" and reads[2].device == "PYTHON" and t[:2].tolist() == [100, 101]

def test_a_clone_is_a_copy_or_an_error(fn, tmp_path):
  # clone() with no device realized a copy on the file itself, which is the file: a later write showed in it ([[9, 9], [9,
  # 9]] for [[0, 1], [2, 3]]) and a write into it changed the file; of a slice it raised "runs no kernels"
  t = Tensor.empty(4, dtype=dtypes.float32, device=f"disk:{fn}")
  for f in (lambda: t.clone(), lambda: t.reshape(2, 2).clone(), lambda: t[1:3].clone(t.device)):
    with pytest.raises(ValueError, match="another device or file"): f()
  c, d = t.reshape(2, 2).clone(f"disk:{tmp_path / 'copy.bin'}"), t[1:3].clone(f"disk:{tmp_path / 'part.bin'}")
  t.assign(Tensor.full((4,), 9.0)).realize()
  assert c.tolist() == [[0, 1], [2, 3]] and d.tolist() == [1, 2] and np.fromfile(tmp_path / "part.bin", dtype=np.float32).tolist() == [1, 2]

def test_computing_on_a_file_is_a_clear_error(fn):
  t = Tensor.empty(24, dtype=dtypes.float32, device=f"disk:{fn}")
  for f in (lambda: (t + 1).realize(), lambda: t.sum().item(), lambda: t.cast(dtypes.float16).numpy(), lambda: t[:2].cat(t[4:6]).numpy()):
    with pytest.raises(NotImplementedError, match="runs no kernels"): f()
  np.testing.assert_equal((t.to("CPU") + 1).numpy(), np.arange(24, dtype=np.float32) + 1)

def test_tensor_of_a_path_is_the_file(fn):
  t = Tensor(pathlib.Path(fn))
  assert t.device == f"DISK:{pathlib.Path(fn).resolve()}" and t.dtype == dtypes.uint8 and t.shape == (96,)
  np.testing.assert_equal(t.numpy(), np.fromfile(fn, dtype=np.uint8))
  f = Tensor(pathlib.Path(fn), dtype=dtypes.float32)
  assert f.shape == (24,)
  np.testing.assert_equal(f[3:5].numpy(), [3.0, 4.0])
  c = Tensor(pathlib.Path(fn), device="CPU")   # a device given: the bytes read into it
  assert c.device == "CPU" and c.shape == (96,)
  empty = pathlib.Path(fn).parent / "empty.bin"
  empty.touch()
  assert Tensor(empty).shape == (0,) and Tensor(empty).numpy().size == 0
  with pytest.raises(FileNotFoundError): Tensor(pathlib.Path(fn).parent / "missing.bin")
  assert not (pathlib.Path(fn).parent / "missing.bin").exists()

def test_shard_of_a_file_slice(fn):
  t = Tensor.empty(4, 6, dtype=dtypes.float32, device=f"disk:{fn}")[1:3].shard(("CPU:0", "CPU:1"), axis=0)
  np.testing.assert_equal(t.to("CPU").numpy(), np.arange(24, dtype=np.float32).reshape(4, 6)[1:3])

def test_safetensors_round_trip_through_a_file_tensor(tmp_path):
  from tinygrad.nn.state import safe_save, safe_load
  p = tmp_path / "w.safetensors"
  safe_save({"a": Tensor([[1.0, 2.0]]), "b": Tensor([3, 4], dtype=dtypes.int8)}, str(p))
  got = safe_load(Tensor(p))   # the file as a DISK tensor, as public tinygrad's Tensor(path) is
  np.testing.assert_equal(got["a"].numpy(), [[1.0, 2.0]])
  np.testing.assert_equal(got["b"].numpy(), [3, 4])

# any chain of slices (with steps), permutes, flips and reshapes reads and writes the file's items numpy's indexing picks
@settings(max_examples=40, deadline=None)
@given(st.data())
def test_random_views_read_and_write_as_numpy(tmp_path_factory, data):
  p = tmp_path_factory.mktemp("disk") / "f.bin"
  a = np.arange(120, dtype=np.int32) * 7
  a.tofile(p)
  shape = data.draw(st.sampled_from([(120,), (4, 30), (2, 3, 20), (5, 4, 6)]))
  # v: the index in the file of each element of the view (a reshape of a strided view is a copy in numpy: indices stay right)
  t, v = Tensor.empty(120, dtype=dtypes.int32, device=f"disk:{p}").reshape(shape), np.arange(120).reshape(shape)
  for _ in range(data.draw(st.integers(1, 3))):
    op = data.draw(st.sampled_from(["slice", "permute", "flip", "reshape"]))
    if op == "slice":
      sl = []
      for n in v.shape:
        b = data.draw(st.integers(0, max(n - 1, 0)))
        e = data.draw(st.integers(b + 1, n)) if n else 0
        s = data.draw(st.sampled_from([1, 2, 3, -1, -2]))
        sl.append(slice(b, e, s) if s > 0 else slice(e - 1, b - 1 if b else None, s))
      t, v = t[tuple(sl)], v[tuple(sl)]
    elif op == "permute":
      order = data.draw(st.permutations(range(v.ndim)))
      t, v = t.permute(order), v.transpose(order)
    elif op == "flip":
      ax = data.draw(st.integers(0, v.ndim - 1))
      t, v = t.flip(ax), np.flip(v, ax)
    else: t, v = t.reshape(v.size), v.reshape(v.size)
  np.testing.assert_equal(t.numpy(), a[v])
  new = np.arange(v.size, dtype=np.int32).reshape(v.shape) + 1000
  t.assign(Tensor(new))
  want = a.copy()
  want[v] = new
  np.testing.assert_equal(np.fromfile(p, dtype=np.int32), want)

def test_disk_without_a_file_says_so():
  from tinygrad.device import DeviceError
  with pytest.raises(DeviceError, match="disk:/path"): Tensor([1, 2], device="DISK")

def test_pickle_of_a_disk_tensor_is_its_file_range(tmp_path):
  # a DISK tensor pickles as the range of its file, not as bytes written to a fresh buffer: that wrote them at the file's
  # start (a bitcast view of bytes 8..16 overwrote bytes 0..8)
  import pickle
  p = tmp_path / "r.bin"
  p.write_bytes(bytes(range(16)))
  t = Tensor.empty(16, dtype=dtypes.uint8, device=f"disk:{p}")
  v = t[8:16].bitcast(dtypes.float32)
  v2 = pickle.loads(pickle.dumps(v))
  assert p.read_bytes() == bytes(range(16))
  assert v2.device == t.device and v2.to("CPU").numpy().tobytes() == bytes(range(8, 16))
  t2 = pickle.loads(pickle.dumps(t))
  assert t2[4:6].tolist() == [4, 5]
  t2[0:2] = Tensor([99, 98], dtype=dtypes.uint8)   # the loaded tensor is the file, as the one pickled
  assert p.read_bytes()[:3] == bytes([99, 98, 2])
