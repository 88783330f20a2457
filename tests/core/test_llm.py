"""tinygrad.llm (the GGUF transformer, the tokenizer, `python -m tinygrad.llm`) on tiny GGUF files with random weights,
written by the gguf package: checked against a numpy forward pass written here and, where its interpreter is installed,
against public tinygrad 0.14's tinygrad.llm on the same files."""
import json, os, subprocess, sys
from pathlib import Path
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor
from tinygrad.llm.model import Transformer, pairwise_topk
from tinygrad.llm.cli import SimpleTokenizer
gguf = pytest.importorskip("gguf", reason="tinygrad.llm reads GGUF files with the optional gguf package: pip install gguf")

REF_PY = os.environ.get("TINYGRAD_014_PYTHON", "/tmp/tinygrad-0.14-venv/bin/python")
ROOT = Path(__file__).resolve().parents[2]

# GPT-2's byte-level alphabet, as GGUF BPE vocabularies spell tokens: printable bytes are themselves, the rest move above 255
_BS = [*range(33, 127), *range(161, 173), *range(174, 256)]
_BYTE_CHR = {b: chr(b) for b in _BS} | {b: chr(256 + i) for i, b in enumerate(b for b in range(256) if b not in _BS)}
def _spell(s: str) -> str: return "".join(_BYTE_CHR[b] for b in s.encode())
MERGES = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), (" ", "w"), (" w", "o"), (" wo", "r"), ("l", "d"), (" wor", "ld"),
          ("i", "n"), (" ", "t"), (" t", "he")]
SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
# every printable ASCII character and newline, then the merged pieces in merge order (their ids are their ranks), then control tokens
TOKENS = [_spell(chr(c)) for c in range(32, 127)] + [_spell("\n")] + [_spell(a + b) for a, b in MERGES] + SPECIAL
TID = {t: i for i, t in enumerate(TOKENS)}

# the hybrids' delta-net blocks: 4 value heads of 8 over 2 key heads of 8 (kimi-linear: 4 of each), a conv of 4 taps
SSM = dict(H=4, K=8, V=8, taps=4)

