"""One rank of the tests/core/test_distributed.py jobs: `mpirun -n 2 python distributed_worker.py MODE OUT_DIR`.

collectives: all_reduce/broadcast of known per-rank values, and data-parallel SGD (all_reduce_grads in a TinyJit step)
and Adam (DistributedOptimizer) of an MLP on this rank's half of the batch; the rank writes OUT_DIR/rank<r>.json, which
the test compares with numpy and with train() run in one process on the whole batch.
and runs examples/beautiful_mnist.py's train() (its mpirun block) with a small model.
raise / kill / hang / stop: rank 1 fails (an exception, SIGKILL, a stall, SIGSTOP) before a collective that rank 0 waits in.
mismatch KIND: rank 1 calls a collective of another dtype, shape or op than rank 0's.
"""
from __future__ import annotations
import json, os, signal, sys, time
import numpy as np

SIZES = (0, 1, 7, 1001)   # empty, one element, odd lengths
BATCH, STEPS = 16, 5

def rank_values(r: int, n: int, dtype: str) -> np.ndarray:
  """What rank `r` contributes to the all_reduce tests (distinct per rank, exact in float32)."""
  return ((np.arange(n) % 13) * (r + 1) - 3 * r).astype(dtype)

def batch() -> tuple[np.ndarray, np.ndarray]:
  rng = np.random.default_rng(0)
  return rng.standard_normal((BATCH, 8)).astype(np.float32), rng.integers(0, 4, BATCH).astype(np.int32)

def train(opt_name: str, rank: int = 0, world: int = 1, dist=None) -> list[np.ndarray]:
  """STEPS steps of a 2-layer MLP on rank `rank`'s 1/world of batch() (all of it for world 1): the final weights.
  With `dist` the optimizer is data-parallel: SGD reduces with all_reduce_grads inside the jitted step, Adam through
  DistributedOptimizer (which also gives every rank rank 0's initial weights: ranks seed differently here)."""
  from tinygrad import Tensor, TinyJit, nn
  Tensor.manual_seed(0 if rank == 0 else 100 + rank)
  l1, l2 = nn.Linear(8, 16), nn.Linear(16, 4)
  params = nn.state.get_parameters([l1, l2])
  X, Y = batch()
  per = BATCH // world
  x, y = Tensor(X[rank*per:(rank+1)*per]), Tensor(Y[rank*per:(rank+1)*per])
  if opt_name == "sgd":
    opt = nn.optim.SGD(params, lr=0.1, momentum=0.9)
    if dist is not None: dist.broadcast_params(params)
    @TinyJit
    def sgd_step() -> Tensor:
      opt.zero_grad()
      loss = l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
      if dist is not None: dist.all_reduce_grads(opt.params)
      return loss.realize(*opt.schedule_step())
    for _ in range(STEPS): sgd_step()
  else:
    opt = nn.optim.Adam(params, lr=0.01)
    if dist is not None: opt = dist.DistributedOptimizer(opt)
    for _ in range(STEPS):
      opt.zero_grad()
      l2(l1(x).relu()).sparse_categorical_crossentropy(y).backward()
      opt.step()
  return [p.numpy() for p in params]

