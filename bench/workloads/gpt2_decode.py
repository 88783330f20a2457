#!/usr/bin/env python3
"""GPT-2 greedy decode, one call = one generated token: examples/gpt2.py on tinygrad-core and on public tinygrad 0.14 (the
same file), and the same model written in torch with a KV cache (CPU); the token streams must be equal.

The workload interface of bench/workloads (ROWS, QUICK, FRAMEWORKS, prepare, build, check); numpy and the stdlib only at
import, so the file also runs alone, each framework in its own process:

  .venv/bin/python bench/workloads/gpt2_decode.py [--quick] [--rows gpt2_decode_tiny,...] [--tinygrad-venv DIR | --no-tinygrad]

Weights are random (GPT-2's Hugging Face names, Conv1D layout: (in, out)), seeded, written once by prepare. The prompt is
prefilled by the first call; ms/token is the median of the decode calls after WARMUP (which compile and capture the jit).
"""
from __future__ import annotations
import argparse, importlib.util, json, os, subprocess, sys, tempfile, time
from typing import Callable
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROMPT = [3, 141, 59, 26, 5]
MAX_CONTEXT = 128
ROWS = {"gpt2_decode_tiny": dict(title="GPT-2 tiny (2 layers, dim 64, vocab 256) decode, ms/token", size="tiny", n_layers=2, n_heads=2,
                                 dim=64, vocab_size=256, max_seq_len=MAX_CONTEXT, check_calls=8, runs=40, seed=0),
        "gpt2_decode_small": dict(title="GPT-2 small (12 layers, dim 768) decode, ms/token", size="gpt2", n_layers=12, n_heads=12,
                                  dim=768, vocab_size=50257, max_seq_len=1024, check_calls=6, runs=20, seed=0)}
QUICK = {"gpt2_decode_tiny": dict(ROWS["gpt2_decode_tiny"], check_calls=4, runs=3), "gpt2_decode_small": dict(ROWS["gpt2_decode_small"], check_calls=3, runs=2)}
FRAMEWORKS = ("ours", "tinygrad", "torch")
WARMUP = 3
Call = Callable[[], "dict[str, np.ndarray]"]

def random_weights(c: dict) -> dict[str, np.ndarray]:
  rng, d, v = np.random.default_rng(c["seed"]), c["dim"], c["vocab_size"]
  n = lambda *s, std=0.02: (rng.standard_normal(s, dtype=np.float32) * np.float32(std))
  sd = {"wte.weight": n(v, d, std=0.2), "wpe.weight": n(c["max_seq_len"], d, std=0.5), "ln_f.weight": 1 + n(d, std=0.1), "ln_f.bias": n(d)}
  for i in range(c["n_layers"]):
    p = f"h.{i}."
    sd |= {p+"ln_1.weight": 1 + n(d, std=0.1), p+"ln_1.bias": n(d), p+"ln_2.weight": 1 + n(d, std=0.1), p+"ln_2.bias": n(d),
           p+"attn.c_attn.weight": n(d, 3*d, std=0.2), p+"attn.c_attn.bias": n(3*d), p+"attn.c_proj.weight": n(d, d, std=0.1),
           p+"attn.c_proj.bias": n(d), p+"mlp.c_fc.weight": n(d, 4*d, std=0.1), p+"mlp.c_fc.bias": n(4*d),
           p+"mlp.c_proj.weight": n(4*d, d, std=0.05), p+"mlp.c_proj.bias": n(d)}
  return sd

def write_safetensors(sd: dict[str, np.ndarray], path: str) -> None:
  """safetensors' layout (u64 header length, JSON header, little-endian data), with numpy only; mkstemp + os.replace."""
  header, off = {}, 0
  for k, v in sd.items():
    header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + v.nbytes]}
    off += v.nbytes
  hb = json.dumps(header).encode()
  hb += b" " * (-len(hb) % 8)
  fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", suffix=".tmp")
  with os.fdopen(fd, "wb") as f:
    f.write(len(hb).to_bytes(8, "little") + hb)
    for v in sd.values(): f.write(np.ascontiguousarray(v, dtype="<f4").tobytes())
  os.replace(tmp, path)

def read_safetensors(path: str) -> dict[str, np.ndarray]:
  with open(path, "rb") as f: data = f.read()
  n = int.from_bytes(data[:8], "little")
  header = json.loads(data[8:8 + n])
  return {k: np.frombuffer(data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dtype="<f4").reshape(v["shape"]).copy()
          for k, v in header.items() if k != "__metadata__"}

def prepare(c: dict) -> None: write_safetensors(random_weights(c), os.path.join(c["data"], "weights.safetensors"))

def _example():
  os.environ["MAX_CONTEXT"] = str(MAX_CONTEXT)   # read when the example is imported
  spec = importlib.util.spec_from_file_location("example_gpt2", os.path.join(ROOT, "examples", "gpt2.py"))
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)  # type: ignore[union-attr]
  return mod

