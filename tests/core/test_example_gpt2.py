"""examples/gpt2.py against a GPT-2 written here in torch: the same random weights (a safetensors file with GPT-2's Hugging Face
names and Conv1D layout), greedy decoding, the same tokens, with the example's KV cache and jitted one-token step."""
from __future__ import annotations
import os, tempfile
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.nn.state import safe_save
from pathimport import load_file

torch = pytest.importorskip("torch", reason="the GPT-2 reference is torch: pip install torch")
F = torch.nn.functional

def load_example(): return load_file("examples/gpt2.py", "example_gpt2")

def random_gpt2(cfg: dict, seed: int = 0) -> dict[str, np.ndarray]:
  """GPT-2 weights by Hugging Face name, Conv1D weights (in, out), plus the causal-mask buffer the checkpoints carry."""
  rng, d, v, L = np.random.default_rng(seed), cfg["dim"], cfg["vocab_size"], cfg["max_seq_len"]
  n = lambda *s, std=0.02: (rng.standard_normal(s) * std).astype(np.float32)
  sd = {"wte.weight": n(v, d, std=0.2), "wpe.weight": n(L, d, std=0.5), "ln_f.weight": 1 + n(d, std=0.1), "ln_f.bias": n(d)}
  for i in range(cfg["n_layers"]):
    p = f"h.{i}."
    sd |= {p+"ln_1.weight": 1 + n(d, std=0.1), p+"ln_1.bias": n(d), p+"ln_2.weight": 1 + n(d, std=0.1), p+"ln_2.bias": n(d),
           p+"attn.c_attn.weight": n(d, 3*d, std=0.2), p+"attn.c_attn.bias": n(3*d), p+"attn.c_proj.weight": n(d, d, std=0.1),
           p+"attn.c_proj.bias": n(d), p+"mlp.c_fc.weight": n(d, 4*d, std=0.1), p+"mlp.c_fc.bias": n(4*d),
           p+"mlp.c_proj.weight": n(4*d, d, std=0.05), p+"mlp.c_proj.bias": n(d),
           p+"attn.bias": np.tril(np.ones((L, L), np.float32))[None, None]}
  return sd

def torch_greedy(sd: dict[str, np.ndarray], cfg: dict, prompt: list[int], count: int) -> list[int]:
  """GPT-2 in torch, the whole sequence recomputed per token (no cache), greedy."""
  W = {k: torch.from_numpy(v) for k, v in sd.items()}
  d, nh, eps = cfg["dim"], cfg["n_heads"], cfg["norm_eps"]
  def ln(x, p): return F.layer_norm(x, (d,), W[p+".weight"], W[p+".bias"], eps)
  def conv1d(x, p): return x @ W[p+".weight"] + W[p+".bias"]
  toks = list(prompt)
  with torch.no_grad():
    for _ in range(count):
      T = len(toks)
      x = W["wte.weight"][torch.tensor(toks)] + W["wpe.weight"][:T]
      for i in range(cfg["n_layers"]):
        p = f"h.{i}."
        q, k, v = conv1d(ln(x, p+"ln_1"), p+"attn.c_attn").split(d, -1)
        q, k, v = (t.reshape(T, nh, d // nh).transpose(0, 1) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(0, 1).reshape(T, d)
        x = x + conv1d(a, p+"attn.c_proj")
        x = x + conv1d(F.gelu(conv1d(ln(x, p+"ln_2"), p+"mlp.c_fc"), approximate="tanh"), p+"mlp.c_proj")
      logits = ln(x[-1], "ln_f") @ W["wte.weight"].T
      toks.append(int(logits.argmax()))
  return toks

def write_safetensors(sd: dict[str, np.ndarray]) -> str:
  fd, path = tempfile.mkstemp(suffix=".safetensors")
  os.close(fd)
  safe_save({k: Tensor(v) for k, v in sd.items()}, path)
  return path

COUNT = 20

def test_gpt2_greedy_tokens_match_torch():
  ex, prompt = load_example(), [3, 141, 59, 26, 5]
  cfg = ex.MODEL_PARAMS["tiny"]
  sd = random_gpt2(cfg)
  path = write_safetensors(sd)
  try:
    gpt2 = ex.GPT2.build("tiny", path)
    got = gpt2.generate(prompt, COUNT)
  finally: os.unlink(path)
  # the one-token steps ran through the TinyJit over a Variable position: run, capture, then replays
  assert gpt2.model.forward_jit.cnt == COUNT - 1
  want = torch_greedy(sd, cfg, prompt, COUNT)
  assert got == want
  assert len(set(want[len(prompt):])) > 3, "the reference decodes a constant: the check would not see a wrong model"

def test_gpt2_weights_are_transposed_conv1d():
  # a square Conv1D weight loads without a shape error either way: the transpose must still happen (c_proj is (d, d))
  ex = load_example()
  cfg = ex.MODEL_PARAMS["tiny"]
  sd = random_gpt2(cfg, seed=1)
  path = write_safetensors(sd)
  try: model = ex.GPT2.build("tiny", path).model
  finally: os.unlink(path)
  np.testing.assert_array_equal(model.h[0].attn.c_proj.weight.numpy(), sd["h.0.attn.c_proj.weight"].T)
  np.testing.assert_array_equal(model.lm_head.weight.numpy(), sd["wte.weight"])

def test_gpt2_prompt_past_context_raises():
  ex = load_example()
  with pytest.raises(ValueError, match="MAX_CONTEXT"): ex.GPT2.build("tiny").generate([1] * ex.MAX_CONTEXT, 1)

def test_gpt2_decode_bench_torch_side_is_gpt2(tmp_path):
  # the bench's torch row (a KV-cache decode) must decode what the uncached reference here does, over the bench's own weights
  bench = load_file("bench/workloads/gpt2_decode.py", "bench_gpt2_decode")
  c = dict(bench.QUICK["gpt2_decode_tiny"], data=str(tmp_path))
  bench.prepare(c)
  call = bench.build("torch", c)
  outs = [call() for _ in range(12)]
  sd = bench.read_safetensors(str(tmp_path / "weights.safetensors"))
  want = torch_greedy(sd, dict(c, norm_eps=1e-5), bench.PROMPT, 12)[len(bench.PROMPT):]
  assert [int(o["token"][0]) for o in outs] == want
  assert bench.check(outs, outs, c) is None and bench.check(outs[:-1] + [{"token": outs[-1]["token"] + 1}], outs, c) is not None
