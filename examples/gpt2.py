#!/usr/bin/env python3
"""GPT-2 in the style of public tinygrad's examples/gpt2.py: a KV cache per attention layer, a TinyJit'd one-token step
with the position as a bound Variable, greedy decoding (or sampling with --temperature). Runs unchanged on public
tinygrad and on tinygrad-core.

Weights: a safetensors file with GPT-2's Hugging Face names and layout (Conv1D weights stored (in, out), i.e. transposed
Linear weights; lm_head tied to wte), given with --weights; without one the model keeps its random init. Token ids in,
token ids out: --prompt-ids 1,2,3 (text with --prompt needs tiktoken installed; nothing is downloaded).

  python examples/gpt2.py --model_size tiny --prompt-ids 1,2,3 --count 20 [--weights w.safetensors] [--timing]
"""
from __future__ import annotations
import argparse, time
from tinygrad import Tensor, TinyJit, Device, Variable, getenv
from tinygrad.nn import Embedding, Linear, LayerNorm
from tinygrad.nn.state import safe_load, load_state_dict

MAX_CONTEXT = getenv("MAX_CONTEXT", 128)

class Attention:
  def __init__(self, dim: int, n_heads: int):
    self.c_attn = Linear(dim, 3*dim, bias=True)
    self.c_proj = Linear(dim, dim, bias=True)
    self.n_heads, self.dim, self.head_dim = n_heads, dim, dim // n_heads

  def __call__(self, x: Tensor, start_pos, mask: Tensor | None) -> Tensor:
    xqkv = self.c_attn(x)
    bsz, seqlen, _ = x.shape
    xq, xk, xv = [xqkv.shrink((None, None, (i*self.dim, (i+1)*self.dim))).reshape(bsz, seqlen, self.n_heads, self.head_dim) for i in range(3)]
    # the cache holds every position's keys and values; this step writes its own, then attends over [0, start_pos+seqlen)
    if not hasattr(self, "cache_kv"):
      self.cache_kv = Tensor.zeros(2, bsz, MAX_CONTEXT, self.n_heads, self.head_dim, dtype=x.dtype).contiguous().realize()
    self.cache_kv.shrink((None, None, (start_pos, start_pos+seqlen), None, None)).assign(Tensor.stack(xk, xv)).realize()
    keys = self.cache_kv[0].shrink((None, (0, start_pos+seqlen), None, None))
    values = self.cache_kv[1].shrink((None, (0, start_pos+seqlen), None, None))
    xq, keys, values = xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)
    return self.c_proj(xq.scaled_dot_product_attention(keys, values, mask).transpose(1, 2).reshape(bsz, seqlen, self.dim))

class FeedForward:
  def __init__(self, dim: int, hidden_dim: int):
    self.c_fc = Linear(dim, hidden_dim, bias=True)
    self.c_proj = Linear(hidden_dim, dim, bias=True)

  def __call__(self, x: Tensor) -> Tensor: return self.c_proj(self.c_fc(x).gelu())

class TransformerBlock:
  def __init__(self, dim: int, n_heads: int, norm_eps: float):
    self.attn = Attention(dim, n_heads)
    self.mlp = FeedForward(dim, 4*dim)
    self.ln_1 = LayerNorm(dim, norm_eps)
    self.ln_2 = LayerNorm(dim, norm_eps)

  def __call__(self, x: Tensor, start_pos, mask: Tensor | None) -> Tensor:
    h = x + self.attn(self.ln_1(x), start_pos, mask)
    return (h + self.mlp(self.ln_2(h))).contiguous()

class Transformer:
  def __init__(self, dim: int, n_heads: int, n_layers: int, norm_eps: float, vocab_size: int, max_seq_len: int = 1024):
    self.vocab_size = vocab_size
    self.wte = Embedding(vocab_size, dim)
    self.wpe = Embedding(max_seq_len, dim)
    self.h = [TransformerBlock(dim, n_heads, norm_eps) for _ in range(n_layers)]
    self.ln_f = LayerNorm(dim, norm_eps)
    self.lm_head = Linear(dim, vocab_size, bias=False)
    self.forward_jit = TinyJit(self.forward)

  def forward(self, tokens: Tensor, start_pos, temperature: float = 0.0) -> Tensor:
    seqlen = tokens.shape[1]
    # the position rows are a shrink of wpe's table: with a Variable start_pos one jitted step serves every position
    h = self.wte(tokens) + self.wpe.weight.shrink(((start_pos, start_pos+seqlen), None)).reshape(1, seqlen, -1)
    # a causal mask for a prompt (a prefill starts at position 0); a single token sees every cached position
    mask = Tensor.full((1, 1, seqlen, seqlen), float("-inf"), dtype=h.dtype).triu(1) if seqlen > 1 else None
    for hi in self.h: h = hi(h, start_pos, mask)
    logits = self.lm_head(self.ln_f(h))[:, -1, :]
    ret = logits.argmax(-1) if temperature < 1e-6 else (logits / temperature).softmax().multinomial()
    return ret.flatten().realize()

  def __call__(self, tokens: Tensor, start_pos: int, temperature: float = 0.0) -> Tensor:
    if tokens.shape[1] == 1 and start_pos > 0 and getenv("JIT", 1):
      return self.forward_jit(tokens, Variable("start_pos", 1, MAX_CONTEXT-1).bind(start_pos), temperature)
    if start_pos > 0 and tokens.shape[1] > 1: raise ValueError(f"a prompt of {tokens.shape[1]} tokens must start at position 0, not {start_pos}")
    return self.forward(tokens, start_pos, temperature)