def collectives(out_dir: str) -> None:
  from tinygrad import Tensor, dtypes
  from tinygrad import distributed as dist
  dist.init()
  dist.init()   # idempotent
  r, w = dist.rank(), dist.world_size()
  calls = {"n": 0}
  orig = dist._get().all_reduce
  def counting(*args):
    calls["n"] += 1
    orig(*args)
  dist._get().all_reduce = counting   # type: ignore[method-assign]
  res: dict = {"rank": r, "world": w, "get_rank": dist.get_rank(), "get_world_size": dist.get_world_size()}
  for dt in ("float32", "int32"):
    for n in SIZES:
      t = Tensor(rank_values(r, n, dt))
      res[f"sum_{dt}_{n}"] = dist.all_reduce(t).numpy().tolist()
      res[f"max_{dt}_{n}"] = dist.all_reduce(t, "max").numpy().tolist()
      res[f"min_{dt}_{n}"] = dist.all_reduce(t, "min").numpy().tolist()
      res[f"bcast_{dt}_{n}"] = dist.broadcast(t, src=1).numpy().tolist()
      assert dist.all_reduce(t).dtype == t.dtype and dist.all_reduce(t).device == t.device
  res["mean_float32"] = dist.all_reduce(Tensor(rank_values(r, 7, "float32")).reshape(7, 1), "mean").numpy().tolist()
  res["sum_float16"] = dist.all_reduce(Tensor(rank_values(r, 5, "float16"))).numpy().tolist()
  res["sum_lazy"] = dist.all_reduce(Tensor.arange(6).reshape(2, 3).T * (r + 1)).numpy().tolist()   # a view of a lazy graph
  dist.barrier()
  for opt_name in ("sgd", "adam"):
    before = calls["n"]
    res[f"{opt_name}_weights"] = [p.tolist() for p in train(opt_name, r, w, dist)]
    res[f"{opt_name}_calls"] = calls["n"] - before
  res["dtype_ok"] = dist.all_reduce(Tensor([1, 2], dtype=dtypes.int64)).numpy().tolist()
  res["mnist_losses"], res["mnist_weights"] = mnist()
  with open(os.path.join(out_dir, f"rank{r}.json"), "w") as f: json.dump(res, f)

def mnist() -> tuple[list[float], list]:
  """examples/beautiful_mnist.py's train() under mpirun (its distributed block), with a one-layer model for speed."""
  from tinygrad import Tensor, nn
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  from pathimport import load_file
  ex = load_file("examples/beautiful_mnist.py", "example_beautiful_mnist")
  made: list = []
  class Tiny:
    def __init__(self):
      self.l = nn.Linear(784, 10)
      made.append(self)
    def __call__(self, x: Tensor) -> Tensor: return self.l(x.flatten(1).float() / 255)
  ex.Model = Tiny
  losses = ex.train(*ex.generated_mnist(64, 16), steps=3, bs=16)
  return losses, [p.numpy().tolist() for p in nn.state.get_parameters(made[0])]

def failing(mode: str) -> None:
  from tinygrad import Tensor, Context
  from tinygrad import distributed as dist
  dist.init()
  with Context(TINYGRAD_DIST_TIMEOUT=120): x = dist.all_reduce(Tensor.ones(4)).numpy()   # both ranks alive (and started) here
  if dist.rank() == 1:
    print("rank 1 fails now", flush=True)
    if mode == "raise": raise RuntimeError("rank 1 failed on purpose")
    if mode == "kill": os.kill(os.getpid(), signal.SIGKILL)   # as the OOM killer would
    if mode == "stop": os.kill(os.getpid(), signal.SIGSTOP)   # alive but silent (^Z, a debugger, a stopped container)
    time.sleep(600)   # hang: never reaches the collective below
  dist.all_reduce(Tensor.ones(4)).numpy()
  print(f"rank {dist.rank()} finished after a peer failed: {x}", flush=True)

def mismatch(kind: str) -> None:
  """Rank 1 calls a collective of another dtype, shape or op than rank 0's: the job must abort, not compute garbage."""
  from tinygrad import Tensor, dtypes
  from tinygrad import distributed as dist
  dist.init()
  x = Tensor.ones(4)
  if dist.rank() == 1 and kind == "dtype": x = Tensor.ones(4, dtype=dtypes.int32)
  if dist.rank() == 1 and kind == "shape": x = Tensor.ones(5)
  y = dist.broadcast(x) if dist.rank() == 1 and kind == "op" else dist.all_reduce(x)
  print(f"rank {dist.rank()} finished mismatched collectives: {y.numpy()}", flush=True)

if __name__ == "__main__":
  if sys.argv[1] == "collectives": collectives(sys.argv[2])
  elif sys.argv[1] == "mismatch": mismatch(sys.argv[2])
  else: failing(sys.argv[1])
