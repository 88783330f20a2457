#!/usr/bin/env python3
"""When should a CPU kernel use several threads? Measures, on this machine, the cost of one kernel call on the calling
thread, the extra cost of handing a kernel to the pool (workers still spinning from the last kernel, and asleep), and the
time per estimated uop of kernel work, then prints the CPU_THREAD_WORK that makes a split pay for its hand-off
(tinygrad_cpu/runtime.py: a kernel with estimated work w runs on min(CPU_COUNT, w // CPU_THREAD_WORK) threads).

  python bench/cpu_threads.py [--compiler LLVM|CLANG|GCC]
Figures, not assertions; on a loaded machine they are upper bounds (the load is printed)."""
from __future__ import annotations
import argparse, os, statistics, sys, time
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plugins", "tinygrad_cpu", "tests"))
from tinygrad import Device
from tinygrad.dtype import dtypes
from tinygrad_cpu.runtime import CPUProgram, CPU_COUNT, CPU_SPIN_US, CPU_THREAD_WORK
from _cpu_kernels import elementwise

def per_call(fn, n: int, gap_s: float = 0.0) -> float:
  """Median seconds of one call over n calls (gap_s of sleep between calls lets the pool's workers fall asleep)."""
  ts = []
  for _ in range(n):
    if gap_s: time.sleep(gap_s)
    st = time.perf_counter()
    fn()
    ts.append(time.perf_counter() - st)
  return statistics.median(ts)

def main() -> None:
  ap = argparse.ArgumentParser()
  ap.add_argument("--compiler", default=None, help="the CPU compiler pair (default: the device's)")
  a = ap.parse_args()
  dev = Device["CPU" + (f":{a.compiler}" if a.compiler else "")]
  def load(n: int) -> CPUProgram:
    return CPUProgram("k", dev.compiler.compile(dev.renderer.render(elementwise(lambda x: x * 1.5 + 1, [dtypes.float32], dtypes.float32, n), "k")))
  tiny, big = load(64), load(1 << 22)
  x, o = np.ones(1 << 22, np.float32), np.zeros(1 << 22, np.float32)
  args = (o.ctypes.data, x.ctypes.data)
  print(f"CPU {dev.compiler_name}, CPU_COUNT={CPU_COUNT}, CPU_SPIN_US={CPU_SPIN_US}, CPU_THREAD_WORK={CPU_THREAD_WORK}, "
        f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
  if CPU_COUNT < 2:
    print("CPU_COUNT is 1: nothing is split, no hand-off to measure")
    return
  tiny.threads = 1
  one = per_call(lambda: tiny(*args), 3000)
  tiny.threads = 2
  spinning = per_call(lambda: tiny(*args), 3000) - one
  asleep = per_call(lambda: tiny(*args), 50, gap_s=CPU_SPIN_US * 3e-6 + 0.002) - one
  big.threads = 1
  ns_per_uop = per_call(lambda: big(*args), 20) / big.work * 1e9
  print(f"  one kernel call on the calling thread     {one*1e6:8.2f} us")
  print(f"  hand-off to the pool, workers spinning    {spinning*1e6:8.2f} us")
  print(f"  hand-off to the pool, workers asleep      {asleep*1e6:8.2f} us")
  print(f"  kernel work                               {ns_per_uop:8.3f} ns per estimated uop")
  # two threads pay when half the work saves more than the hand-off: w/2 * t > h, i.e. w > 2h/t; the runtime gives two
  # threads from w = 2 * CPU_THREAD_WORK, so the break-even CPU_THREAD_WORK is h/t
  print(f"  break-even CPU_THREAD_WORK                {spinning*1e9/ns_per_uop:8.0f} (workers spinning), "
        f"{asleep*1e9/ns_per_uop:.0f} (asleep); current {CPU_THREAD_WORK}")
  # the default asks more than break-even: a split should pay its hand-off several times over (a preempted worker costs more)
  print(f"  a split paying 3x its hand-off (spinning)  {3*spinning*1e9/ns_per_uop:8.0f}")

if __name__ == "__main__": main()
