#!/usr/bin/env python3
"""ms per decoded token of a tiny 2-layer transformer with a KV cache: the position as a bound Variable under TinyJit
(one capture replayed for every position) against the same step without the JIT (scheduled every token, with a plain
int position and with the Variable). Prints the figures and the ratio; checks the three give the same tokens.

  python bench/kv_decode.py [--device CPU] [--tokens 32] [--dim 64] [--layers 2] [--ctx 128]"""
from __future__ import annotations
import argparse, time
import numpy as np
from tinygrad import Tensor, TinyJit, Variable, Device

class Block:
  def __init__(self, dim: int, heads: int, ctx: int, rng: np.random.RandomState, dev: str):
    w = lambda *s: Tensor((rng.randn(*s) / np.sqrt(s[0])).astype(np.float32), device=dev).realize()
    self.heads, self.hd = heads, dim // heads
    self.qkv, self.proj, self.fc1, self.fc2 = w(dim, 3*dim), w(dim, dim), w(dim, 4*dim), w(4*dim, dim)
    self.cache = Tensor.zeros(2, 1, ctx, heads, self.hd, device=dev).contiguous().realize()
  def __call__(self, x: Tensor, start_pos) -> Tensor:
    b, t, d = x.shape
    q, k, v = [y.reshape(b, t, self.heads, self.hd) for y in (x.layernorm() @ self.qkv).split(d, dim=2)]
    self.cache[:, :, start_pos:start_pos+t].assign(Tensor.stack(k, v))
    keys, values = self.cache[0, :, :start_pos+t], self.cache[1, :, :start_pos+t]
    q, keys, values = q.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2)   # (b, h, T, hd)
    att = (q @ keys.transpose(-1, -2) / np.sqrt(self.hd)).softmax(-1)
    h = x + (att @ values).transpose(1, 2).reshape(b, t, d) @ self.proj
    return h + (h.layernorm() @ self.fc1).gelu() @ self.fc2

class Model:
  def __init__(self, dim: int, layers: int, vocab: int, ctx: int, dev: str):
    rng = np.random.RandomState(0)
    self.emb = Tensor((rng.randn(vocab, dim) * 0.5).astype(np.float32), device=dev).realize()
    self.blocks = [Block(dim, 4, ctx, rng, dev) for _ in range(layers)]
    self.dev = dev
  def step(self, tok: Tensor, start_pos) -> Tensor:
    x = self.emb[tok].reshape(1, 1, -1)
    for blk in self.blocks: x = blk(x, start_pos)
    return (x.layernorm() @ self.emb.T).argmax(-1).realize()

def decode(model: Model, n: int, mode: str, ctx: int) -> tuple[list[int], float]:
  for blk in model.blocks: blk.cache.assign(Tensor.zeros(*blk.cache.shape, device=model.dev)).realize()
  step = TinyJit(model.step) if mode == "jit" else model.step
  tok, toks, times = 1, [], []
  for pos in range(n):
    st = time.perf_counter()
    sp = Variable("start_pos", 0, ctx - 1).bind(pos) if mode != "int" else pos
    tok = int(step(Tensor([tok], device=model.dev).realize(), sp).item())
    times.append(time.perf_counter() - st)
    toks.append(tok)
  return toks, float(np.median(times[3:])) * 1e3   # past the JIT's run and capture calls

if __name__ == "__main__":
  ap = argparse.ArgumentParser()
  ap.add_argument("--device", default=None)
  ap.add_argument("--tokens", type=int, default=32)
  ap.add_argument("--dim", type=int, default=64)
  ap.add_argument("--layers", type=int, default=2)
  ap.add_argument("--ctx", type=int, default=128)
  a = ap.parse_args()
  dev = a.device or Device.DEFAULT
  model = Model(a.dim, a.layers, 256, a.ctx, dev)
  res = {m: decode(model, a.tokens, m, a.ctx) for m in ("int", "var", "jit")}
  same = res["int"][0] == res["var"][0] == res["jit"][0]
  print(f"device {dev}, {a.layers} layers, dim {a.dim}, {a.tokens} tokens, context {a.ctx}")
  for m, label in (("int", "no JIT, int start_pos"), ("var", "no JIT, Variable start_pos"), ("jit", "TinyJit + Variable start_pos")):
    print(f"  {label:30s} {res[m][1]:9.2f} ms/token")
  print(f"  JIT speedup over no JIT (int): {res['int'][1] / res['jit'][1]:.1f}x; same tokens: {same}")
