"""Tensors used from several threads at once (docs/guide.md, "Threads"): every value right, no internal error, and TinyJit
calls from two threads serialized instead of failing as "nested". The GIL's switch interval is shortened while these run, so
threads interleave inside the engine as they would on a busy machine."""
import os, signal, subprocess, sys, threading, time
import numpy as np
import pytest
from tinygrad import Tensor, TinyJit, Device
from tinygrad.codegen import get_program

@pytest.fixture(autouse=True)
def busy_switching():
  old = sys.getswitchinterval()
  sys.setswitchinterval(1e-5)
  yield
  sys.setswitchinterval(old)

def in_threads(fn, n: int = 4) -> list:
  """fn(i) on n threads at once; returns their results, raising the first exception any of them raised."""
  out: list = [None] * n
  errs: list[BaseException] = []
  def run(i: int) -> None:
    try: out[i] = fn(i)
    except BaseException as e: errs.append(e)
  ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
  for t in ts: t.start()
  for t in ts: t.join()
  if errs: raise errs[0]
  return out

def test_ops_from_four_threads_match_numpy():
  def work(seed: int) -> int:
    rng = np.random.default_rng(seed)
    for i in range(24):
      a, b = rng.standard_normal((4, 5)).astype(np.float32), rng.standard_normal(5).astype(np.float32)
      ta, tb = Tensor(a), Tensor(b)
      k = i % 4
      if k == 0: got, want = (ta * 2 + tb).relu().sum(1).numpy(), np.maximum(a * 2 + b, 0).sum(1)
      elif k == 1: got, want = (ta @ tb).numpy(), a @ b
      elif k == 2: got, want = (ta.exp() - tb).max(0).numpy(), (np.exp(a) - b).max(0)
      else:
        c = Tensor.zeros(4, 5).contiguous().realize()
        c.assign(ta + i).realize()
        got, want = c.numpy(), a + i
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"thread {seed} op {i}")
    return seed
  assert in_threads(work) == [0, 1, 2, 3]

def test_one_renderer_renders_on_several_threads():
  # BEAM compiles candidates on threads with the device's one renderer: its working state must not be shared
  ren = Device[Device.DEFAULT].renderer
  xs = [Tensor.empty(16, 16 + 8 * i) for i in range(4)]
  asts = [(x.exp() * 3 + x.sum(1, keepdim=True)).schedule()[-1].ast for x in xs]
  want = [get_program(a, ren, compile=False).src for a in asts]
  for _ in range(3): assert in_threads(lambda i: get_program(asts[i], ren, compile=False).src) == want

def test_tinyjit_called_from_two_threads():
  @TinyJit
  def step(x: Tensor) -> Tensor: return (x * 2 + 1).sum(0).realize()
  def work(i: int) -> None:
    for k in range(5):
      a = np.full((3, 4), i * 10 + k, np.float32)
      np.testing.assert_allclose(step(Tensor(a)).numpy(), (a * 2 + 1).sum(0), err_msg=f"thread {i} call {k}")
  in_threads(work, 2)

def test_a_capture_takes_only_its_own_threads_assigns():
  # thread B leaves an assign pending while thread A's TinyJit captures: A's capture must not take (and replay) B's update
  x = Tensor.zeros(4).contiguous().realize()
  first, pending, captured = threading.Event(), threading.Event(), threading.Event()
  @TinyJit
  def f(a: Tensor) -> Tensor: return (a + 1).realize()
  def a_thread() -> None:
    f(Tensor([0.0] * 4))
    first.set()
    pending.wait()
    for k in range(1, 4): f(Tensor([float(k)] * 4))   # captures on its second call, replays on the third and fourth
    captured.set()
  def b_thread() -> None:
    first.wait()
    x.assign(x + 1)   # pending until B realizes it
    pending.set()
    captured.wait()
    x.realize()
  ta, tb = threading.Thread(target=a_thread), threading.Thread(target=b_thread)
  ta.start()
  tb.start()
  ta.join()
  tb.join()
  assert x.tolist() == [1.0] * 4

def test_the_bytes_read_from_a_view_outlive_its_copy():
  # a view is read through a copy of its own; the bytes were a view of that copy's memory, freed when _host_bytes returned,
  # so the next buffer of that size (another thread's, in the test above) overwrote them before numpy() copied them
  x = Tensor([1.0, 2.0, 3.0]) * 2
  raw = x[::-1]._host_bytes()
  for _ in range(4): (Tensor([5.0, 5.0, 5.0]) * 7).realize()
  np.testing.assert_array_equal(np.frombuffer(raw, np.float32), [6, 4, 2])

