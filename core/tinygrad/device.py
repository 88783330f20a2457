"""Devices: Buffer, allocators, compilers and compiler pairs, the Compiled base class, and the `Device` registry.

A backend plugin subclasses `Compiled` (one per device), giving it an `Allocator`, a `CompilerSet` (the renderer +
compiler pairs it offers) and a runtime (program loader). `Device["NAME[:index][:compiler]"]` opens a device once,
through the provider that plugin discovery (`tinygrad.plugins`) found for NAME.
"""
from __future__ import annotations
import atexit, dataclasses, os, re, sys, threading, warnings, weakref, contextvars
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterator
from tinygrad.dtype import DType
from tinygrad.helpers import CACHELEVEL, DEBUG, DEV, ENGINE_LOCK, GlobalCounters, leaf_lock, env_switch as _env_switch
from tinygrad.renderer import Renderer

class DeviceError(RuntimeError):
  """A device (or one of its compilers) cannot be found, selected or opened; the message says which and why."""

class DeviceNameError(DeviceError, ValueError):
  """A device string that is not NAME[:index][:compiler] (ASCII only): a ValueError as well as a DeviceError."""

class CompilerChoiceError(DeviceError):
  """The user's explicit compiler choice (`CPU_CC=`, `CPU_LLVM=1`, `DEV=CPU:LLVM`) is unknown or fails: always fatal."""

class CompilerChoiceWarning(RuntimeWarning):
  """Two compiler choices disagree (`CPU_CC=LLVM` with `DEV=CPU:CLANG`): the warning names both and which one won."""

# ---- compilers ----

class CompileError(RuntimeError):
  """A kernel failed to compile. `diagnostics` is the compiler's message, `src` the source it was given."""
  def __init__(self, diagnostics: str, src: str | None = None):
    self.diagnostics, self.src = diagnostics, src
    if src is None: super().__init__(diagnostics)
    else:
      listing = "\n".join(f"{i+1:4d} | {line}" for i, line in enumerate(src.splitlines()))
      super().__init__(f"{diagnostics}\n---- source ----\n{listing}")

class Compiler:
  """Turns rendered source into the binary a device runtime loads.

  Subclasses implement `compile` (raising `CompileError` with the tool's diagnostics and the source on failure) and,
  when a tool version changes its output, `version` (cache it: it is called for every cache lookup).
  `cachekey` names this compiler's entries in the disk cache; None disables caching for it.
  `parallel_safe`: `compile` may run on several threads at once (and releases the GIL while it works), so a schedule's
  new kernels compile in parallel (PARALLEL_COMPILE threads); False: one after another on the calling thread.
  """
  parallel_safe: bool = False
  # the abilities of the renderer this compiler serves (Renderer.ability_key, set by Compiled): part of the cache key, so
  # two devices with different limits never share a cached binary
  target: tuple = ()
  def __init__(self, cachekey: str | None = None): self.cachekey = cachekey
  def compile(self, src: str) -> bytes:
    """The binary for `src`. The default is the source's UTF-8 bytes (for runtimes that load source)."""
    return src.encode()
  def compile_cached(self, src: str, refresh: bool = False) -> bytes:
    """`compile` through the disk cache, keyed by (cachekey, version(), target, code, src), `code` the hash of the packages
    of this compiler's class and its bases (diskcache.compiler_version). Failures raise and are never cached. refresh:
    compile even on a hit and replace the row (the cached binary failed to load)."""
    if self.cachekey is None or CACHELEVEL.value == 0: return self.compile(src)
    from tinygrad.diskcache import diskcache_get, diskcache_put, compiler_version
    # (the class's code: a plugin upgrade that changes the options it passes, --fmad or -O3, is another key)
    key = (self.cachekey, self.version(), repr(self.target), compiler_version(type(self)), src)
    row = {"version": self.version(), "device": self.cachekey}
    if not refresh and isinstance(lib := diskcache_get("compile", key, **row), bytes): return lib
    lib = self.compile(src)
    if not isinstance(lib, (bytes, bytearray, memoryview)): raise TypeError(f"{type(self).__name__}.compile returned {type(lib).__name__}, not bytes")
    diskcache_put("compile", key, bytes(lib), **row)
    return bytes(lib)
  def version(self) -> str:
    """The tool's version string; part of the cache key so an upgraded compiler never reuses stale binaries."""
    return ""
  def disassemble(self, lib: bytes) -> str:
    """Human-readable form of a compiled binary (for DEBUG output); optional."""
    raise NotImplementedError(f"{type(self).__name__} cannot disassemble")