def _torch_decoder(sd: dict[str, np.ndarray], c: dict) -> Callable[[list[int], int], int]:
  """The same GPT-2 in torch with a KV cache: (tokens from start_pos, start_pos) -> the greedy next token."""
  import torch
  F = torch.nn.functional
  W = {k: torch.from_numpy(v) for k, v in sd.items()}
  d, nh, L = c["dim"], c["n_heads"], c["n_layers"]
  ln = lambda x, p: F.layer_norm(x, (d,), W[p+".weight"], W[p+".bias"], 1e-5)
  lin = lambda x, p: torch.addmm(W[p+".bias"], x, W[p+".weight"])
  cache: list[tuple] = [() for _ in range(L)]
  def step(toks: list[int], start_pos: int) -> int:
    with torch.no_grad():
      T = len(toks)
      x = W["wte.weight"][torch.tensor(toks)] + W["wpe.weight"][start_pos:start_pos+T]
      for i in range(L):
        p = f"h.{i}."
        q, k, v = lin(ln(x, p+"ln_1"), p+"attn.c_attn").split(d, -1)
        q, k, v = (t.reshape(T, nh, d // nh).transpose(0, 1) for t in (q, k, v))
        if start_pos: k, v = torch.cat([cache[i][0], k], 1), torch.cat([cache[i][1], v], 1)
        cache[i] = (k, v)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=T > 1).transpose(0, 1).reshape(T, d)
        x = x + lin(a, p+"attn.c_proj")
        x = x + lin(F.gelu(lin(ln(x, p+"ln_2"), p+"mlp.c_fc"), approximate="tanh"), p+"mlp.c_proj")
      return int((ln(x[-1:], "ln_f") @ W["wte.weight"].T)[0].argmax())
  return step

def build(framework: str, c: dict) -> Call:
  weights = os.path.join(c["data"], "weights.safetensors")
  if framework == "torch": step = _torch_decoder(read_safetensors(weights), c)
  else:
    from tinygrad import Tensor
    Tensor.no_grad = True
    model = _example().GPT2.build(c["size"], weights).model
    def step(toks: list[int], start_pos: int) -> int: return int(model(Tensor([toks]), start_pos, 0.0).tolist()[0])
  toks, pos = list(PROMPT), [0]
  def call() -> dict[str, np.ndarray]:
    if len(toks) >= MAX_CONTEXT: raise RuntimeError(f"gpt2_decode: {len(toks)} tokens fill MAX_CONTEXT={MAX_CONTEXT}; fewer runs")
    tok = step(toks[pos[0]:], pos[0])
    pos[0] = len(toks)
    toks.append(tok)
    return {"token": np.array([tok], dtype=np.int64)}
  return call

def check(outs: list[dict[str, np.ndarray]], ref: list[dict[str, np.ndarray]], c: dict) -> str | None:
  """Greedy tokens are exact: None when every call's token equals torch's."""
  got, want = [int(o["token"][0]) for o in outs], [int(r["token"][0]) for r in ref]
  return None if got == want else f"tokens {got} against torch's {want}"

# ---- standalone: each framework in its own process, this file as the runner ----
def _run_one(framework: str, c: dict, n: int) -> dict:
  call = build(framework, c)
  toks, times = [], []
  for _ in range(n):
    st = time.perf_counter()
    toks.append(int(call()["token"][0]))
    times.append(time.perf_counter() - st)
  return {"tokens": toks, "times": times}

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--quick", action="store_true", help="the QUICK configs")
  ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of {', '.join(ROWS)}")
  ap.add_argument("--tinygrad-venv", default=os.path.join(tempfile.gettempdir(), "tinygrad-0.14-venv"), help="public tinygrad 0.14's venv (made if missing)")
  ap.add_argument("--no-tinygrad", action="store_true", help="skip public tinygrad")
  ap.add_argument("--_one", nargs=3, metavar=("FRAMEWORK", "CONFIG_JSON", "N"), help=argparse.SUPPRESS)
  args = ap.parse_args()
  if args._one:
    print(json.dumps(_run_one(args._one[0], json.loads(args._one[1]), int(args._one[2]))))
    return
  rows = args.rows.split(",")
  if bad := [r for r in rows if r not in ROWS]: ap.error(f"unknown row(s) {bad}; valid: {', '.join(ROWS)}")
  sys.path.insert(0, os.path.join(ROOT, "bench"))
  from common import ensure_tinygrad_venv, user_env
  pys = {"ours": sys.executable, "torch": sys.executable}
  if not args.no_tinygrad: pys["tinygrad"] = ensure_tinygrad_venv(args.tinygrad_venv)
  fmt = lambda v: f"{v:9.2f}" if v is not None else "        -"
  print(f"{'row':20s} {'ours ms/tok':>11s} {'tinygrad':>9s} {'torch':>9s} {'ours/tg':>8s} target  tokens")
  for key in rows:
    c = dict((QUICK if args.quick else ROWS)[key])
    with tempfile.TemporaryDirectory() as data:
      c["data"] = data
      prepare(c)
      res: dict[str, dict | None] = {}
      for fw, py in pys.items():
        r = subprocess.run([py, os.path.abspath(__file__), "--_one", fw, json.dumps(c), str(c["check_calls"] + c["runs"])],
                           capture_output=True, text=True, env=user_env(), cwd=tempfile.gettempdir())
        res[fw] = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None
        if r.returncode != 0: print(f"  ({fw} failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode})", file=sys.stderr)
    ms = {fw: float(np.median(r["times"][WARMUP:]) * 1e3) if r and len(r["times"]) > WARMUP else None for fw, r in res.items()}
    ref = res.get("torch")
    agree = {fw: ref is not None and r is not None and r["tokens"] == ref["tokens"] for fw, r in res.items() if fw != "torch"}
    o, t = ms.get("ours"), ms.get("tinygrad")
    ratio = f"{o/t:7.2f}x" if o and t else "       -"
    print(f"{key:20s} {fmt(o):>11s} {fmt(t)} {fmt(ms.get('torch'))} {ratio} <=0.5x  " +
          ", ".join(f"{fw} {'== torch' if ok else '!= torch'}" for fw, ok in agree.items()))

if __name__ == "__main__":
  main()