def test_random_draws_from_threads_are_distinct_and_the_serial_ones():
  # the generator's state is shared: a draw's snapshot and counter bump interleaved with another thread's drew the same
  # numbers on two threads (or failed with a KeyError in realize); after manual_seed the threads draw the serial draws' set
  for seed in range(3):
    Tensor.manual_seed(seed)
    got = [x for r in in_threads(lambda i: [tuple(Tensor.rand(3).tolist()) for _ in range(8)]) for x in r]
    Tensor.manual_seed(seed)
    want = [tuple(Tensor.rand(3).tolist()) for _ in range(32)]
    assert len(set(got)) == 32 and set(got) == set(want)

def _wait_child(pid: int, timeout: float = 10) -> None:
  # a forked child must exit 0 within `timeout` seconds (a hang is killed and fails the test)
  deadline = time.monotonic() + timeout
  while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline: time.sleep(0.01)
  if done[0] == 0:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")
  assert os.waitstatus_to_exitcode(done[1]) == 0

@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_while_another_thread_realizes_does_not_hang_the_child():
  # the engine lock (and the tensor registry's) held by a thread that does not exist in the child: its first realize (or new
  # Tensor) waited forever. A fork now waits for the other thread's realize and the child computes right values
  a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64) / 4096
  want = (a @ a).sum(1)
  (Tensor(a) @ Tensor(a)).sum(1).numpy()   # (a first use imports modules: a fork while one is half-imported hangs any child)
  stop = threading.Event()
  def busy() -> None:
    while not stop.is_set(): (Tensor(a) @ Tensor(a)).sum(1).numpy()
  t = threading.Thread(target=busy)
  t.start()
  try:
    for _ in range(4):
      pid = os.fork()
      if pid == 0:
        ok = np.allclose((Tensor(a) @ Tensor(a)).sum(1).numpy(), want, rtol=1e-5) and (Tensor([1.0, 2.0]) * 3).tolist() == [3.0, 6.0]
        os._exit(0 if ok else 3)
      _wait_child(pid)
  finally:
    stop.set()
    t.join()

def test_a_capture_leaves_the_tensors_other_threads_make_meanwhile_alone():
  # a capture computes the lazy tensors its call made and left alive (each replay computes them again): it took every tensor
  # made since the call began, on any thread, so B's y = w * 2 made during A's capture was rewritten by A's replays, also
  # after B updated w (y read 4, not 2)
  w = Tensor.ones(4).contiguous().realize()
  capturing, made, captured, updated, replayed = (threading.Event() for _ in range(5))
  calls: list = []
  @TinyJit
  def f(a: Tensor) -> Tensor:
    calls.append(a)
    if len(calls) == 2:   # (the capture call)
      capturing.set()
      assert made.wait(5)
    return (a + 1).realize()
  box: dict = {}
  def a_thread() -> None:
    for k in range(2): f(Tensor([float(k)] * 4))
    captured.set()
    assert updated.wait(5)
    f(Tensor([5.0] * 4))
    replayed.set()
  def b_thread() -> None:
    assert capturing.wait(5)
    box["y"] = w * 2   # made (lazy) while A captures
    made.set()
    assert captured.wait(5)
    w.assign(w + 1).realize()
    updated.set()
    assert replayed.wait(5)
    box["got"] = box["y"].tolist()
  in_threads(lambda i: a_thread() if i == 0 else b_thread(), 2)
  assert box["got"] == [2.0] * 4

def test_a_signal_handler_making_tensors_inside_the_registry_lock():
  # a signal handler (or a __del__, a weakref callback) that makes a Tensor on the thread that was inside the live-tensor
  # registry's lock deadlocked on it: the handler here lands right after a new tensor's registration, inside the lock
  code = """if True:
    import signal
    import tinygrad.tensor as tt
    from tinygrad import Tensor
    got, fired = [], []
    signal.signal(signal.SIGUSR1, lambda *a: got.append((Tensor([1.0, 2.0]) * 3).tolist()))
    class Registry(dict):
      def __setitem__(self, k, v):
        super().__setitem__(k, v)
        if not fired:
          fired.append(1)
          signal.raise_signal(signal.SIGUSR1)
    tt.all_tensors = Registry(tt.all_tensors)
    x = (Tensor([4.0]) + 1).tolist()
    print(x, got)"""
  r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["[5.0]", "[[3.0,", "6.0]]"]

@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_two_threads_forking_at_once():
  # the fork hook's "got the engine lock" was one flag for the process: a second thread forking while the first thread's
  # fork held the lock skipped the wait, and its child inherited the lock held by a thread it does not have (it hung)
  from tinygrad import helpers
  (Tensor([1.0]) * 2).realize()
  entered = threading.Event()
  def first_fork() -> None:   # a fork in flight on another thread: its before-hook ran, its after-hook not yet
    helpers.engine_before_fork()
    entered.set()
    time.sleep(0.3)
    helpers._engine_after_fork_in_parent()
  t = threading.Thread(target=first_fork)
  t.start()
  entered.wait()
  pid = os.fork()
  if pid == 0: os._exit(0 if (Tensor([1.0, 2.0]) * 3).tolist() == [3.0, 6.0] else 3)
  t.join()
  _wait_child(pid)