class CompilerWorker:
  """A vendor compiler library run in a child Python process, for a Compiler that calls one in-process through ctypes
  (comgr, hiprtc, NVRTC): a crash inside the library (a segfault) fails that one compile with a CompileError instead of
  killing this process, the next call starts a new child, and the library never shares this process's address space.

  `factory` ("module:callable") is called in the child with the string `args`; `info` is the bytes its object's
  `worker_info()` returned there (b"" without one), and a failure to build it is a RuntimeError here with its message.
  `call(method, payload, src)` runs the object's `worker_<method>(payload: bytes) -> bytes` in the child: a CompileError
  there is a CompileError here (with `src` attached), another exception a RuntimeError naming it. Calls are serialized
  (one child, one request at a time); a forked process gets its own child. Frames are length-prefixed bytes, never pickle.
  """
  def __init__(self, factory: str, *args: str, name: str = ""):
    self.factory, self.args, self.name = factory, args, name or factory
    self._lock = threading.Lock()
    self._proc: Any = None
    self._pid = 0
    with self._lock: self.info = self._start()
  def _start(self) -> bytes:
    import subprocess, weakref
    # the child imports what this process can (sys.path: a test's or an app's own additions included)
    # (a session of its own: a terminal's Ctrl-C reaches only this process, which kills the child if it must; SIGINT is
    # ignored there only once the child runs _worker_main, and one during its start-up killed it)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    self._proc = subprocess.Popen([sys.executable, "-c", "from tinygrad.device import _worker_main; _worker_main()", self.factory, *self.args],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True)
    weakref.finalize(self, _stop_worker, self._proc)
    self._pid = os.getpid()
    try: status, out = self._read()
    except EOFError:
      code, self._proc = _stop_worker(self._proc), None
      raise RuntimeError(f"{self.name}: its worker process died while starting ({_exit_why(code)})") from None
    except BaseException:   # interrupted (Ctrl-C) before the child's first answer, which the next call would read as its own
      self._proc.kill()
      self._proc = None
      raise
    if status != 0: raise RuntimeError(f"{self.name}: {out.decode(errors='replace')}")
    return out
  def _read(self) -> tuple[int, bytes]:
    head = self._proc.stdout.read(9)
    if len(head) < 9: raise EOFError
    n = int.from_bytes(head[1:], "little")
    out = self._proc.stdout.read(n)
    if len(out) < n: raise EOFError
    return head[0], out
  def call(self, method: str, payload: bytes = b"", src: str | None = None) -> bytes:
    with self._lock:
      if self._proc is None or self._proc.poll() is not None or self._pid != os.getpid(): self.info = self._start()
      try:
        body = method.encode() + b"\n" + payload
        self._proc.stdin.write(len(body).to_bytes(8, "little") + body)
        self._proc.stdin.flush()
        status, out = self._read()
      except (OSError, EOFError):
        code, self._proc = _stop_worker(self._proc), None
        raise CompileError(f"{self.name} crashed ({_exit_why(code)}) in its worker process; this process is unaffected and the next compile "
                           "starts a new worker", src) from None
      except BaseException:   # interrupted mid-request (Ctrl-C): its answer would be read as the next one's
        self._proc.kill()
        self._proc = None
        raise
    if status == 1: raise CompileError(out.decode(errors="replace"), src)
    if status != 0: raise RuntimeError(f"{self.name}: {out.decode(errors='replace')}")
    return out

def run_tool(argv: list[str], input: bytes | str | None = None, *, text: bool = False, env: dict[str, str] | None = None) -> Any:
  """Run an external tool a compiler needs (a C compiler, a linker, `tool --version`): `argv` a list (no shell), its
  output captured; returns the subprocess.CompletedProcess (check its returncode). The tool runs in a session of its own,
  so a terminal's Ctrl-C reaches only this process: its handler decides (a KeyboardInterrupt kills the tool; a program
  whose own SIGINT handler goes on keeps its compile, where a tool in the terminal's process group died with the Ctrl-C).
  One that reached the tool while it was starting, before its session began, killed it all the same: it runs once more."""
  import signal, subprocess
  for _ in range(2):
    r = subprocess.run(argv, input=input, capture_output=True, text=text, env=env, start_new_session=True)
    if r.returncode != -signal.SIGINT: break
  return r

def _stop_worker(proc: Any) -> int:
  """Stop a worker (it exits at the end of its input; killed if it does not) and return its exit status."""
  try:
    proc.stdin.close()
    return proc.wait(timeout=5)
  except Exception:
    proc.kill()
    return proc.wait()

def _exit_why(code: int) -> str:
  # a child's exit status as words: the signal that killed it, or its status
  if code >= 0: return f"exit status {code}"
  import signal
  try: return signal.Signals(-code).name
  except ValueError: return f"signal {-code}"

def _worker_main() -> None:
  """The child side of CompilerWorker (argv: factory, args): requests in on stdin, answers out on stdout."""
  import importlib, signal
  signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle; it kills this child if it must
  inp, out = sys.stdin.buffer, sys.stdout.buffer
  sys.stdout = sys.stderr   # a stray print must not corrupt the answers
  def reply(status: int, data: bytes) -> None:
    out.write(bytes([status]) + len(data).to_bytes(8, "little") + data)
    out.flush()
  def err(e: Exception) -> bytes: return (str(e) if isinstance(e, RuntimeError) else f"{type(e).__name__}: {e}").encode()
  try:
    mod, fn = sys.argv[1].split(":")
    obj = getattr(importlib.import_module(mod), fn)(*sys.argv[2:])
    reply(0, obj.worker_info() if hasattr(obj, "worker_info") else b"")
  except Exception as e: return reply(2, err(e))
  while len(head := inp.read(8)) == 8:
    method, _, payload = inp.read(int.from_bytes(head, "little")).partition(b"\n")
    try: reply(0, getattr(obj, f"worker_{method.decode()}")(payload))
    except CompileError as e: reply(1, e.diagnostics.encode())
    except Exception as e: reply(2, err(e))

