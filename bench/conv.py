#!/usr/bin/env python3
"""GFLOPS of convolutions on the default device, forward, input grad and weight grad, for the conv shapes of ResNet-18
(batch 1 and 32), MobileNet (depthwise 3x3, 1x1), the MNIST CNN (batch 128) and ViT's 16x16/16 patch embedding; beside
torch CPU and our own matmul of the same FLOPs (the im2col GEMM: (pixels, cin/groups*kh*kw) @ (.., cout/groups), per
group). Every result is checked against torch's in every run (a wrong fast conv is a failure: exit 1).

  .venv/bin/python bench/conv.py [--quick] [--only SUBSTR] [--runs N] [--no-grad] [--json PATH]

--quick: batch 1 ResNet shapes, one MobileNet pair, the MNIST convs at batch 16 and ViT (a smoke run)."""
from __future__ import annotations
import argparse, json, os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import median_s   # (puts core/ on sys.path, as for every bench script)
from tinygrad import Tensor

# name, batch, cin, cout, input size, kernel, stride, padding, groups
def shapes(quick: bool) -> list[tuple[str, int, int, int, int, int, int, int, int]]:
  resnet = [("r18.conv1 7x7/2", 3, 64, 224, 7, 2, 3), ("r18.l1 3x3", 64, 64, 56, 3, 1, 1), ("r18.l2 3x3/2", 64, 128, 56, 3, 2, 1),
            ("r18.l2 3x3", 128, 128, 28, 3, 1, 1), ("r18.l2 1x1/2", 64, 128, 56, 1, 2, 0), ("r18.l3 3x3/2", 128, 256, 28, 3, 2, 1),
            ("r18.l3 3x3", 256, 256, 14, 3, 1, 1), ("r18.l3 1x1/2", 128, 256, 28, 1, 2, 0), ("r18.l4 3x3/2", 256, 512, 14, 3, 2, 1),
            ("r18.l4 3x3", 512, 512, 7, 3, 1, 1), ("r18.l4 1x1/2", 256, 512, 14, 1, 2, 0)]
  out = [(n, 1, ci, co, hw, k, s, p, 1) for n, ci, co, hw, k, s, p in resnet]
  if not quick: out += [(n, 32, ci, co, hw, k, s, p, 1) for n, ci, co, hw, k, s, p in resnet]
  out += [("mbnet dw 3x3", 1, 32, 32, 112, 3, 1, 1, 32), ("mbnet 1x1", 1, 32, 64, 112, 1, 1, 0, 1)]
  if not quick: out += [("mbnet dw 3x3/2", 1, 64, 64, 112, 3, 2, 1, 64), ("mbnet dw 3x3 c512", 1, 512, 512, 14, 3, 1, 1, 512),
                        ("mbnet 1x1 c512", 1, 512, 512, 14, 1, 1, 0, 1)]
  mb = 16 if quick else 128
  out += [("mnist 5x5 1->32", mb, 1, 32, 28, 5, 1, 0, 1), ("mnist 5x5 32->32", mb, 32, 32, 24, 5, 1, 0, 1),
          ("mnist 3x3 32->64", mb, 32, 64, 10, 3, 1, 0, 1), ("mnist 3x3 64->64", mb, 64, 64, 8, 3, 1, 0, 1)]
  out += [("vit patch 16x16/16", 1, 3, 192, 224, 16, 16, 0, 1)]
  return out

