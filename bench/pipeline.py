#!/usr/bin/env python3
"""Compiler pipeline figures: time to schedule, codegen and render one new kernel (elementwise, reduce, matmul),
and the PYTHON device's throughput. Figures, not assertions."""
from __future__ import annotations
import os, sys, time, statistics
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "core"))
from tinygrad import Tensor
from tinygrad.device import Device
from tinygrad.engine.schedule import create_schedule
from tinygrad.codegen import get_program

def median_ms(fxn, n: int = 5) -> float:
  ts = []
  for _ in range(n):
    st = time.perf_counter()
    fxn()
    ts.append(time.perf_counter() - st)
  return statistics.median(ts) * 1e3

def graphs(i: int) -> dict[str, Tensor]:
  # a distinct constant per call makes every graph (and so every kernel) new: nothing comes from a cache
  a, b = Tensor.empty(1024, 1024), Tensor.empty(1024, 1024)
  return {"elementwise a*b+c": a * b + (1.0 + i), "reduce sum(axis=1)": (a + i).sum(axis=1), "matmul 1024": (a + i) @ b}

def main() -> None:
  dev = Device.DEFAULT
  ren = Device[dev].renderer
  print(f"device {dev}, renderer {type(ren).__name__}")
  print(f"{'kernel':22s} {'schedule ms':>12s} {'codegen+render ms':>18s}")
  counter = iter(range(10**6))
  for name in graphs(0):
    sched_t = median_ms(lambda: create_schedule([graphs(next(counter))[name].uop]))
    def codegen() -> None:
      s, _ = create_schedule([graphs(next(counter))[name].uop])
      get_program(s[-1].ast, ren)
    total = median_ms(codegen)
    print(f"{name:22s} {sched_t:12.2f} {max(total - sched_t, 0):18.2f}")
  for n in (64, 256):
    a, b = Tensor.rand(n, n, device="PYTHON").realize(), Tensor.rand(n, n, device="PYTHON").realize()
    (a @ b).realize()
    ms = median_ms(lambda: (a @ b).realize(), 3)
    print(f"PYTHON device matmul {n}: {ms:8.2f} ms, {2*n**3/ms/1e6:8.3f} GFLOPS")
  x = Tensor.rand(1 << 20, device="PYTHON").realize()
  (x * 2 + 1).realize()
  ms = median_ms(lambda: (x * 2 + 1).realize(), 3)
  print(f"PYTHON device elementwise 1M floats: {ms:8.2f} ms, {(1 << 20) * 8 / ms / 1e6:8.3f} GB/s")

if __name__ == "__main__": main()