def _pair_name(renderer: Any) -> str:
  raw = getattr(renderer, "__name__", type(renderer).__name__)
  return re.sub(r"\W", "", re.sub(r"_?renderer$", "", raw, flags=re.I)).upper() or "DEFAULT"

@dataclass
class CompilerPair:
  """One way to produce programs for a device: a renderer and (optionally) a compiler, both constructed on selection.

  renderer: a Renderer subclass or a zero-argument factory returning a Renderer.
  compiler: a Compiler subclass or factory; None when the rendered source is itself the binary (WGSL, Metal source).
  ctrl_var: this pair's own switch (`CPU_LLVM`): =1 forces it, =0 skips it.
  name: shown by `python -m tinygrad` and used in `CPU_CC=NAME` / `DEV=CPU:NAME`; default: the renderer's class name
    without "Renderer", upper-case (ClangRenderer -> CLANG).
  Constructing the renderer or compiler may raise (a missing tool, a missing library): the pair then does not initialise.
  origin: set by the core on a pair that another plugin added through `tinygrad_compilers` ("plugin 'x' (distribution
    tinygrad-x)"), so the errors about it name who to ask; leave it empty.
  """
  renderer: Callable[[], Renderer]
  compiler: Callable[[], Compiler] | None = None
  ctrl_var: str | None = None
  name: str = ""
  origin: str = ""
  def __post_init__(self) -> None:
    if not self.name: self.name = _pair_name(self.renderer)

class CompilerSet:
  """The pairs a device offers, in order of preference, and the set's control variable (`CPU_CC`) that picks one by name.

  prefix: the device's control-variable prefix, when given: `ctrl_var` defaults to `<prefix>_CC` and each pair without its
  own ctrl_var gets `<prefix>_<pair name>`. The core derives no variable from the device's name; the convention is the
  name itself, but a name that is another tool's namespace (a device named OMP: OpenMP reads OMP_*) takes another prefix."""
  def __init__(self, cset: list[CompilerPair], ctrl_var: str | None = None, prefix: str | None = None):
    if prefix is not None:
      ctrl_var = ctrl_var or f"{prefix}_CC"
      cset = [p if p.ctrl_var else dataclasses.replace(p, ctrl_var=f"{prefix}_{p.name}") for p in cset]
    self.cset, self.ctrl_var = list(cset), ctrl_var
  def __repr__(self) -> str: return f"CompilerSet({[p.name for p in self.cset]}, ctrl_var={self.ctrl_var!r})"

# The compiler part of a device string ("CPU:LLVM") travels from the registry to Compiled.__init__ here, as
# (device, choice): the registry sets it around the device class's constructor, so a plugin's __init__(device) never
# sees or parses it. Keyed by device so a device opened inside another's constructor does not inherit the choice.
_compiler_choice: contextvars.ContextVar[tuple[str, str | None]] = contextvars.ContextVar("tinygrad_compiler_choice", default=("", None))

def compiler_choice(device: str) -> str | None:
  """The compiler name requested in the device string for `device` while it is being opened, else None."""
  dev, choice = _compiler_choice.get()
  return choice if dev == device else None


def _init_pair(pair: CompilerPair) -> tuple[Renderer, Compiler | None]:
  renderer = pair.renderer()
  if not isinstance(renderer, Renderer): raise TypeError(f"renderer factory returned {type(renderer).__name__}, not a Renderer")
  compiler = pair.compiler() if pair.compiler is not None else None
  renderer.compiler = compiler
  return renderer, compiler

def select_compiler(device: str, pairs: list[CompilerPair], set_var: str | None,
                    choice: str | None = None) -> tuple[CompilerPair, Renderer, Compiler | None, dict[str, str]]:
  """Pick a pair for `device` (rules of design.md section 5) and construct it: (pair, renderer, compiler, why others failed).

  1. `choice` (from the device string) or the set's control variable names the pair (case-insensitive);
  2. else a pair whose ctrl_var is 1 is forced, one whose ctrl_var is 0 is skipped;
  3. else the first pair that initialises, in order.
  """
  if not pairs: raise DeviceError(f"device {device} offers no compiler pairs")
  names = ", ".join(p.name for p in pairs)
  set_value = os.environ.get(set_var, "").strip() if set_var else ""
  if choice: forced, how = choice, f"the device string {device}:{choice}"
  else: forced, how = set_value, f"{set_var}={set_value}"
  if forced:   # a lower-precedence choice that disagrees is named, so the user learns which one won
    lost = ([f"{set_var}={set_value}"] if choice and set_value and set_value.upper() != choice.upper() else []) + \
           [f"{p.ctrl_var}=1" for p in pairs if _env_switch(p.ctrl_var) == 1 and p.name.upper() != forced.upper()] + \
           [f"{p.ctrl_var}=0" for p in pairs if _env_switch(p.ctrl_var) == 0 and p.name.upper() == forced.upper()]
    if lost: warnings.warn(f"{' and '.join(lost)} {'conflict' if len(lost) > 1 else 'conflicts'} with {how}; using {forced.upper()} "
                           f"({'the device string' if choice else set_var} wins)", CompilerChoiceWarning, stacklevel=3)
  if forced:
    match = [p for p in pairs if p.name.upper() == forced.upper()]
    if not match: raise CompilerChoiceError(f"unknown compiler {forced!r} for device {device} (from {how}); valid: {names}")
  else:
    on = [p for p in pairs if _env_switch(p.ctrl_var) == 1]
    if len(on) > 1:   # two pairs forced: the first in the device's order wins, and the user learns it did
      warnings.warn(f"{' and '.join(f'{p.ctrl_var}=1' for p in on)} conflict; using {on[0].name} (the first in {device}'s order; "
                    f"{set_var or 'the device string'} picks one by name)", CompilerChoiceWarning, stacklevel=3)
    match = on[:1]
    how = f"{match[0].ctrl_var}=1" if match else ""
  if match:
    try: return (match[0], *_init_pair(match[0]), {})
    except Exception as e:
      raise CompilerChoiceError(f"compiler {_pair_label(match[0])} for device {device} (selected by {how}) failed to initialise: "
                                f"{type(e).__name__}: {e}") from e
  errors: dict[str, str] = {}
  for p in pairs:
    if _env_switch(p.ctrl_var) == 0:
      errors[p.name] = f"skipped ({p.ctrl_var}=0)"
      continue
    try: return (p, *_init_pair(p), errors)
    except Exception as e: errors[p.name] = f"{type(e).__name__}: {e}" + (f" (pair from {p.origin})" if p.origin else "")
  raise DeviceError(f"no compiler for device {device} initialises: " + "; ".join(f"{k}: {v}" for k, v in errors.items()))