VOCAB_SIZE = 50257
MODEL_PARAMS = {
  "tiny":        dict(n_layers=2, n_heads=2, dim=64, norm_eps=1e-5, vocab_size=256, max_seq_len=MAX_CONTEXT),  # for tests
  "gpt2":        dict(n_layers=12, n_heads=12, dim=768, norm_eps=1e-5, vocab_size=VOCAB_SIZE),   # 124M params
  "gpt2-medium": dict(n_layers=24, n_heads=16, dim=1024, norm_eps=1e-5, vocab_size=VOCAB_SIZE),  # 350M params
}
# GPT-2's checkpoints store these as Conv1D weights, (in, out): the transpose of a Linear's (out, in)
TRANSPOSED = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")

class GPT2:
  @staticmethod
  def build(model_size: str = "gpt2", weights: str | None = None) -> GPT2:
    if model_size not in MODEL_PARAMS: raise ValueError(f"unknown model_size {model_size!r}; valid: {', '.join(MODEL_PARAMS)}")
    model = Transformer(**MODEL_PARAMS[model_size])  # type: ignore[arg-type]
    if weights is not None:
      sd = {k.removeprefix("transformer."): v.to(Device.DEFAULT) for k, v in safe_load(weights).items()}
      # the causal-mask buffers some checkpoints carry are not weights
      sd = {k: v.T if k.endswith(TRANSPOSED) else v for k, v in sd.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}
      if "lm_head.weight" not in sd: sd["lm_head.weight"] = sd["wte.weight"]  # lm_head and wte are tied
      load_state_dict(model, sd, verbose=False)
    return GPT2(model)

  def __init__(self, model: Transformer): self.model = model

  def generate(self, prompt_tokens: list[int], max_length: int, temperature: float = 0.0, timing: bool = False) -> list[int]:
    """The prompt's token ids followed by `max_length` generated ones."""
    if not prompt_tokens: raise ValueError("generate needs at least one prompt token")
    if len(prompt_tokens) + max_length > MAX_CONTEXT:
      raise ValueError(f"{len(prompt_tokens)} prompt tokens + {max_length} new ones exceed MAX_CONTEXT={MAX_CONTEXT}; set MAX_CONTEXT=n to raise it")
    toks, start_pos = list(prompt_tokens), 0
    for _ in range(max_length):
      st = time.perf_counter()
      tok = self.model(Tensor([toks[start_pos:]]), start_pos, temperature).tolist()
      if timing: print(f"position {len(toks):4d}: {(time.perf_counter()-st)*1e3:8.2f} ms")
      start_pos = len(toks)
      toks.append(int(tok[0]))
    return toks

if __name__ == "__main__":
  Tensor.no_grad = True
  parser = argparse.ArgumentParser(description="Run GPT-2 in tinygrad", formatter_class=argparse.ArgumentDefaultsHelpFormatter)
  parser.add_argument("--prompt-ids", type=str, default="50256", help="comma-separated token ids to start with")
  parser.add_argument("--prompt", type=str, default=None, help="text to start with (needs tiktoken)")
  parser.add_argument("--count", type=int, default=20, help="number of tokens to generate")
  parser.add_argument("--temperature", type=float, default=0.0, help="0: greedy, else softmax sampling")
  parser.add_argument("--model_size", type=str, default="gpt2", help=f"one of {', '.join(MODEL_PARAMS)}")
  parser.add_argument("--weights", type=str, default=None, help="a safetensors file with GPT-2's Hugging Face names")
  parser.add_argument("--timing", action="store_true", help="print the time per token")
  parser.add_argument("--seed", type=int, default=None, help="random seed (init and sampling)")
  args = parser.parse_args()
  if args.seed is not None: Tensor.manual_seed(args.seed)
  enc = None
  if args.prompt is not None:
    import tiktoken
    enc = tiktoken.get_encoding("gpt2")
    prompt = enc.encode(args.prompt, allowed_special={"<|endoftext|>"})
  else: prompt = [int(t) for t in args.prompt_ids.split(",")]
  print(f"using {Device.DEFAULT}, {args.model_size}")
  out = GPT2.build(args.model_size, args.weights).generate(prompt, args.count, args.temperature, timing=args.timing)
  print(enc.decode(out) if enc is not None else ",".join(map(str, out)))