def med(f, runs: int) -> float:
  f()   # compile and warm up
  return median_s(f, runs)

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--quick", action="store_true")
  ap.add_argument("--only", default=None, help="only shapes whose name contains this")
  ap.add_argument("--runs", type=int, default=3)
  ap.add_argument("--no-grad", action="store_true", help="forward only")
  ap.add_argument("--no-matmul", action="store_true", help="skip our matmul of the same FLOPs")
  ap.add_argument("--json", default=None)
  args = ap.parse_args()
  import torch
  import torch.nn.functional as F
  rng, rows, bad = np.random.default_rng(0), [], []
  print(f"{'shape':22s} {'batch':>5s} {'pass':6s} {'GFLOP':>7s} {'ours':>8s} {'torch':>8s} {'matmul':>8s} {'ms':>8s} {'/torch':>7s} {'/matmul':>7s}")
  for name, bs, ci, co, hw, k, s, p, g in shapes(args.quick):
    if args.only and args.only not in name: continue
    xn = rng.standard_normal((bs, ci, hw, hw), dtype=np.float32)
    wn = (rng.standard_normal((co, ci // g, k, k), dtype=np.float32) / np.sqrt(ci // g * k * k)).astype(np.float32)
    xt, wt = torch.from_numpy(xn), torch.from_numpy(wn)
    yt = F.conv2d(xt, wt, stride=s, padding=p, groups=g)
    oh = yt.shape[2]
    gn = rng.standard_normal(yt.shape, dtype=np.float32)
    gt = torch.from_numpy(gn)
    flops = 2 * bs * co * (ci // g) * k * k * oh * oh
    x, w, gy = Tensor(xn).realize(), Tensor(wn).realize(), Tensor(gn).realize()
    x.requires_grad, w.requires_grad = True, True
    passes = {"fwd": (lambda: x.conv2d(w, stride=s, padding=p, groups=g).realize(), lambda: F.conv2d(xt, wt, stride=s, padding=p, groups=g), yt)}
    if not args.no_grad:
      dxt = torch.nn.grad.conv2d_input(xt.shape, wt, gt, stride=s, padding=p, groups=g)
      dwt = torch.nn.grad.conv2d_weight(xt, wt.shape, gt, stride=s, padding=p, groups=g)
      passes["dinput"] = (lambda: x.conv2d(w, stride=s, padding=p, groups=g).gradient(x, gradient=gy)[0].realize(),
                          lambda: torch.nn.grad.conv2d_input(xt.shape, wt, gt, stride=s, padding=p, groups=g), dxt)
      passes["dweight"] = (lambda: x.conv2d(w, stride=s, padding=p, groups=g).gradient(w, gradient=gy)[0].realize(),
                           lambda: torch.nn.grad.conv2d_weight(xt, wt.shape, gt, stride=s, padding=p, groups=g), dwt)
    mm = None
    if not args.no_matmul:   # the im2col GEMM per group: (g, pixels, K) @ (g, K, cout/g)
      a, b = Tensor.randn(g, bs * oh * oh, ci // g * k * k).realize(), Tensor.randn(g, ci // g * k * k, co // g).realize()
      mm = flops / med(lambda: (a @ b).realize(), args.runs) / 1e9
    for pname, (ours, ref, want) in passes.items():
      got = ours().numpy()
      err = float(np.abs(got - want.numpy()).max() / (np.abs(want.numpy()).max() + 1e-6))
      if not np.isfinite(err) or err > 1e-4: bad.append(f"{name} batch {bs} {pname}: max error {err:.2e} (relative to the largest value)")
      t_ours, t_torch = med(ours, args.runs), med(ref, args.runs)
      r = dict(shape=name, batch=bs, pass_=pname, gflop=flops / 1e9, ours=flops / t_ours / 1e9, torch=flops / t_torch / 1e9, matmul=mm, ms=t_ours * 1e3, err=err)
      rows.append(r)
      mmr = f"{r['ours']/mm:7.2f}" if mm else "      -"
      print(f"{name:22s} {bs:5d} {pname:6s} {r['gflop']:7.3f} {r['ours']:8.2f} {r['torch']:8.2f} {mm or 0:8.2f} {r['ms']:8.2f} {r['ours']/r['torch']:7.3f} {mmr}", flush=True)
  if args.json:
    with open(args.json, "w") as f: json.dump(rows, f, indent=1)
  for b in bad: print("WRONG:", b, file=sys.stderr)
  return 1 if bad else 0

if __name__ == "__main__": sys.exit(main())