def _pair_label(p: CompilerPair) -> str: return f"{p.name} (from {p.origin})" if p.origin else p.name

# ---- memory ----

class Allocator:
  """Device memory. Implement `_alloc`/`_free` (raise MemoryError when the device is out of memory) and `copyin`/`copyout`.

  Optional: `_as_buffer(opaque) -> memoryview` for a zero-copy host view (host-memory devices),
  `_transfer(dest, src, nbytes, src_dev, dest_dev)` for a direct device-to-device copy, and `_offset(opaque, size, offset)`
  for a handle to the `size` bytes at byte `offset` of a buffer (a multiple of 256), kernels' argument as any handle is:
  with it, a TinyJit capture places its intermediates in one buffer (BufferView), else whole buffers are shared.
  The opaque handle is whatever the device's runtime expects as a kernel argument.
  """
  def __init__(self, device: str = ""):
    self.device = device   # for error messages; Compiled fills it in when left empty
    self.mem_used = 0      # bytes currently handed out by alloc
  def alloc(self, size: int, options: Any = None) -> Any:
    """A new buffer of `size` bytes (an opaque handle)."""
    ret = self._alloc(size, options)
    self.mem_used += size
    return ret
  def free(self, opaque: Any, size: int, options: Any = None) -> None:
    """Release a buffer from `alloc` (same size and options)."""
    self.mem_used -= size
    self._free(opaque, size, options)
  def _alloc(self, size: int, options: Any) -> Any: raise NotImplementedError(f"{type(self).__name__} does not implement _alloc")
  def _free(self, opaque: Any, size: int, options: Any) -> None: pass   # default: garbage-collected handles
  def copyin(self, dest: Any, src: memoryview) -> None:
    """Copy host bytes `src` into the device buffer `dest`."""
    raise NotImplementedError(f"{type(self).__name__} does not implement copyin")
  def copyout(self, dest: memoryview, src: Any) -> None:
    """Copy the device buffer `src` into host bytes `dest`."""
    raise NotImplementedError(f"{type(self).__name__} does not implement copyout")

class LRUAllocator(Allocator):
  """An Allocator that keeps freed buffers (by size and options) for reuse, up to `cache_limit` bytes (least recently freed
  evicted first). On MemoryError it frees the cache and retries once before raising."""
  def __init__(self, device: str = "", cache_limit: int = 1 << 30):
    super().__init__(device)
    self.cache_limit = cache_limit
    self.cache: OrderedDict[tuple[int, Any], list[Any]] = OrderedDict()
    self.cache_bytes = 0
  def alloc(self, size: int, options: Any = None) -> Any:
    key = (size, options)
    try: bufs = self.cache.get(key)
    except TypeError: bufs = None   # unhashable options: never cached
    if bufs:
      ret = bufs.pop()
      if not bufs: del self.cache[key]
      self.cache_bytes -= size
    else:
      try: ret = self._alloc(size, options)
      except MemoryError:
        self.free_cache()
        try: ret = self._alloc(size, options)
        except MemoryError as e:
          raise MemoryError(f"out of memory on {self.device or type(self).__name__}: requested {size} bytes, "
                            f"{self.mem_used} bytes in use (cached buffers already freed){': ' + str(e) if str(e) else ''}") from e
    self.mem_used += size
    return ret
  def free(self, opaque: Any, size: int, options: Any = None) -> None:
    self.mem_used -= size
    try: hash(options)
    except TypeError:
      self._free(opaque, size, options)
      return
    if size > self.cache_limit:
      self._free(opaque, size, options)
      return
    key = (size, options)
    self.cache.setdefault(key, []).append(opaque)
    self.cache.move_to_end(key)
    self.cache_bytes += size
    while self.cache_bytes > self.cache_limit:   # evict the least recently freed size class first
      (esz, eopt), bufs = next(iter(self.cache.items()))
      self._free(bufs.pop(0), esz, eopt)
      self.cache_bytes -= esz
      if not bufs: del self.cache[(esz, eopt)]
  def free_cache(self) -> None:
    """Release every cached buffer to the device."""
    for (size, options), bufs in self.cache.items():
      for b in bufs: self._free(b, size, options)
    self.cache.clear()
    self.cache_bytes = 0

