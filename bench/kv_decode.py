#!/usr/bin/env python3
"""ms per decoded token of a tiny 2-layer transformer with a KV cache: the position as a bound Variable under TinyJit
(one capture replayed for every position) against the same step without the JIT (scheduled every token, with a plain
int position and with the Variable). Prints the figures and the ratio; checks the three give the same tokens.

  python bench/kv_decode.py [--device CPU] [--tokens 32] [--dim 64] [--layers 2] [--ctx 128] [--modes int,var,jit]
  nice python bench/kv_decode.py --dim 128 --layers 4 --modes jit --ref /tmp/tinygrad-0.14-venv/bin/python
--ref runs the same script (same seeded weights) under public tinygrad's interpreter, checks it decodes the same tokens
and prints both ms/token and the ratio (issue 35's dim-128 4-layer decoder: target <= 0.5x), with the machine's load.
--json prints one JSON line of {mode: [tokens, ms/token, CPU ms/token]} (what --ref reads back)."""
from __future__ import annotations
import argparse, json, os, subprocess, sys, time
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

def decode(model: Model, n: int, mode: str, ctx: int) -> tuple[list[int], float, float]:
  """The tokens, and the median wall ms and calling thread's CPU ms per token (the CPU time is what a loaded machine
  distorts least: it leaves out waiting for a core, and the pool workers' share)."""
  for blk in model.blocks: blk.cache.assign(Tensor.zeros(*blk.cache.shape, device=model.dev)).realize()
  step = TinyJit(model.step) if mode == "jit" else model.step
  tok, toks, times, cpu = 1, [], [], []
  for pos in range(n):
    st, ct = time.perf_counter(), time.thread_time()
    sp = Variable("start_pos", 0, ctx - 1).bind(pos) if mode != "int" else pos
    tok = int(step(Tensor([tok], device=model.dev).realize(), sp).item())
    times.append(time.perf_counter() - st)
    cpu.append(time.thread_time() - ct)
    toks.append(tok)
  return toks, float(np.median(times[3:])) * 1e3, float(np.median(cpu[3:])) * 1e3   # past the JIT's run and capture calls

if __name__ == "__main__":
  ap = argparse.ArgumentParser()
  ap.add_argument("--device", default=None)
  ap.add_argument("--tokens", type=int, default=32)
  ap.add_argument("--dim", type=int, default=64)
  ap.add_argument("--layers", type=int, default=2)
  ap.add_argument("--ctx", type=int, default=128)
  ap.add_argument("--modes", default="int,var,jit", help="comma separated: int, var, jit")
  ap.add_argument("--json", action="store_true", help="print one JSON line {mode: [tokens, ms/token, CPU ms/token]}")
  ap.add_argument("--ref", default=None, metavar="PYTHON", help="also run under this interpreter (public tinygrad) and compare")
  a = ap.parse_args()
  dev = a.device or Device.DEFAULT
  modes = [m for m in a.modes.split(",") if m]
  model = Model(a.dim, a.layers, 256, a.ctx, dev)
  res = {m: decode(model, a.tokens, m, a.ctx) for m in modes}
  if a.json:
    print(json.dumps(res))
    sys.exit(0)
  print(f"device {dev}, {a.layers} layers, dim {a.dim}, {a.tokens} tokens, context {a.ctx}; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores, niceness {os.nice(0)}")
  labels = {"int": "no JIT, int start_pos", "var": "no JIT, Variable start_pos", "jit": "TinyJit + Variable start_pos"}
  for m in modes: print(f"  {labels[m]:30s} {res[m][1]:9.2f} ms/token (calling thread's CPU {res[m][2]:.2f} ms)")
  if "int" in res and "jit" in res: print(f"  JIT speedup over no JIT (int): {res['int'][1] / res['jit'][1]:.1f}x")
  print(f"  same tokens in every mode: {all(r[0] == res[modes[0]][0] for r in res.values())}")
  if a.ref:
    # the same script under public tinygrad, from outside this source tree (its own package, not ours on PYTHONPATH)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CACHEDB")}
    cmd = [a.ref, os.path.abspath(__file__), "--json", "--modes", a.modes, "--tokens", str(a.tokens), "--dim", str(a.dim),
           "--layers", str(a.layers), "--ctx", str(a.ctx), "--device", dev.split(":")[0]]   # the same device (its default may differ)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/tmp", timeout=3600)
    if r.returncode != 0: sys.exit(f"reference run failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
    ref = json.loads(r.stdout.strip().splitlines()[-1])
    for m in modes:
      same = ref[m][0] == res[m][0]
      print(f"  {labels[m]:30s} public tinygrad {ref[m][1]:9.2f} ms/token (CPU {ref[m][2]:.2f} ms); ours/theirs {res[m][1] / ref[m][1]:.2f}x "
            f"(CPU {res[m][2] / ref[m][2]:.2f}x); same tokens: {same}")
      if not same: sys.exit(f"mode {m}: the reference decoded {ref[m][0]}, ours {res[m][0]}")