def _write(path: Path, arch="llama", dim=64, n_heads=4, n_kv_heads=2, hidden=96, blocks=2, ctx=48, experts=0, used=0,
           qk_norm=False, bias=False, tied=False, kv_lora=0, seed=0, uniform_decay=False) -> tuple[dict, dict]:
  """A GGUF model with random weights, each one a float16 value (HALF=0 and HALF=1 load the same numbers); returns (its
  weights as numpy, the settings the numpy reference needs). qwen35 and kimi-linear are hybrids of 3 blocks: delta-net,
  attention (qwen35: gated, partial RoPE; kimi-linear: MLA without RoPE), delta-net. uniform_decay: kimi-linear's decay is
  one number per head (its per-channel projection zero, its bias the same across a head's channels)."""
  rng, hd, V = np.random.default_rng(seed), dim // n_heads, len(TOKENS)
  hybrid, kimi = arch in ("qwen35", "kimi-linear"), arch == "kimi-linear"
  Hk = n_heads if kimi else 2   # key heads of the delta-net blocks
  if hybrid: blocks = 3
  w = gguf.GGUFWriter(str(path), arch)
  for key, val in [("context_length", ctx), ("embedding_length", dim), ("block_count", blocks), ("attention.head_count", n_heads)] + \
                  ([] if kimi else [("attention.head_count_kv", n_kv_heads)]) + ([("expert_count", experts), ("expert_used_count", used),
                  ("expert_feed_forward_length", hidden)] if experts else [("feed_forward_length", hidden)]):
    w.add_uint32(f"{arch}.{key}", val)
  if kimi:   # per block: 0 marks a delta-net (KDA) block
    w.add_array(f"{arch}.attention.head_count_kv", [0, n_kv_heads, 0])
    w.add_uint32(f"{arch}.kda.head_dim", SSM["K"]); w.add_uint32(f"{arch}.ssm.conv_kernel", SSM["taps"])
  elif hybrid:   # every second block attends
    for key, val in [("full_attention_interval", 2), ("ssm.conv_kernel", SSM["taps"]), ("ssm.state_size", SSM["K"]), ("ssm.group_count", Hk),
                     ("ssm.time_step_rank", SSM["H"]), ("ssm.inner_size", SSM["H"] * SSM["V"]), ("rope.dimension_count", hd // 2)]:
      w.add_uint32(f"{arch}.{key}", val)
  w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
  w.add_float32(f"{arch}.rope.freq_base", 10000.0)
  if kv_lora:   # MLA (deepseek2): heads of 16 + 8 rotated dims from a kv_lora-rank latent, values of 16
    for key, val in [("attention.kv_lora_rank", kv_lora), ("attention.key_length", 24), ("attention.value_length", 16), ("rope.dimension_count", 8)]:
      w.add_uint32(f"{arch}.{key}", val)
  w.add_string("general.name", f"tiny-{arch}")
  w.add_string("tokenizer.ggml.model", "gpt2")
  w.add_string("tokenizer.ggml.pre", "llama-bpe")
  w.add_array("tokenizer.ggml.tokens", TOKENS)
  w.add_array("tokenizer.ggml.token_type", [3 if t in SPECIAL else 1 for t in TOKENS])
  w.add_array("tokenizer.ggml.merges", [f"{_spell(a)} {_spell(b)}" for a, b in MERGES])
  w.add_uint32("tokenizer.ggml.bos_token_id", TID["<|begin_of_text|>"])
  w.add_uint32("tokenizer.ggml.eos_token_id", TID["<|eot_id|>"])
  W: dict[str, np.ndarray] = {}
  def add(name, *shape, scale=None, norm=False, value=None):
    a = value if value is not None else 1 + 0.1 * rng.standard_normal(shape) if norm else rng.standard_normal(shape) * (scale or shape[-1] ** -0.5)
    W[name] = a.astype(np.float16).astype(np.float32)
    w.add_tensor(name, W[name])
  add("token_embd.weight", V, dim, scale=1.0)
  H, K, Vd, taps = SSM["H"], SSM["K"], SSM["V"], SSM["taps"]
  for i in range(blocks):
    p = f"blk.{i}."
    add(p + "attn_norm.weight", dim, norm=True)
    if hybrid and i != 1:   # a delta-net block
      if kimi:   # q, k, v and their convs stored apart; low-rank gate and decay projections
        for n in "qkv": add(p + f"attn_{n}.weight", H * K, dim)
        for n in "qkv": add(p + f"ssm_conv1d_{n}.weight", H * K, 1, taps, scale=0.5)
        add(p + "ssm_g_a.weight", Vd, dim); add(p + "ssm_g_b.weight", H * Vd, Vd)
        add(p + "ssm_f_a.weight", K, dim); add(p + "ssm_f_b.weight", H * K, K, value=np.zeros((H * K, K)) if uniform_decay else None)
        add(p + "ssm_dt.bias", H * K, value=np.repeat(rng.standard_normal(H), K) if uniform_decay else rng.standard_normal(H * K))
        add(p + "ssm_a", H, 1, value=-np.exp(rng.uniform(-1, 0.5, (H, 1))))
        add(p + "attn_output.weight", dim, H * Vd)
      else:
        add(p + "attn_qkv.weight", 2 * Hk * K + H * Vd, dim); add(p + "attn_gate.weight", H * Vd, dim); add(p + "ssm_alpha.weight", H, dim)
        add(p + "ssm_conv1d.weight", 2 * Hk * K + H * Vd, taps, scale=0.5)
        add(p + "ssm_dt.bias", H, scale=1.0); add(p + "ssm_a", H, value=-np.exp(rng.uniform(-1, 0.5, H)))
        add(p + "ssm_out.weight", dim, H * Vd)
      add(p + "ssm_beta.weight", H, dim); add(p + "ssm_norm.weight", Vd, norm=True)
    elif kv_lora:
      add(p + "attn_q.weight", n_heads * 24, dim); add(p + "attn_kv_a_mqa.weight", kv_lora + 8, dim)
      add(p + "attn_kv_a_norm.weight", kv_lora, norm=True)
      add(p + "attn_k_b.weight", n_heads, kv_lora, 16); add(p + "attn_v_b.weight", n_heads, 16, kv_lora)
    if not (hybrid and i != 1):
      # qwen35's q rows hold each head's query, then its output gate
      for n, out in () if kv_lora else (("q", n_heads * hd * (2 if hybrid else 1)), ("k", n_kv_heads * hd), ("v", n_kv_heads * hd)):
        add(p + f"attn_{n}.weight", out, dim)
        if bias: add(p + f"attn_{n}.bias", out, scale=0.1)
      if qk_norm: add(p + "attn_q_norm.weight", hd, norm=True); add(p + "attn_k_norm.weight", hd, norm=True)
      add(p + "attn_output.weight", dim, n_heads * (16 if kv_lora else hd))
    add(p + ("post_attention_norm.weight" if arch == "qwen35" else "ffn_norm.weight"), dim, norm=True)
    if experts:
      add(p + "ffn_gate_inp.weight", experts, dim)
      add(p + "ffn_gate_exps.weight", experts, hidden, dim); add(p + "ffn_up_exps.weight", experts, hidden, dim)
      add(p + "ffn_down_exps.weight", experts, dim, hidden)
    else: add(p + "ffn_gate.weight", hidden, dim); add(p + "ffn_up.weight", hidden, dim); add(p + "ffn_down.weight", dim, hidden)
  add("output_norm.weight", dim, norm=True)
  if not tied: add("output.weight", V, dim)
  w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
  return W, dict(arch=arch, heads=n_heads, kv_heads=n_kv_heads, blocks=blocks, used=used, hd=hd, kv_lora=kv_lora, Hk=Hk)

def _softmax(x): return (e := np.exp(x - x.max(-1, keepdims=True))) / e.sum(-1, keepdims=True)

def _ref_delta_net(W: dict, p: str, h: np.ndarray, c: dict) -> np.ndarray:
  """(T, dim) output of the delta-net block `p` on its normed input h (T, dim) from zero states, from the math (FLA's
  naive recurrence, states laid out key x value): a causal depthwise conv of 4 taps then silu on q, k, v; q and k
  L2-normalized per key head, value head j reading key head j % key heads (GGUF's tiled order); per token
      S <- diag(a_t) S;  S <- S + beta_t k_t (v_t - S^T k_t)^T;  o_t = S^T q_t / sqrt(K)
  with a_t = exp(softplus(alpha_t + dt_bias) * ssm_a) one number per head (qwen35) or one per key channel (kimi-linear),
  beta_t = sigmoid; then RMSNorm per head times silu (kimi-linear: sigmoid) of the output gate."""
  kimi, T, (H, K, Vd, taps), Hk = c["arch"] == "kimi-linear", len(h), SSM.values(), c["Hk"]
  sigmoid, softplus = lambda z: 1 / (1 + np.exp(-z)), lambda z: np.log1p(np.exp(z))
  def conv(z, w):   # z (T, C), w (C, taps): out[t] = sum_i w[:, i] * z[t - taps + 1 + i], zeros before the first token
    zp = np.concatenate([np.zeros((taps - 1, z.shape[1])), z])
    out = sum(zp[i:i + T] * w[:, i] for i in range(taps))
    return out / (1 + np.exp(-out))
  if kimi: q, k, v = (conv(h @ W[p + f"attn_{n}.weight"].T, W[p + f"ssm_conv1d_{n}.weight"][:, 0]) for n in "qkv")
  else: q, k, v = np.split(conv(h @ W[p + "attn_qkv.weight"].T, W[p + "ssm_conv1d.weight"]), [Hk * K, 2 * Hk * K], -1)
  q, k = ((z / np.maximum(np.linalg.norm(z, axis=-1, keepdims=True), 1e-6))[:, np.arange(H) % Hk] for z in (q.reshape(T, Hk, K), k.reshape(T, Hk, K)))
  v, beta = v.reshape(T, H, Vd), sigmoid(h @ W[p + "ssm_beta.weight"].T)
  if kimi: a = np.exp(softplus((h @ W[p + "ssm_f_a.weight"].T) @ W[p + "ssm_f_b.weight"].T + W[p + "ssm_dt.bias"]).reshape(T, H, K) * W[p + "ssm_a"])
  else: a = np.exp(softplus(h @ W[p + "ssm_alpha.weight"].T + W[p + "ssm_dt.bias"]) * W[p + "ssm_a"])[..., None]   # (T, H, 1)
  S, o = np.zeros((H, K, Vd)), np.zeros((T, H, Vd))
  for t in range(T):
    S = S * a[t][:, :, None]
    S = S + beta[t][:, None, None] * k[t][:, :, None] * (v[t] - np.einsum("hkv,hk->hv", S, k[t]))[:, None, :]
    o[t] = np.einsum("hkv,hk->hv", S, q[t]) / np.sqrt(K)
  gate = ((h @ W[p + "ssm_g_a.weight"].T) @ W[p + "ssm_g_b.weight"].T if kimi else h @ W[p + "attn_gate.weight"].T).reshape(T, H, Vd)
  o = o / np.sqrt((o * o).mean(-1, keepdims=True) + 1e-5) * W[p + "ssm_norm.weight"] * (sigmoid(gate) if kimi else gate * sigmoid(gate))
  return o.reshape(T, -1) @ W[p + ("attn_output.weight" if kimi else "ssm_out.weight")].T

def _ref_logits(W: dict, c: dict, tokens: list[int]) -> np.ndarray:
  """(T, vocab) logits of every position, the whole sequence at once, in float64 from the half-rounded weights (the model
  casts weights to half on load and keeps its KV cache in half)."""
  half = lambda a: a.astype(np.float16).astype(np.float64)
  W = {k: half(v) for k, v in W.items()}
  def rms(x, g): return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * g
  T, hd, H, KV = len(tokens), c["hd"], c["heads"], c["kv_heads"]
  def rope(z):   # z (T, heads, d)
    if c["arch"] == "kimi-linear": return z   # its MLA blocks carry no positions
    rd = z.shape[-1] // 2 if c["arch"] == "qwen35" else z.shape[-1]   # qwen35 rotates the first half of each head only
    return np.concatenate([_rope(z[..., :rd]), z[..., rd:]], -1)
  def _rope(z):
    # GGUF llama (and MLA) keep each rotated pair interleaved (Meta's layout); qwen keeps the halves split (NeoX's)
    d, pairs = z.shape[-1], c["arch"] in ("llama", "deepseek2")
    ang = np.arange(T)[:, None, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    a, b = (z[..., 0::2], z[..., 1::2]) if pairs else (z[..., :d // 2], z[..., d // 2:])
    ra, rb = a * np.cos(ang) - b * np.sin(ang), b * np.cos(ang) + a * np.sin(ang)
    return np.stack([ra, rb], -1).reshape(z.shape) if pairs else np.concatenate([ra, rb], -1)
  silu = lambda x: x / (1 + np.exp(-x))
  x = W["token_embd.weight"][tokens]
  for i in range(c["blocks"]):
    p = f"blk.{i}."
    h = rms(x, W[p + "attn_norm.weight"])
    if p + "ssm_a" in W: x = x + _ref_delta_net(W, p, h, c)
    elif c["kv_lora"]:   # MLA, the plain way: keys and values expanded per head from the latent (the model absorbs them instead)
      q, kv_a = (h @ W[p + "attn_q.weight"].T).reshape(T, H, 24), h @ W[p + "attn_kv_a_mqa.weight"].T
      lat = rms(kv_a[:, :c["kv_lora"]], W[p + "attn_kv_a_norm.weight"])
      k = np.concatenate([np.einsum("tr,hrn->thn", lat, W[p + "attn_k_b.weight"]), np.repeat(rope(kv_a[:, None, c["kv_lora"]:]), H, 1)], -1)
      s = np.einsum("thd,shd->hts", np.concatenate([q[..., :16], rope(q[..., 16:])], -1), k) / np.sqrt(24) + np.triu(np.full((T, T), -np.inf), 1)
      v = np.einsum("tr,hvr->thv", lat, W[p + "attn_v_b.weight"])
      x = x + np.einsum("hts,shd->thd", _softmax(s), v).reshape(T, -1) @ W[p + "attn_output.weight"].T
    else:
      q, k, v = (h @ W[p + f"attn_{n}.weight"].T + W.get(p + f"attn_{n}.bias", 0) for n in "qkv")
      gate = q.reshape(T, H, 2, hd)[:, :, 1].reshape(T, -1) if c["arch"] == "qwen35" else None   # qwen35: each head's query, then its gate
      q, k, v = (q.reshape(T, H, 2, hd)[:, :, 0] if gate is not None else q.reshape(T, H, hd)), k.reshape(T, KV, hd), v.reshape(T, KV, hd)
      if p + "attn_q_norm.weight" in W: q, k = rms(q, W[p + "attn_q_norm.weight"]), rms(k, W[p + "attn_k_norm.weight"])
      k, v = (np.repeat(half(z), H // KV, axis=1) for z in (rope(k), v))
      s = np.einsum("thd,shd->hts", rope(q), k) / np.sqrt(hd) + np.triu(np.full((T, T), -np.inf), 1)
      o = np.einsum("hts,shd->thd", _softmax(s), v).reshape(T, -1)
      x = x + (o if gate is None else o / (1 + np.exp(-gate))) @ W[p + "attn_output.weight"].T
    h = rms(x, W.get(p + "ffn_norm.weight", W.get(p + "post_attention_norm.weight")))
    if p + "ffn_gate_inp.weight" in W:   # qwen3moe: softmax router, top-k renormalized
      probs = _softmax(h @ W[p + "ffn_gate_inp.weight"].T)
      sel = np.argsort(-probs, axis=-1, kind="stable")[:, :c["used"]]
      wts = np.take_along_axis(probs, sel, -1)
      wts /= wts.sum(-1, keepdims=True)
      ffn = np.zeros_like(x)
      for t in range(T):
        for e, g in zip(sel[t], wts[t]):
          ffn[t] += g * (silu(W[p + "ffn_gate_exps.weight"][e] @ h[t]) * (W[p + "ffn_up_exps.weight"][e] @ h[t])) @ W[p + "ffn_down_exps.weight"][e].T
    else: ffn = (silu(h @ W[p + "ffn_gate.weight"].T) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
    x = x + ffn
  return rms(x, W["output_norm.weight"]) @ W.get("output.weight", W["token_embd.weight"]).T

def _ref_greedy(W, c, tokens, n):
  out = list(tokens)
  for _ in range(n): out.append(int(_ref_logits(W, c, out)[-1].argmax()))
  return out[len(tokens):]

def _logits(model: Transformer, tokens: list[int], start_pos: int) -> np.ndarray:
  # the blocks' public call, as Transformer.forward runs them, without the sampling at the end
  x = model.token_embd(Tensor([tokens])).float()
  for b in model.blk: x = b(x, start_pos)
  return model.output(model.output_norm(x)).numpy()[0]

ARCHS = {"llama": dict(arch="llama"), "qwen2": dict(arch="qwen2", bias=True, tied=True), "qwen3": dict(arch="qwen3", qk_norm=True),
         "qwen3moe": dict(arch="qwen3moe", qk_norm=True, experts=4, used=2, hidden=32), "deepseek2": dict(arch="deepseek2", kv_lora=16, n_kv_heads=4)}
PROMPT = [TID[_spell(s)] for s in ("hello", " world", " the", "in", " ", "a", "b", "c", "\n")]

@pytest.mark.parametrize("name", ARCHS)
def test_forward_with_kv_cache_matches_numpy(tmp_path, name):
  W, c = _write(tmp_path / "m.gguf", **ARCHS[name])
  model, kv = Transformer.from_gguf(tmp_path / "m.gguf", max_context=32)
  assert kv["general.architecture"] == name and model.max_context == 32
  ref = _ref_logits(W, c, PROMPT)
  # a prompt chunk from 0, a chunk after it (its mask is causal from the lower right), then one token
  got = np.concatenate([_logits(model, PROMPT[:5], 0), _logits(model, PROMPT[5:8], 5), _logits(model, PROMPT[8:], 8)])
  np.testing.assert_allclose(got, ref, atol=3e-3, rtol=3e-3)

def test_generate_greedy_matches_numpy(tmp_path):
  W, c = _write(tmp_path / "m.gguf", arch="llama", seed=1)
  model, _ = Transformer.from_gguf(str(tmp_path / "m.gguf"))
  assert model.max_context == 48   # the file's context_length when max_context is not given
  want = _ref_greedy(W, c, PROMPT, 12)
  toks = list(PROMPT)
  got = [t for _, t in zip(range(12), model.generate(toks, chunk_size=4))]   # prompt chunks of 4: 4, 4, 1
  assert got == want and toks == PROMPT + got   # (generate appends to the list it is given, as 0.14's)
  # a prompt sharing a prefix with the last one reuses its cache from where they differ
  toks = PROMPT[:6] + [TID["<|eot_id|>"]]
  assert model.get_start_pos(toks) == 6
  assert [t for _, t in zip(range(4), model.generate(toks, chunk_size=4))] == _ref_greedy(W, c, PROMPT[:6] + [TID["<|eot_id|>"]], 4)
  # sampling at temperature 1 runs to the end of the context
  out = list(model.generate(toks := list(PROMPT), chunk_size=4, temperature=1.0))
  assert len(out) == 48 - len(PROMPT) and all(0 <= t < len(TOKENS) for t in out) and toks == PROMPT + out

@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(-2, 2), min_size=5, max_size=5), st.integers(1, 5))
def test_pairwise_topk_picks_the_largest_ties_to_lower_index(vals, k):
  x = np.array(vals, dtype=np.float32)
  v, i = pairwise_topk(Tensor(x).reshape(1, 1, 5), k)
  want = np.argsort(-x, kind="stable")[:k][::-1]   # ascending, as 0.14's
  assert i.numpy().reshape(-1).tolist() == want.tolist() and v.numpy().reshape(-1).tolist() == x[want].tolist()

def test_tokenizer_from_gguf_metadata(tmp_path):
  _write(tmp_path / "m.gguf", blocks=1)
  from tinygrad.nn.state import gguf_load
  tok = SimpleTokenizer.from_gguf_kv(gguf_load(tmp_path / "m.gguf")[0])
  assert tok.bos_id == TID["<|begin_of_text|>"] and tok.eos_id == TID["<|eot_id|>"] and tok.is_end(TID["<|eot_id|>"])
  # whole words found in the vocabulary, the rest merged by rank; control tokens split the text first
  assert tok.encode("hello world") == [TID["hello"], TID[_spell(" world")]]
  assert tok.encode("<|eot_id|> the\nhi") == [TID["<|eot_id|>"], TID[_spell(" the")], TID[_spell("\n")], TID["h"], TID["i"]]
  for text in ("hello world", "<|start_header_id|>user<|end_header_id|>\n\nin the hello!", "a  b\n\n x1234 ?!"):
    assert tok.decode(tok.encode(text)) == text
  dec = tok.stream_decoder()
  assert "".join(dec(t) for t in tok.encode("hello world")) + dec() == "hello world"
  with pytest.raises(RuntimeError, match="token not found"): tok.encode("é")   # no byte token for it in this vocabulary
  with pytest.raises(ValueError, match="preset"): SimpleTokenizer({}, {}, preset="nope")

def _cli(python, path, prompt, env=None, cwd=None, pre=()):
  r = subprocess.run([python, *pre, "--model", str(path), "--max_context", "40"], input=prompt, capture_output=True, text=True,
                     timeout=120, env=env, cwd=cwd)
  assert r.returncode == 0, r.stderr[-3000:]
  return r.stdout

def test_cli_chat_reply_is_the_models_greedy_tokens(tmp_path):
  W, c = _write(tmp_path / "m.gguf", seed=3)
  out = _cli(sys.executable, tmp_path / "m.gguf", "hello world\n", pre=("-m", "tinygrad.llm"))
  assert 'using model "tiny-llama"' in out and "max context 40" in out
  from tinygrad.nn.state import gguf_load
  tok = SimpleTokenizer.from_gguf_kv(gguf_load(tmp_path / "m.gguf")[0])
  ids = tok.encode("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhello world<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
  want = _ref_greedy(W, c, ids, 40 - len(ids))
  want = want[:want.index(tok.eos_id)] if tok.eos_id in want else want
  assert out.split(">>> ")[1].rstrip("\n") == tok.decode(want)

# 0.14's wheel lacks tinygrad/llm/kernels/ (RDNA3 kernels its model.py imports): stand in its non-AMD path, nn.Linear
_REF_PRE = ("import sys, types; from tinygrad import nn; m = types.ModuleType('tinygrad.llm.kernels.amd'); m.Linear = nn.Linear; "
            "m.amd_custom_kernels_supported = lambda d: False; m.gated_delta_prefill = m.flash_attention = None; "
            "sys.modules['tinygrad.llm.kernels'] = types.ModuleType('tinygrad.llm.kernels'); sys.modules['tinygrad.llm.kernels.amd'] = m; ")
_REF_RUN = _REF_PRE + """
import io, json, runpy
from tinygrad import Tensor
from tinygrad.llm.model import Transformer
from tinygrad.llm.cli import SimpleTokenizer
out = {}
for path, prompt, texts in json.loads(sys.argv[1]):
  model, kv = Transformer.from_gguf(path, max_context=32)
  x = model.token_embd(Tensor([prompt])).float()
  for b in model.blk: x = b(x, 0)
  tok = SimpleTokenizer.from_gguf_kv(kv)
  out[path] = {"logits": model.output(model.output_norm(x)).numpy()[0].tolist(), "enc": [tok.encode(s) for s in texts],
               "gen": [t for _, t in zip(range(8), model.generate(list(prompt)))]}
print(json.dumps(out))
sys.argv, sys.stdin = ["tinygrad.llm", *sys.argv[2:]], io.StringIO("hello world\\n")
runpy.run_module("tinygrad.llm", run_name="__main__")
"""
TEXTS = ["hello world", "<|start_header_id|>user<|end_header_id|>\n\nin the hello!", "a  b\n\n x1234 ?!", "don't 're'll"]

@pytest.mark.skipif(not os.path.exists(REF_PY), reason=f"public tinygrad 0.14 is not installed at {REF_PY} (set TINYGRAD_014_PYTHON)")
def test_model_tokenizer_and_cli_match_tinygrad_014(tmp_path, monkeypatch, capsys):
  jobs = []
  # one model: 0.14 takes ~10 s of CPU per model here (qwen3moe's experts and deepseek2's MLA matched it too, run by hand)
  for name in ("llama",):
    _write(tmp_path / f"{name}.gguf", seed=4, **ARCHS[name])
    jobs.append((str(tmp_path / f"{name}.gguf"), PROMPT, TEXTS))
  # 0.14 runs beside this process's own work, in one process: the model and tokenizer jobs, then its CLI on the first file
  cli_args = ["--model", jobs[0][0], "--max_context", "32"]
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEV")}
  ref_run = subprocess.Popen([REF_PY, "-c", _REF_RUN, json.dumps(jobs), *cli_args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd="/tmp", env=env)
  ours = {}
  for path, prompt, texts in jobs:
    model, kv = Transformer.from_gguf(path, max_context=32)
    ours[path] = (_logits(model, prompt, 0), [t for _, t in zip(range(8), model.generate(list(prompt)))],
                  [SimpleTokenizer.from_gguf_kv(kv).encode(s) for s in texts])
  import io
  from tinygrad.llm.cli import main   # (python -m tinygrad.llm runs it: test_cli_chat_reply_is_the_models_greedy_tokens)
  monkeypatch.setattr(sys, "argv", ["tinygrad.llm", *cli_args])
  monkeypatch.setattr(sys, "stdin", io.StringIO("hello world\n"))
  capsys.readouterr()
  main()
  ours_cli = capsys.readouterr().out
  out, err = ref_run.communicate(timeout=300)
  assert ref_run.returncode == 0, err[-3000:]
  json_line = next(line for line in out.splitlines() if line.startswith("{"))
  ref = json.loads(json_line)
  for path, (logits, gen, enc) in ours.items():
    np.testing.assert_allclose(logits, ref[path]["logits"], atol=5e-3, rtol=5e-3, err_msg=path)
    assert (gen, enc) == (ref[path]["gen"], ref[path]["enc"]), path
  # the reply after the prompt (the first line's byte count is the weights' memory, counted differently)
  ref_cli = out.split(json_line, 1)[1]
  assert ours_cli.split(">>> ", 1)[1] == ref_cli.split(">>> ", 1)[1] and ours_cli.count(">>> ") == 2

def test_server_chat_completions_on_localhost(tmp_path):
  import http.client, threading
  from tinygrad.llm.cli import FallbackTemplate
  from tinygrad.llm.serve import LLMServer
  W, c = _write(tmp_path / "m.gguf", seed=6)
  model, kv = Transformer.from_gguf(tmp_path / "m.gguf", max_context=32)
  tok = SimpleTokenizer.from_gguf_kv(kv)
  server = LLMServer(("127.0.0.1", 0), model, "tiny", tok, FallbackTemplate(tok))
  threading.Thread(target=server.serve_forever, daemon=True).start()
  def request(method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=120)
    conn.request(method, path, json.dumps(body) if body is not None else None, {"Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, r.getheader("Content-Type"), r.read().decode()
  try:
    assert json.loads(request("GET", "/v1/models")[2]) == {"object": "list", "data": [{"id": "tiny", "object": "model"}]}
    assert request("GET", "/")[1] == "text/html"
    msgs = [{"role": "user", "content": "hello world"}]
    want = _ref_greedy(W, c, ids := tok.encode(FallbackTemplate(tok).render(msgs)), 3)
    status, _, text = request("POST", "/v1/chat/completions", {"model": "tiny", "messages": msgs, "max_tokens": 3})
    body = json.loads(text)
    assert status == 200 and body["object"] == "chat.completion" and body["choices"][0]["finish_reason"] == "length"
    assert body["choices"][0]["message"]["content"] == tok.decode(want) and body["usage"] == {"prompt_tokens": len(ids), "completion_tokens": 3, "total_tokens": len(ids) + 3}
    # streamed: server-sent chunks, the role first, then the same text, the finish, [DONE]
    status, ctype, text = request("POST", "/v1/chat/completions", {"model": "tiny", "messages": msgs, "max_tokens": 3, "stream": True})
    events = [e.removeprefix("data: ") for e in text.split("\n\n") if e]
    chunks = [json.loads(e) for e in events[:-1]]
    assert status == 200 and ctype == "text/event-stream" and events[-1] == "[DONE]"
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant" and chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert "".join(ch["choices"][0]["delta"].get("content", "") for ch in chunks) == tok.decode(want)
    status, _, text = request("POST", "/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user", "content": "hello " * 40}]})
    assert status == 400 and json.loads(text)["error"]["code"] == "context_length_exceeded"
  finally:
    server.shutdown()
    server.server_close()

def test_stream_router_and_tool_call_parsing():
  from tinygrad.llm.serve import StreamRouter, parse_tool_call
  r = StreamRouter()
  # a tag split across pieces is held back until it is whole
  got = [d for piece in ("<thi", "nk>why</th", "ink>ok <tool", "_call>{\"name\": \"f\"}") for d in r.route(piece)] + list(r.route("", final=True))
  assert got == [("reasoning_content", "why"), ("content", "ok ")] and r.buf == "<tool_call>{\"name\": \"f\"}"
  assert list(StreamRouter().route("<t", final=True)) == [("content", "<t")]
  assert parse_tool_call('{"name": "get", "arguments": {"x": 1}}') == ("get", {"x": 1})
  assert parse_tool_call("<function=get>\n<parameter=x>\n1\n</parameter>\n<parameter=s>\nhi\n</parameter>\n</function>") == ("get", {"x": 1, "s": "hi"})
  assert parse_tool_call("not a call") is None and parse_tool_call("{bad json") is None

def test_server_stops_generating_when_the_client_goes_away(capsys):
  from unittest.mock import Mock
  from tinygrad.llm.serve import Handler, LLMServer
  steps = []
  def generate(ids, **kw):
    for t in (5, 6, 7, 8):
      steps.append(t)
      yield t
  tok = Mock(stream_decoder=Mock(return_value=lambda tid=None: "" if tid is None else "x"), is_end=lambda t: False)
  server = Mock(spec=LLMServer, model=Mock(generate=generate, get_start_pos=lambda ids: 0), tok=tok)
  chunks = Handler.run_model(Mock(server=server), [1, 2, 3], "m")
  handler = Mock()
  handler.wfile.write.side_effect = [None, None, BrokenPipeError]   # the role chunk and one token go out, then the socket is closed
  Handler.stream_json(handler, chunks)
  # the reply's generator was closed where the write failed: no more tokens are generated, and the log line says so
  assert steps == [5, 6] and "out:    2" in capsys.readouterr().err

def test_apply_rope_rejects_an_odd_head_dim_as_0_14_asserts():
  from tinygrad.llm.model import apply_rope, precompute_freqs_cis
  with pytest.raises(AssertionError, match="even"): apply_rope(Tensor.ones(1, 1, 4, 7), precompute_freqs_cis(7, 4))

@pytest.mark.parametrize("kda", [False, True])
def test_delta_net_block_sizes_have_0_14_names(kda):
  # user code (public tinygrad's test_attention) sizes a block's weights and reads its states by 0.14's attribute names
  from tinygrad.llm.model import GatedDeltaNetBlock, SSMConfig, TransformerConfig
  ssm = SSMConfig(conv_kernel=3, state_size=4, group_count=2, time_step_rank=4, inner_size=16, kda=kda)
  c = TransformerConfig(num_blocks=1, dim=8, hidden_dim=16, n_heads=2, n_kv_heads=2, norm_eps=1e-5, vocab_size=8, head_dim=4,
                        rope_theta=1e4, rope_dim=4, v_head_dim=4, max_context=4, ssm_layers=(True,), ssm=ssm)
  b = GatedDeltaNetBlock(c, ssm)
  assert (b.head_k_dim, b.num_k_heads, b.num_v_heads, b.head_v_dim, b.ssm_conv_kernel, b.q_dim) == (4, 2, 4, 4, 3, 8)
  assert b.attn_qkv.weight.shape == (b.conv_channels, c.dim) and b.ssm_conv1d["weight"].shape == (b.conv_channels, b.ssm_conv_kernel)
  assert b.ssm_beta.weight.shape == (b.num_v_heads, c.dim) and b.ssm_norm.weight.shape == (b.head_v_dim,)
  b._init_state(Tensor.zeros(1, 2, c.dim))
  assert b.conv_state.shape == (1, b.ssm_conv_kernel - 1, b.conv_channels)
  assert b.recurrent_state.shape == (1, b.num_v_heads, b.head_v_dim, b.head_k_dim)

HYBRIDS = {"qwen35": dict(arch="qwen35", qk_norm=True),
           "kimi-linear": dict(arch="kimi-linear", kv_lora=16, n_kv_heads=4, experts=4, used=2, hidden=32)}   # (its router renormalizes by default)

@pytest.mark.parametrize("name", HYBRIDS)
def test_delta_net_prefill_then_decode_matches_numpy(tmp_path, name):
  W, c = _write(tmp_path / "m.gguf", seed=7, **HYBRIDS[name])
  model, _ = Transformer.from_gguf(tmp_path / "m.gguf", max_context=32)
  attn = "MLATransformerBlock" if name == "kimi-linear" else "TransformerBlock"
  assert [type(b).__name__ for b in model.blk] == ["GatedDeltaNetBlock", attn, "GatedDeltaNetBlock"] and model.has_recurrent_block
  # a prompt chunk from 0, then single tokens: the conv and recurrent states carry each call into the next
  got = np.concatenate([_logits(model, PROMPT[:5], 0)] + [_logits(model, [t], i) for i, t in enumerate(PROMPT[5:], 5)])
  np.testing.assert_allclose(got, _ref_logits(W, c, PROMPT), atol=1e-4, rtol=1e-4)
  # starting over at position 0 starts from zero states: a fresh model's logits (the reference's, from scratch)
  np.testing.assert_allclose(_logits(model, PROMPT[3:6], 0), _ref_logits(W, c, PROMPT[3:6]), atol=1e-4, rtol=1e-4)
  # chunks of a symbolic length (bound Variables, as a prefill jit gets them) run their largest length, the extra steps no-ops
  from tinygrad import UOp
  toks, sp, n = Tensor([PROMPT + [0] * 23], dtype="int32"), UOp.variable("start_pos", 0, 31), UOp.variable("toks", 1, 4)
  got = []
  for start, count in ((0, 3), (3, 4), (7, 2)):
    x = model.token_embd(toks[:, sp.bind(start):sp.bind(start) + n.bind(count)]).float()
    for b in model.blk: x = b(x, sp.bind(start))
    got.append(model.output(model.output_norm(x)).numpy()[0])
  np.testing.assert_allclose(np.concatenate(got), _ref_logits(W, c, PROMPT), atol=1e-4, rtol=1e-4)

def test_delta_net_generate_continues_and_restarts_its_states(tmp_path):
  W, c = _write(tmp_path / "m.gguf", seed=8, **HYBRIDS["qwen35"])
  model, _ = Transformer.from_gguf(tmp_path / "m.gguf", max_context=24)
  toks = list(PROMPT[:4])
  got = [t for _, t in zip(range(4), model.generate(toks))]   # the jits: one token a step, the count a bound Variable
  assert got == _ref_greedy(W, c, PROMPT[:4], 4)
  # a prompt extending the last one continues from the states; one that does not starts over at 0 (the replayed jit resets them)
  assert model.get_start_pos(toks + [TID["a"]]) == len(toks) - 1 and model.get_start_pos(PROMPT[2:6]) == 0
  ext = toks + [TID["a"]]
  want = _ref_greedy(W, c, ext, 2)
  assert [t for _, t in zip(range(2), model.generate(ext))] == want
  assert [t for _, t in zip(range(3), model.generate(list(PROMPT[2:6])))] == _ref_greedy(W, c, PROMPT[2:6], 3)

def _step_logits(model: Transformer, toks: list[int]) -> np.ndarray:
  # one token a call from position 0, the position a bound Variable as generate passes it
  from tinygrad import UOp
  rows = []
  for i, t in enumerate(toks):
    x = model.token_embd(Tensor([[t]])).float()
    for b in model.blk: x = b(x, UOp.variable("start_pos", 0, model.max_context - 1).bind(i))
    rows.append(model.output(model.output_norm(x)).numpy()[0, -1])
  return np.stack(rows)
_REF_STEPS = _REF_PRE + """
import inspect, json
import numpy as np
from tinygrad import Tensor
from tinygrad.llm.model import Transformer
exec(sys.argv[2])
print(json.dumps({path: _step_logits(Transformer.from_gguf(path, max_context=16)[0], toks).tolist() for path, toks in json.loads(sys.argv[1])}))
"""

@pytest.mark.skipif(not os.path.exists(REF_PY), reason=f"public tinygrad 0.14 is not installed at {REF_PY} (set TINYGRAD_014_PYTHON)")
def test_delta_net_decode_steps_match_tinygrad_014(tmp_path):
  # single-token steps from position 0: how 0.14's generate runs a hybrid (chunk size 1), and the cheap calls there (a prompt
  # chunk of 2 tokens took 0.14 ~17 s of CPU a model here, a single-token step 1-3 s). kimi-linear's decay is made one
  # number per head: 0.14 scales the state along its value channels with KDA's per-channel decay, the model (and this
  # project) along its key channels; the two agree only when a head's channels decay alike (docs/guide.md)
  jobs = []
  for name in HYBRIDS:
    _write(path := tmp_path / f"{name}.gguf", seed=9, uniform_decay=name == "kimi-linear", **HYBRIDS[name])
    jobs.append((str(path), PROMPT[:3]))
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "DEV")}
  import inspect
  ref_run = subprocess.Popen([REF_PY, "-c", _REF_STEPS, json.dumps(jobs), inspect.getsource(_step_logits)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd="/tmp", env=env)
  ours = {path: _step_logits(Transformer.from_gguf(path, max_context=16)[0], toks) for path, toks in jobs}
  out, err = ref_run.communicate(timeout=300)
  assert ref_run.returncode == 0, err[-3000:]
  ref = json.loads(out.splitlines()[-1])
  # (0.14 rounds some of the block's values to half where its kernels store them; ours keeps float32: 2.3e-6 from numpy)
  for path, got in ours.items(): np.testing.assert_allclose(got, ref[path], atol=5e-3, rtol=5e-3, err_msg=path)