def _flat(mv: Any) -> memoryview:
  mv = memoryview(mv)
  return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")

# allocators' caches change from any thread (a buffer the GC frees on another thread): a leaf lock, held only around them
_alloc_lock = leaf_lock()

def _release(allocator: Allocator, opaque: Any, nbytes: int, options: Any, device: str) -> None:
  with _alloc_lock:
    allocator.free(opaque, nbytes, options)
    GlobalCounters.mem_used -= nbytes
    GlobalCounters.mem_used_per_device[device] -= nbytes

# an allocated Buffer's weak reference -> how its memory is freed: the reference's callback frees it when the Buffer dies. As
# weakref.finalize does (a registry holding the reference and the arguments), at a third of its cost: ~2 us of every new
# buffer of an eager realize. The arguments stay reachable from here, so a Buffer the GC frees in a reference cycle never
# takes its handle into the cycle, whose finalizers all run (a wgpu GPUBuffer's releases it) before the allocator's cache
# would hand the dead handle out again. Emptied at interpreter exit: nothing is freed then (the devices are going away)
_to_free: dict[weakref.ref, tuple] = {}
def _buffer_died(ref: weakref.ref, pending: dict = _to_free) -> None:
  if (args := pending.pop(ref, None)) is not None: _release(*args)
atexit.register(_to_free.clear)

class Buffer:
  """`size` elements of `dtype` on `device`; memory is allocated on `allocate()` (or now, given `opaque`/`initial_value`)."""
  def __init__(self, device: str, size: int, dtype: DType, options: Any = None, opaque: Any = None, initial_value: bytes | None = None):
    self.device, self.size, self.dtype, self.options = device, size, dtype, options
    self._owned = opaque is None    # a handle passed in belongs to the caller: never freed here
    if opaque is not None: self.allocate(opaque)
    if initial_value is not None:
      self.allocate()
      self.copyin(memoryview(initial_value))
  @property
  def nbytes(self) -> int: return self.size * self.dtype.itemsize
  @property
  def allocator(self) -> Allocator:
    # an allocated buffer keeps the allocator it came from: freeing must not reopen a device (e.g. after Device.reset())
    return self._allocator if self.is_allocated() else Device[self.device].allocator
  def is_allocated(self) -> bool: return hasattr(self, "_buf")
  def allocate(self, opaque: Any = None) -> Buffer:
    """Allocate device memory (through the device's allocator) unless already allocated; returns self."""
    if self.is_allocated(): return self
    allocator = Device[self.device].allocator   # (may open the device: before the leaf lock)
    with _alloc_lock:
      if self.is_allocated(): return self
      self._allocator = allocator
      if opaque is not None:
        self._owned = False
        self._buf = opaque
      else:
        self._owned = True
        self._buf = allocator.alloc(self.nbytes, self.options)
        GlobalCounters.mem_used += self.nbytes
        GlobalCounters.mem_used_per_device[self.device] += self.nbytes
        # freed through a weak reference's callback (_to_free), not __del__
        self._finalizer = ref = weakref.ref(self, _buffer_died)
        _to_free[ref] = (allocator, self._buf, self.nbytes, self.options, self.device)
    return self
  def deallocate(self) -> None:
    """Return the memory to the device's allocator."""
    with _alloc_lock:
      if not self.is_allocated(): return
      if self._owned and (args := _to_free.pop(self._finalizer, None)) is not None: _release(*args)
      del self._buf
  def copyin(self, mv: memoryview) -> Buffer:
    """Copy host bytes (exactly nbytes) into the buffer, allocating it if needed; returns self."""
    mv = _flat(mv)
    if mv.nbytes != self.nbytes: raise ValueError(f"copyin of {mv.nbytes} bytes into {self!r} of {self.nbytes} bytes")
    self.allocate().allocator.copyin(self._buf, mv)
    return self
  def copyout(self, mv: memoryview) -> memoryview:
    """Copy the buffer's bytes into host memory `mv` (exactly nbytes); returns mv."""
    out = _flat(mv)
    if out.nbytes != self.nbytes: raise ValueError(f"copyout of {self!r} ({self.nbytes} bytes) into {out.nbytes} bytes")
    if not self.is_allocated(): raise RuntimeError(f"copyout of unallocated {self!r}")
    self.allocator.copyout(out, self._buf)
    return mv
  def as_buffer(self) -> memoryview:
    """The bytes as a host memoryview: a zero-copy view when the allocator offers one, else a copy."""
    if not self.is_allocated(): raise RuntimeError(f"as_buffer of unallocated {self!r}")
    if (view := getattr(self.allocator, "_as_buffer", None)) is not None: return _flat(view(self._buf))
    return self.copyout(memoryview(bytearray(self.nbytes)))
  def __repr__(self) -> str:
    return f"<buf device:{self.device} size:{self.size} dtype:{self.dtype}{'' if self.is_allocated() else ' unallocated'}>"

