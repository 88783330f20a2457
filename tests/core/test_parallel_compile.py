"""Parallel compile: a schedule's new kernels compile on PARALLEL_COMPILE threads (compilers marked parallel_safe) while the
next ones render; results, execution order and the error raised (the first failing kernel's, naming it) are those of
compiling one kernel after another (PARALLEL_COMPILE=0)."""
import threading, time
import numpy as np
import pytest
from tinygrad import Tensor, Device
from tinygrad.device import Compiler, CompileError
from tinygrad.helpers import Context
from tinygrad.engine.realize import method_cache

class RecordingCompiler(Compiler):
  """The PYTHON device's binary is its source: this compiler returns it, recording which thread compiled what; sources
  containing a name in `fail` raise CompileError, as a real compiler's diagnostics would."""
  parallel_safe = True
  def __init__(self, fail: tuple[str, ...] = ()):
    super().__init__(cachekey=None)
    self.fail, self.calls, self.lock = fail, [], threading.Lock()
  def compile(self, src: str) -> bytes:
    with self.lock: self.calls.append((threading.current_thread().name, src))
    bad = [n for n in self.fail if n in src]
    if bad: raise CompileError(f"injected failure in {bad[0]}", src)
    return src.encode()

@pytest.fixture
def python_compiler(monkeypatch):
  dev = Device["PYTHON"]
  def use(comp: RecordingCompiler) -> RecordingCompiler:
    monkeypatch.setattr(dev, "compiler", comp)
    monkeypatch.setattr(dev.renderer, "compiler", comp)
    method_cache.clear()
    return comp
  yield use
  method_cache.clear()

def _model(seed: int) -> list[Tensor]:
  # several independent kernels in one schedule (a distinct constant per seed: new kernels every call)
  rng = np.random.default_rng(seed)
  a = Tensor(rng.standard_normal((8, 8), dtype=np.float32), device="PYTHON")
  b = Tensor(rng.standard_normal((8, 8), dtype=np.float32), device="PYTHON")
  return [(a @ b + seed).relu(), (a * b).sum(1) - seed, a.exp2() * (seed + 1), (a - b).max(0)]

@pytest.mark.parametrize("n", [0, 1, 3])
def test_parallel_compile_gives_identical_results(python_compiler, n):
  want = [t.numpy() for t in _model(7)]   # reference: the device as configured (no recording compiler)
  comp = python_compiler(RecordingCompiler())
  with Context(PARALLEL_COMPILE=n):
    outs = _model(7)
    Tensor.realize(*outs)
  for w, o in zip(want, outs): np.testing.assert_array_equal(w, o.numpy())
  threads = {t for t, _ in comp.calls}
  assert len(comp.calls) >= 4
  # off: every compile on the calling thread; on: every one on the compile pool's threads
  assert threads == ({threading.current_thread().name} if n == 0 else {t for t in threads if t.startswith("tinygrad_compile")})

def _first_error(python_compiler, n: int, fail_first: int) -> tuple[str, list[str]]:
  probe = python_compiler(RecordingCompiler())
  with Context(PARALLEL_COMPILE=0): Tensor.realize(*_model(11))
  srcs = [src for _, src in probe.calls]
  python_compiler(RecordingCompiler(fail=tuple(srcs[fail_first:])))
  with Context(PARALLEL_COMPILE=n), pytest.raises(CompileError) as e: Tensor.realize(*_model(11))
  names = [r.p.name for r in method_cache.values()]   # the kernels that compiled before the failure
  return str(e.value), names

@pytest.mark.parametrize("fail_first", [0, 1])
def test_parallel_compile_raises_the_first_failing_kernels_error(python_compiler, fail_first):
  serial, ok_serial = _first_error(python_compiler, 0, fail_first)
  parallel, ok_parallel = _first_error(python_compiler, 2, fail_first)
  assert parallel == serial                      # the same kernel's error, word for word
  assert serial.startswith("kernel ") and "injected failure" in serial   # it names the kernel
  assert len(ok_serial) == fail_first            # one after another: the kernels before the failing one compiled

def test_failed_background_compile_is_not_cached(python_compiler):
  probe = python_compiler(RecordingCompiler())
  t = Tensor([1.0, 2.0, 3.0], device="PYTHON") * 5 + 2
  with Context(PARALLEL_COMPILE=2): t2 = (Tensor([1.0, 2.0, 3.0], device="PYTHON") * 5 + 2).realize()
  assert t2.tolist() == [7.0, 12.0, 17.0] and probe.calls
  python_compiler(RecordingCompiler(fail=("",)))   # every source fails
  with Context(PARALLEL_COMPILE=2), pytest.raises(CompileError): t.realize()
  python_compiler(RecordingCompiler())             # the cause is gone: the same kernel compiles again and runs
  with Context(PARALLEL_COMPILE=2): assert t.tolist() == [7.0, 12.0, 17.0]

class SlowFailingCompiler(RecordingCompiler):
  """Every compile takes a while and fails: the first error is raised while later kernels are still compiling."""
  def compile(self, src: str) -> bytes:
    time.sleep(0.05)
    with self.lock: self.calls.append((threading.current_thread().name, src))
    raise CompileError("injected failure", src)

def test_failed_parallel_compile_leaves_no_compile_running(python_compiler):
  # once the error is raised, every compile of that schedule has ended: none keeps running in the background, where it
  # would use whichever compiler the device has by then (the next test's, here) and count into its record
  comp = python_compiler(SlowFailingCompiler())
  with Context(PARALLEL_COMPILE=2), pytest.raises(CompileError): Tensor.realize(*_model(13))
  n = len(comp.calls)
  nxt = python_compiler(RecordingCompiler())
  time.sleep(0.5)
  assert len(comp.calls) == n == 4 and nxt.calls == []
