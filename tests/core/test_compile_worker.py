"""CompilerWorker (device.py): a vendor compiler library run in a child process. A crash there fails one compile with a
CompileError and the next call starts a new child; errors and startup failures come back with their messages."""
import ctypes, os
import pytest
from tinygrad.device import CompilerWorker, CompileError

class Toy:
  """What a worker holds (imported by the child from this module): compiles by upper-casing, or crashes on request."""
  def __init__(self, tag: str = "") -> None: self.tag, self.calls = tag, 0
  def worker_info(self) -> bytes: return f"toy {self.tag} pid {os.getpid()}".encode()
  def worker_compile(self, src: bytes) -> bytes:
    self.calls += 1
    if src == b"bad": raise CompileError("toy: 'bad' is not a program")
    if src == b"boom": raise ValueError("toy blew up")
    return src.upper() + b"#%d" % self.calls
  def worker_segfault(self, _: bytes) -> bytes: return ctypes.string_at(0)   # a NULL read, as a broken C library does

def test_calls_errors_and_info():
  w = CompilerWorker(f"{__name__}:Toy", "v1", name="toy")
  assert w.info.startswith(b"toy v1 pid ") and w.info != f"toy v1 pid {os.getpid()}".encode()   # built in another process
  assert w.call("compile", b"abc") == b"ABC#1" and w.call("compile", b"\n\x00x" * 1000).startswith(b"\n\x00X")   # any bytes
  with pytest.raises(CompileError, match="'bad' is not a program") as e: w.call("compile", b"bad", src="bad")
  assert e.value.src == "bad"
  with pytest.raises(RuntimeError, match="toy: ValueError: toy blew up"): w.call("compile", b"boom")
  with pytest.raises(RuntimeError, match="has no attribute 'worker_nope'"): w.call("nope")
  assert w.call("compile", b"x") == b"X#5"   # the same child served every call

def test_a_crash_fails_one_call_and_the_next_starts_a_new_worker():
  w = CompilerWorker(f"{__name__}:Toy", name="toy")
  first = w.info
  with pytest.raises(CompileError, match=r"toy crashed \(SIGSEGV\) in its worker process; this process is unaffected") as e:
    w.call("segfault", src="the kernel")
  assert e.value.src == "the kernel"
  assert w.call("compile", b"ok") == b"OK#1" and w.info != first   # a fresh child

def test_startup_failure_is_a_runtime_error_naming_it():
  with pytest.raises(RuntimeError, match="nowhere: ModuleNotFoundError: No module named 'no_such_module_xyz'"):
    CompilerWorker("no_such_module_xyz:Thing", name="nowhere")

class Crashy:
  """A library that crashes as it loads."""
  def __init__(self) -> None: ctypes.string_at(0)

def test_a_crash_while_starting_is_a_runtime_error_naming_it():
  # the child died before its first answer: an EOFError with no message came out of CompilerWorker(...)
  with pytest.raises(RuntimeError, match=r"crashy: its worker process died while starting \(SIGSEGV\)"):
    CompilerWorker(f"{__name__}:Crashy", name="crashy")

def test_ctrl_c_while_a_worker_restarts_leaves_no_answer_for_the_next_call(monkeypatch):
  # interrupted while it waited for the new child's first answer (its info), the child was kept: the next compile read that
  # answer as its own and returned b"toy  pid N" as the program
  w = CompilerWorker(f"{__name__}:Toy", name="toy")
  with pytest.raises(CompileError): w.call("segfault")
  read = CompilerWorker._read
  def interrupted(self):
    monkeypatch.setattr(CompilerWorker, "_read", read)
    raise KeyboardInterrupt
  monkeypatch.setattr(CompilerWorker, "_read", interrupted)
  with pytest.raises(KeyboardInterrupt): w.call("compile", b"abc")
  assert w.call("compile", b"abc") == b"ABC#1"