class BufferView(Buffer):
  """`size` elements of `dtype` at byte `offset` of `base`, through its allocator's `_offset`: no memory of its own (allocating
  it allocates `base`; freeing it frees nothing). A TinyJit capture's memory plan places its intermediates so."""
  def __init__(self, base: Buffer, offset: int, size: int, dtype: DType):
    super().__init__(base.device, size, dtype)
    self.base, self.offset, self._owned = base, offset, False
  def allocate(self, opaque: Any = None) -> Buffer:
    if self.is_allocated(): return self
    base = self.base.allocate()
    with _alloc_lock:
      if not self.is_allocated():
        self._allocator = base._allocator
        self._buf = base._allocator._offset(base._buf, self.nbytes, self.offset)   # type: ignore[attr-defined]
    return self

# ---- devices ----

class Compiled:
  """The base class of every device. A plugin's subclass has the signature `__init__(self, device: str)` and calls
  `super().__init__(device, allocator, compilers, runtime, graph)`.

  runtime: `runtime(name, lib) -> program`, or `runtime(name, lib, spec=ProgramSpec)` when it declares a `spec` parameter
    (the kernel's launch sizes, estimates and has_threads work estimate, `thread_work`); a program is called as
    `p(*bufs, global_size=(x,y,z), local_size=(x,y,z) | None, vals=(ints...), wait=False) -> float | None` (seconds when wait).
  graph: the GraphRunner subclass (tinygrad.engine.graph) that replays a TinyJit capture's runs of kernels on this device;
    None: the core's default, a loop over launch arguments computed at capture (docs/plugins.md "Graphs").
  abilities: this device's own limits (Renderer.ABILITIES names: local_max, local_total_max, shared_max, vector_bytes,
    supported_dtypes ...), read from the hardware; they are set on whichever pair's renderer is selected (also a pair
    another plugin adds), so the optimizer and the cache keys see them. None: the renderer's defaults.
  Sets `renderer` (with `renderer.compiler`), `compiler`, `compiler_name` (the selected pair), `compiler_pairs` (the
  device's own pairs followed by those other plugins add) and `compiler_errors` (why earlier pairs did not initialise).
  `device` is the canonical name the device was opened as ("CPU", "NV:1", "CPU:LLVM" when a compiler was named).
  """
  computes: bool = True   # False for devices that run nothing (NULL): the health check does not apply
  def __init__(self, device: str, allocator: Allocator, compilers: CompilerSet | None, runtime: Callable[[str, bytes], Any] | None,
               graph: Any = None, abilities: dict[str, Any] | None = None):
    choice = compiler_choice(device)
    self.device = f"{device}:{choice}" if choice else device
    self.allocator, self.compilers, self.runtime, self.graph = allocator, compilers, runtime, graph
    if not allocator.device: allocator.device = self.device
    base = device.split(":")[0].upper()
    from tinygrad.plugins import registry
    own = compilers.cset if compilers is not None else []
    self.compiler_pairs = own + registry().extra_compilers(base, [p.name for p in own])
    self.compiler_errors: dict[str, str] = {}
    if self.compiler_pairs:
      pair, self.renderer, self.compiler, self.compiler_errors = select_compiler(device, self.compiler_pairs,
                                                                                 compilers.ctrl_var if compilers else None, choice)
      self.compiler_name = pair.name
    else:   # a device that runs nothing it compiles (NULL-like): a generic renderer, no compiler
      if choice: raise CompilerChoiceError(f"device {device} has no compilers, so {device}:{choice} is invalid")
      self.renderer, self.compiler, self.compiler_name = Renderer(), None, ""
    if not self.renderer.device: self.renderer.device = base
    if abilities: self.renderer.apply_abilities(**abilities)
    if self.compiler is not None: self.compiler.target = self.renderer.ability_key()
    if DEBUG >= 1: print(f"opened {self.device} with compiler {self.compiler_name or '(none)'}")
  def synchronize(self) -> None:
    """Wait until all work queued on the device has finished."""
  def count(self) -> int:
    """How many devices of this kind the runtime sees (public tinygrad's `Device[d].count()`): the indices `d:0`..`d:count-1`
    open. 1 unless the plugin's device overrides it (CL counts the OpenCL devices)."""
    return 1
  def __repr__(self) -> str: return f"<{type(self).__name__} {self.device} compiler={self.compiler_name}>"

FIRST_PARTY = {"CPU": "tinygrad-cpu", "NV": "tinygrad-nv", "AMD": "tinygrad-amd", "METAL": "tinygrad-metal", "WEBGPU": "tinygrad-webgpu", "CL": "tinygrad-cl"}

def _disk_path(name: Any) -> str | None:
  """The file of a DISK device name ("disk:/path/to/file", public tinygrad's spelling, any case of "disk"), else None."""
  return name[5:] if type(name) is str and len(name) > 5 and name[:5].upper() == "DISK:" else None

