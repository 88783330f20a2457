"""nn.state.gguf_load on tiny GGUF files written by the gguf package (the optional extra it reads them with)."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes
from tinygrad.nn.state import gguf_load
gguf = pytest.importorskip("gguf", reason="gguf_load uses the optional gguf package: pip install gguf")

def _write(path, tensors, quant=None):
  w = gguf.GGUFWriter(str(path), "llama")
  w.add_uint32("llama.context_length", 128)
  w.add_string("general.name", "tiny")
  w.add_array("tokenizer.ggml.scores", [0.5, 1.5])
  for name, arr in tensors.items():
    if quant is not None and arr.dtype == np.float32:
      w.add_tensor(name, gguf.quants.quantize(arr, quant), raw_dtype=quant)
    else: w.add_tensor(name, arr)
  w.write_header_to_file()
  w.write_kv_data_to_file()
  w.write_tensors_to_file()
  w.close()

def test_gguf_plain_dtypes_and_metadata(tmp_path):
  rng = np.random.default_rng(0)
  ts = {"w": rng.standard_normal((3, 5)).astype(np.float32), "h": rng.standard_normal((2, 4)).astype(np.float16),
        "i": np.arange(6, dtype=np.int32).reshape(2, 3), "v": np.arange(7, dtype=np.int8)}
  _write(tmp_path / "t.gguf", ts)
  for src in (tmp_path / "t.gguf", Tensor((tmp_path / "t.gguf").read_bytes())):
    kv, sd = gguf_load(src)
    assert kv["llama.context_length"] == 128 and kv["general.name"] == "tiny" and kv["general.architecture"] == "llama"
    np.testing.assert_allclose(kv["tokenizer.ggml.scores"], [0.5, 1.5])
    for k, v in ts.items():
      assert sd[k].shape == v.shape and sd[k].numpy().dtype == v.dtype, k
      np.testing.assert_array_equal(sd[k].numpy(), v)

@pytest.mark.parametrize("quant", ["Q8_0", "Q4_0"])
def test_gguf_quantized_dequantizes_like_the_reference(tmp_path, quant):
  q = getattr(gguf.GGMLQuantizationType, quant)
  w = np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)
  _write(tmp_path / "q.gguf", {"w": w}, quant=q)
  _, sd = gguf_load(tmp_path / "q.gguf")
  want = gguf.quants.dequantize(gguf.quants.quantize(w, q), q)
  assert sd["w"].shape == (4, 64) and sd["w"].dtype == dtypes.float32
  np.testing.assert_allclose(sd["w"].numpy(), want, rtol=0, atol=0)
  np.testing.assert_allclose(sd["w"].numpy(), w, atol=0.05 if quant == "Q8_0" else 0.5)   # and it is the weight, quantized

def test_malformed_gguf_raises_one_value_error_naming_the_file(tmp_path):
  _write(tmp_path / "good.gguf", {"w": np.ones((3, 5), np.float32)})
  good = (tmp_path / "good.gguf").read_bytes()
  i = good.find(b"llama.context_length") + len(b"llama.context_length")
  cases = {"truncated": good[:len(good) // 2], "header_only": good[:40], "magic_only": b"GGUF", "empty": b"",
           "huge_kv_count": good[:16] + (2**40).to_bytes(8, "little") + good[24:], "bad_value_type": good[:i] + (200).to_bytes(4, "little") + good[i+4:]}
  for name, data in cases.items():
    (tmp_path / f"{name}.gguf").write_bytes(data)
    with pytest.raises(ValueError, match=f"{name}.gguf: not a valid GGUF file"): gguf_load(tmp_path / f"{name}.gguf")
  with pytest.raises(ValueError, match="GGUF bytes in a Tensor.*not a valid GGUF file"): gguf_load(Tensor(cases["truncated"]))

def _write_part(path, tensors, no, count):
  w = gguf.GGUFWriter(str(path), "llama")
  w.add_uint16("split.no", no)
  w.add_uint16("split.count", count)
  for name, arr in tensors.items(): w.add_tensor(name, arr)
  w.write_header_to_file()
  w.write_kv_data_to_file()
  w.write_tensors_to_file()
  w.close()

def test_a_split_model_loads_whole_from_its_first_part(tmp_path):
  # (llama.cpp's gguf-split: name-00001-of-00003.gguf ...; public tinygrad's gguf_load merges the parts' tensors)
  parts = [{"a": np.arange(4, dtype=np.float32)}, {"b": np.ones((2, 3), np.float32)}, {"c": np.arange(5, dtype=np.int32)}]
  for i, ts in enumerate(parts): _write_part(tmp_path / f"m-{i+1:05d}-of-00003.gguf", ts, i, 3)
  kv, sd = gguf_load(tmp_path / "m-00001-of-00003.gguf")
  assert kv["split.count"] == 3 and sorted(sd) == ["a", "b", "c"]
  for ts in parts:
    for k, v in ts.items(): np.testing.assert_array_equal(sd[k].numpy(), v)
  with pytest.raises(ValueError, match="first part"): gguf_load(tmp_path / "m-00002-of-00003.gguf")
  with pytest.raises(ValueError, match="path of its first part"): gguf_load(Tensor((tmp_path / "m-00001-of-00003.gguf").read_bytes()))
  (tmp_path / "m-00003-of-00003.gguf").unlink()
  with pytest.raises(FileNotFoundError, match="part 3 of 3"): gguf_load(tmp_path / "m-00001-of-00003.gguf")

@pytest.mark.parametrize("count,no", [("3", 0), (2.5, 0), (0, 0), (-5, 0), (2, "x"), (2, 2)])
def test_malformed_split_metadata_is_a_clear_error(tmp_path, count, no):
  # split.count "3" was a bare TypeError ('<=' between str and int), 2.5 'Unknown format code', 0 and -5 loaded as one part
  w = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "llama")
  for k, v in (("split.count", count), ("split.no", no)):
    if isinstance(v, str): w.add_string(k, v)
    elif isinstance(v, float): w.add_float32(k, v)
    else: w.add_int32(k, v)
  w.add_tensor("t", np.arange(3, dtype=np.float32))
  w.write_header_to_file()
  w.write_kv_data_to_file()
  w.write_tensors_to_file()
  w.close()
  with pytest.raises(ValueError, match=r"m.gguf: not a valid GGUF file \(split.count"): gguf_load(tmp_path / "m.gguf")
  with pytest.raises(ValueError, match=r"Tensor>: not a valid GGUF file \(split.count"): gguf_load(Tensor((tmp_path / "m.gguf").read_bytes()))

@pytest.mark.parametrize("quant", ["Q4_0", "Q4_1", "Q5_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS", "MXFP4"])
def test_ggml_data_to_tensor_decodes_blocks_like_the_reference(quant):
  # public tinygrad's ggml_data_to_tensor(raw bytes, n, type id): n float32 values, also at its tinygrad.llm.gguf path
  from tinygrad.llm.gguf import ggml_data_to_tensor
  q = getattr(gguf.GGMLQuantizationType, quant)
  elems, nbytes = gguf.GGML_QUANT_SIZES[q]
  try: raw = gguf.quants.quantize(np.random.default_rng(2).standard_normal(3 * elems).astype(np.float32) * 4, q)
  except NotImplementedError: raw = np.random.default_rng(2).integers(0, 256, 3 * nbytes, dtype=np.uint8)   # (no quantizer: any bits)
  got = ggml_data_to_tensor(Tensor(raw.reshape(-1)), 3 * elems, q.value)
  assert got.dtype == dtypes.float32 and got.shape == (3 * elems,)
  np.testing.assert_array_equal(got.numpy(), gguf.quants.dequantize(raw, q).reshape(-1))

def test_ggml_data_to_tensor_decodes_q1_0():
  # Q1_0 (type 41): the gguf package (0.19) knows its block size but has no decoder, so it was a ValueError; 128 values of
  # one bit each (least significant first) after a float16 scale d: d for a 1, -d for a 0 (public tinygrad's test's reference)
  from tinygrad.nn.state import ggml_data_to_tensor
  rng = np.random.default_rng(3)
  bits, scales = rng.integers(0, 2, (3, 128)), np.array([2.0, -0.5, 3.25], np.float16)
  raw = np.concatenate([np.concatenate([np.frombuffer(d.tobytes(), np.uint8), np.packbits(b, bitorder="little")]) for d, b in zip(scales, bits)])
  want = (scales.astype(np.float32)[:, None] * (bits * 2 - 1)).reshape(-1)
  got = ggml_data_to_tensor(Tensor(raw), 3 * 128, 41)
  assert got.dtype == dtypes.float32 and got.shape == (384,)
  np.testing.assert_array_equal(got.numpy(), want)

def test_ggml_data_to_tensor_plain_types_and_errors():
  from tinygrad.nn.state import ggml_data_to_tensor
  vals = np.array([1.5, -2.25, 3.0], np.float16)
  got = ggml_data_to_tensor(Tensor(np.frombuffer(vals.tobytes() + b"\x00" * 6, np.uint8)), 3, 1)   # F16, bytes past n ignored
  assert got.dtype == dtypes.float16 and got.tolist() == vals.tolist()
  assert ggml_data_to_tensor(Tensor(np.arange(4, dtype=np.int32).view(np.uint8)), 4, 26).tolist() == [0, 1, 2, 3]   # I32
  with pytest.raises(ValueError, match="unknown GGML type 1337"): ggml_data_to_tensor(Tensor.empty(512, dtype=dtypes.uint8), 256, 1337)
  with pytest.raises(ValueError, match="multiple"): ggml_data_to_tensor(Tensor.empty(34, dtype=dtypes.uint8), 31, 8)