class _Device:
  """The device registry: `Device["NV:1"]` opens (once) and returns a device; `Device.DEFAULT` is the default's name."""
  def __init__(self) -> None:
    self._opened: dict[str, Compiled] = {}
    self._default: str | None = None
    self.default_reason: list[str] = []   # how DEFAULT was chosen, for `python -m tinygrad doctor`

  @staticmethod
  def parse(name: str) -> tuple[str, int, str | None]:
    """Split "NAME[:index][:compiler]" into (NAME upper-case, index, compiler upper-case or None); DeviceNameError if malformed.

    ASCII only: str.isdigit() and int() also accept other scripts' digits ('CPU:١' would be CPU:1, 'CPU:²' breaks int())."""
    if _disk_path(name) is not None: return "DISK", 0, None
    parts = name.strip().split(":") if isinstance(name, str) else [""]
    rest, index = parts[1:], 0
    if rest and re.fullmatch(r"[0-9]+", rest[0]): index = int(rest.pop(0))
    if not re.fullmatch(r"[A-Za-z0-9_]+", parts[0]) or len(rest) > 1 or (rest and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rest[0])):
      raise DeviceNameError(f"bad device name {name!r}: expected NAME[:index][:compiler], where NAME is ASCII letters, digits and _, "
                            "index is ASCII digits and compiler ASCII letters, digits and _ (CPU, NV:1, CPU:LLVM, NV:1:PTX)")
    return parts[0].upper(), index, rest[0].upper() if rest else None

  @staticmethod
  def canonicalize(name: str) -> str:
    """The canonical spelling: upper-case, ":0" dropped ("nv:0" -> "NV", "nv:1:ptx" -> "NV:1:PTX", "cpu:llvm" -> "CPU:LLVM")."""
    if (path := _disk_path(name)) is not None: return "DISK:" + path   # (the file's path as given: paths are case-sensitive)
    base, index, comp = _Device.parse(name)
    return base + (f":{index}" if index else "") + (f":{comp}" if comp else "")

  def __getitem__(self, name: str) -> Compiled:
    # (an opened device's canonical name is its key: no parse, three regexes, for each lookup of every realize)
    if type(name) is str and (dev := self._opened.get(name)) is not None: return dev
    key = self.canonicalize(name)
    if (dev := self._opened.get(key)) is None:
      with ENGINE_LOCK:   # two threads opening one device at once would make two instances of it
        if (dev := self._opened.get(key)) is None: dev = self._opened[key] = self._open(key)
    return dev

  def opened(self, name: str) -> Compiled | None:
    """The device if it is open now, else None (opens nothing)."""
    return self._opened.get(self.canonicalize(name))

  def _unknown(self, base: str) -> DeviceError:
    import difflib
    from tinygrad.plugins import registry
    reg = registry()
    failed = reg.failed_for(base)
    if failed:   # the user asked for this device: its plugin's failure is now fatal, with the cause
      p = failed[0]
      err = DeviceError(f"device {base} is provided by plugin {p.name!r} (distribution {p.dist or '?'}), which is {p.status}: {p.error}")
      err.__cause__ = p.exc
      return err
    installed = [e.spec.name for e in reg.devices()]
    msg = f"unknown device {base!r}; installed: {', '.join(installed) or '(none)'}"
    if (close := difflib.get_close_matches(base, [n for n in installed + list(FIRST_PARTY) if n != base], n=1)): msg += f"; did you mean {close[0]!r}?"
    if base in FIRST_PARTY: msg += f"; for {base}: pip install {FIRST_PARTY[base]}"
    if (bad := [p for p in reg.plugins if p.status in ("failed", "incompatible")]):
      msg += "; plugins that did not load: " + ", ".join(f"{p.name} ({p.dist}): {p.error}" for p in bad)
    return DeviceError(msg)

  def _others(self, base: str, entry: Any) -> list[Any]:
    # the other providers of `base`, whose users would get this device if the chosen provider were not installed
    from tinygrad.plugins import registry
    return [e for e in registry().candidates.get(base, []) if e is not entry]

  def _open(self, key: str) -> Compiled:
    from tinygrad.plugins import registry
    base, _, _ = self.parse(key)
    reg = registry()
    if base not in reg.candidates: raise self._unknown(base)
    entry = reg.provider(base)
    try: return self._open_entry(key, entry)
    except DeviceError as e:
      if not (others := self._others(base, entry)): raise
      # a provider that shadows another one failed: say so, and how to get the other one, rather than leave its users guessing
      var = f"TINYGRAD_DEVICE_PROVIDER_{base}"
      alt = "; ".join(f"{o.plugin.dist or o.plugin.name} (priority {o.spec.priority}): {var}={o.plugin.dist or o.plugin.name} selects it" for o in others)
      raise (CompilerChoiceError if isinstance(e, CompilerChoiceError) else DeviceError)(f"{e}; {base} is also provided by {alt}") from e

  def _open_entry(self, key: str, entry: Any) -> Compiled:
    from tinygrad.plugins import probe, load_object, guarded
    base, index, choice = self.parse(key)
    who = f"plugin {entry.plugin.name!r} (distribution {entry.plugin.dist or '?'})"
    if (n := entry.spec.instances) is not None and index >= n:
      raise DeviceError(f"{base}:{index} does not exist: {who} declares {n} instance{'s' if n > 1 else ''} "
                        f"({base}{f' .. {base}:{n-1}' if n > 1 else ''})")
    ok, why = probe(entry)
    if not ok: raise DeviceError(f"device {base} from {who} is not available here: {why}")
    cls, err = guarded(load_object, entry.spec.import_path)
    if err is not None or not callable(cls):
      raise DeviceError(f"device {base} from {who}: cannot import {entry.spec.import_path}: "
                        + (f"{type(err).__name__}: {err}" if err is not None else f"{cls!r} is not a class")) from err
    devname = key if base == "DISK" else base + (f":{index}" if index else "")
    token = _compiler_choice.set((devname, choice))
    try: dev, err = guarded(cls, devname)
    finally: _compiler_choice.reset(token)
    if isinstance(err, DeviceError):   # names the device and the cause (no compiler initialises, ...): add whose device it is,
      # not to a user's bad name (an unknown compiler: a CompilerChoiceError without a cause)
      # nor to a pair another plugin added, which the message already blames
      if who in str(err) or type(err) not in (DeviceError, CompilerChoiceError) or \
         (type(err) is CompilerChoiceError and (err.__cause__ is None or " (from plugin " in str(err))): raise err
      raise type(err)(f"{err} (device {base} from {who})") from err
    if err is not None: raise DeviceError(f"device {key} from {who} failed to open: {type(err).__name__}: {err}") from err
    if not isinstance(dev, Compiled): raise DeviceError(f"{entry.spec.import_path} from {who} is not a tinygrad.device.Compiled subclass")
    return dev

  @property
  def DEFAULT(self) -> str:
    """The default device: DEV if set, else the highest-priority installed device whose probe passes and which opens."""
    if self._default is None:
      with ENGINE_LOCK:   # it opens devices (and imports the plugins): one thread, and a fork() waits for it to end
        if self._default is None: self._default = self._choose_default()
    return self._default
  @DEFAULT.setter
  def DEFAULT(self, name: str) -> None:
    self._default = self.canonicalize(name)
    self.default_reason = [f"set in code: Device.DEFAULT = {name!r}"]
  @property
  def default(self) -> Compiled:
    """The default device itself: `Device[Device.DEFAULT]`."""
    return self[self.DEFAULT]

  def _choose_default(self) -> str:
    from tinygrad.plugins import registry
    # Context(DEV=...) wins; else the environment as it is now (tests change it after import)
    if (dev := (DEV.value if DEV.value != DEV.initial else os.environ.get("DEV", "")).strip()):
      key = self.canonicalize(dev)
      if self.parse(key)[0] not in registry().candidates: raise self._unknown(self.parse(key)[0])
      self.default_reason = [f"DEV={dev}"]
      return key
    reasons: list[str] = []
    broken: list[str] = []   # devices skipped for a fault (not for absent hardware): the fallback is warned about, once
    for name, why, absent in self._usable(strict=True):
      if why is None:
        self.default_reason = reasons + [f"{name}: highest priority device that opens"]
        if broken: warnings.warn(f"default device {name}: skipped {'; '.join(broken)}; fix that, or choose a device with DEV=NAME",
                                 RuntimeWarning, stacklevel=3)
        return name
      reasons.append(f"{name}: {why}")
      if not absent: broken.append(f"{name} ({why})")
    raise DeviceError("no device works; " + "; ".join(reasons) if reasons else "no devices installed (is tinygrad-core complete?)")

  def _usable(self, strict: bool = False) -> Iterator[tuple[str, str | None, bool]]:
    # (name, None, False) for devices that open, (name, why not, absent) otherwise, absent when the probe says the
    # hardware is not here; priority order, never-default devices excluded.
    # strict (choosing the default): a failure is an error, not a reason to fall back to another device, when the user
    # asked for it (an explicit compiler choice) or when the failing provider shadows another that probes ok here (that
    # plugin's users would silently get a different device)
    from tinygrad.plugins import registry, probe
    reg = registry()
    for entry in reg.devices():
      if entry.spec.priority < 0: continue
      name = entry.spec.name
      shadows = strict and any(probe(o)[0] for o in self._others(name, entry))
      ok, why = probe(entry)
      if not ok and not shadows:
        yield name, f"not available ({why})", True
        continue
      try:
        self[name]
        yield name, None, False
      except CompilerChoiceError as e:
        if strict: raise
        yield name, f"failed to open ({e})", False
      except Exception as e:
        if shadows: raise
        yield name, f"failed to open ({type(e).__name__}: {e})", False

  def get_available_devices(self) -> list[str]:
    """Names of the installed devices that probe ok and open, highest priority first (negative priorities excluded)."""
    return [name for name, why, _ in self._usable() if why is None]

  def reset(self) -> None:
    """Forget opened devices, the default and plugin discovery (for tests)."""
    from tinygrad import plugins
    self._opened.clear()
    # cached runners hold the forgotten devices: a reopened one must build its own (a WEBGPU runner bound to the old
    # wgpu device rejects the new device's buffers). Looked up, not imported: the engine sits above this module
    realize = sys.modules.get("tinygrad.engine.realize")
    if realize is not None: realize.method_cache.clear()
    self._default = None
    self.default_reason = []
    plugins.reset()

Device = _Device()
