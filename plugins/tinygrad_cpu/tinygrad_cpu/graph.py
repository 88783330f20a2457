"""The CPU's native graph and thread pool.

CPUGraph (the CPU device's graph runner, docs/plugins.md "Graphs"): at capture, one program is generated that calls every
kernel of the run in order, in the device's own language (C for CLANG/GCC, LLVM IR for LLVM), compiled once through the
compile cache and loaded like a kernel. It reads three arrays: `a` the buffers' addresses (one slot per buffer), `v` the
variables' values (the replay variables first, then the values fixed at capture) and `f` the kernels' entry points, the
pool's parallel-for and the pool. A replay writes the new inputs' addresses and variable values into `a` and `v` and
makes one ctypes call. Nothing in the source depends on addresses, so the same capture compiles to the same source in
every process (a cache hit). Launch sizes play no part on the CPU: a kernel loops over its own (symbolic) bounds.

The pool: a kernel split into n parts (CPUProgram.parts) runs through `tg_parallel(pool, task, ctx, n)`, which
publishes the job, runs chunks itself and waits for the rest. The workers (CPU_COUNT-1 threads, started on first use, each
in one never-returning native call, so without the GIL) spin CPU_SPIN_US for the next job before sleeping on a futex: a
sequence of medium kernels pays no wake-up each. Any thread claims any chunk (a compare-and-swap on one word holding the
job's number, its chunk count and the next chunk), so the caller never waits for a sleeping worker to wake: it runs the
unclaimed chunks itself. The same pool serves graphs and kernels called one by one (through the task each split kernel exports).
"""
from __future__ import annotations
import ctypes, functools, os, platform, threading
from typing import Any, NamedTuple
from tinygrad.plugin_api import GraphRunner, GraphError, Compiled, Buffer, UOp
from tinygrad_cpu.runtime import NativeCode, CPU_COUNT, CPU_SPIN_US, _addr

class Call(NamedTuple):
  """One kernel in a graph: its number (its entry point is f[kernel]), argument slots in `a` and `v`, and the parts its
  split loop is cut into (1: a plain call on the calling thread)."""
  kernel: int
  bufs: tuple[int, ...]
  vals: tuple[int, ...]
  parts: int

# ---- the graph program ----

def render_c(name: str, calls: list[Call]) -> str:
  k = len(calls)
  def sig(c: Call) -> str: return f"void(*)({', '.join(['void*'] * len(c.bufs) + ['int'] * (len(c.vals) + 2))})"
  def args(c: Call, p: str) -> str: return ", ".join([f"{p}a[{i}]" for i in c.bufs] + [f"{p}v[{i}]" for i in c.vals])
  out = ["struct tg_ctx { void **a; int *v; void **f; };", "typedef void (*tg_task)(void*, int, int);",
         "typedef void (*tg_par)(void*, tg_task, void*, int);"]
  out += [f"static void tg_t{c.kernel}(void *p, int core, int n) {{ struct tg_ctx *c = p; (({sig(c)})c->f[{c.kernel}])({args(c, 'c->')}"
          f"{', ' if c.bufs or c.vals else ''}core, n); }}" for c in calls if c.parts > 1]
  out += [f"void {name}(void **a, int *v, void **f) {{", "  struct tg_ctx c = {a, v, f};"]
  for c in calls:
    if c.parts > 1: out.append(f"  ((tg_par)f[{k}])(f[{k+1}], tg_t{c.kernel}, &c, {c.parts});")
    else: out.append(f"  (({sig(c)})f[{c.kernel}])({args(c, '')}{', ' if c.bufs or c.vals else ''}0, 1);")
  return "\n".join(out + ["}", f"const long long {name}_work = 0LL;", ""])

def render_llvm(name: str, calls: list[Call]) -> str:
  k, out = len(calls), []
  def call(c: Call, core: str, n: str, body: list[str]) -> None:
    # load the entry point and the arguments from the three arrays (%a, %v, %f), then call
    args = []
    for j, i in enumerate(c.bufs):
      body += [f"  %a{c.kernel}_{j}p = getelementptr ptr, ptr %a, i64 {i}", f"  %a{c.kernel}_{j} = load ptr, ptr %a{c.kernel}_{j}p"]
      args.append(f"ptr %a{c.kernel}_{j}")
    for j, i in enumerate(c.vals):
      body += [f"  %v{c.kernel}_{j}p = getelementptr i32, ptr %v, i64 {i}", f"  %v{c.kernel}_{j} = load i32, ptr %v{c.kernel}_{j}p"]
      args.append(f"i32 %v{c.kernel}_{j}")
    body += [f"  %f{c.kernel}p = getelementptr ptr, ptr %f, i64 {c.kernel}", f"  %f{c.kernel} = load ptr, ptr %f{c.kernel}p",
             f"  call void %f{c.kernel}({', '.join(args + [f'i32 {core}', f'i32 {n}'])})"]
  for c in calls:
    if c.parts == 1: continue
    body = [f"define internal void @tg_t{c.kernel}(ptr %c, i32 %core, i32 %n) {{", "  %a = load ptr, ptr %c",
            "  %vq = getelementptr ptr, ptr %c, i64 1", "  %v = load ptr, ptr %vq", "  %fq = getelementptr ptr, ptr %c, i64 2",
            "  %f = load ptr, ptr %fq"]
    call(c, "%core", "%n", body)
    out += body + ["  ret void", "}"]
  body = [f"define void @{name}(ptr %a, ptr %v, ptr %f) {{", "  %c = alloca [3 x ptr]", "  store ptr %a, ptr %c",
          "  %cv = getelementptr ptr, ptr %c, i64 1", "  store ptr %v, ptr %cv", "  %cf = getelementptr ptr, ptr %c, i64 2",
          "  store ptr %f, ptr %cf", f"  %parp = getelementptr ptr, ptr %f, i64 {k}", "  %par = load ptr, ptr %parp",
          f"  %poolp = getelementptr ptr, ptr %f, i64 {k+1}", "  %pool = load ptr, ptr %poolp"]
  for c in calls:
    if c.parts > 1: body.append(f"  call void %par(ptr %pool, ptr @tg_t{c.kernel}, ptr %c, i32 {c.parts})")
    else: call(c, "0", "1", body)
  return "\n".join(out + body + ["  ret void", "}", f"@{name}_work = constant i64 0", ""])

RENDER = {"c": render_c, "llvm": render_llvm}

class NativeGraph:
  """A graph program loaded: `NativeGraph(kind, compiler, calls, nbufs, nvals)(bufs, vals, fns)` fills its arrays and calls it."""
  def __init__(self, kind: str, compiler: Any, calls: list[Call], nbufs: int, nvals: int):
    name = "tinygrad_graph"
    self.code = NativeCode(name, compiler.compile_cached(RENDER[kind](name, calls)))
    self.fxn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(self.code.addr(name))
    self.a, self.v = (ctypes.c_void_p * max(nbufs, 1))(), (ctypes.c_int * max(nvals, 1))()
    self.f = (ctypes.c_void_p * (len(calls) + 2))()
    if any(c.parts > 1 for c in calls): self.pool = pool(kind)   # kept alive with the graph (the arrays hold raw addresses)
    self.f[len(calls)], self.f[len(calls) + 1] = (self.pool.parallel, self.pool.state_addr) if hasattr(self, "pool") else (0, 0)
    self.args = (ctypes.addressof(self.a), ctypes.addressof(self.v), ctypes.addressof(self.f))
  def __call__(self) -> None: self.fxn(*self.args)

# ---- the thread pool ----

# futex(2)'s number per machine (the C version takes SYS_futex from the system headers)
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98, "riscv64": 98, "ppc64le": 221, "s390x": 238}

POOL_C = r"""#include <limits.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
typedef void (*tg_task)(void*, int, int);
struct tg_pool { int seq, sleepers; unsigned long long ticket; tg_task fn; void *ctx; int done, busy; };
static void tg_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}
/* claim chunks of the current job until none is left: the ticket is (job << 32) | (chunks << 16) | next chunk */
static void tg_chunks(struct tg_pool *p) {
  for (;;) {
    unsigned long long t = __atomic_load_n(&p->ticket, __ATOMIC_ACQUIRE);
    tg_task fn = __atomic_load_n(&p->fn, __ATOMIC_RELAXED);
    void *ctx = __atomic_load_n(&p->ctx, __ATOMIC_RELAXED);
    unsigned c = t & 0xffff, n = (t >> 16) & 0xffff;
    if (c >= n) return;
    if (!__atomic_compare_exchange_n(&p->ticket, &t, t + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
    fn(ctx, (int)c, (int)n);
    __atomic_add_fetch(&p->done, 1, __ATOMIC_RELEASE);
  }
}
void tg_parallel(struct tg_pool *p, tg_task fn, void *ctx, int n) {
  if (__atomic_exchange_n(&p->busy, 1, __ATOMIC_ACQUIRE)) {   /* another thread's job holds the pool: run this one here */
    for (int c = 0; c < n; c++) fn(ctx, c, n);
    return;
  }
  unsigned long long job = (__atomic_load_n(&p->ticket, __ATOMIC_RELAXED) >> 32) + 1;
  __atomic_store_n(&p->fn, fn, __ATOMIC_RELAXED);
  __atomic_store_n(&p->ctx, ctx, __ATOMIC_RELAXED);
  __atomic_store_n(&p->done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&p->ticket, (job << 32) | ((unsigned long long)n << 16), __ATOMIC_RELEASE);
  __atomic_add_fetch(&p->seq, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) syscall(SYS_futex, &p->seq, FUTEX_WAKE_PRIVATE, INT_MAX, 0, 0, 0);
  tg_chunks(p);
  while (__atomic_load_n(&p->done, __ATOMIC_ACQUIRE) < n) tg_pause();
  __atomic_store_n(&p->busy, 0, __ATOMIC_RELEASE);
}
static long long tg_now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1000000000LL + ts.tv_nsec; }
void tg_worker(struct tg_pool *p, long long spin_ns) {
  int seen = __atomic_load_n(&p->seq, __ATOMIC_SEQ_CST);
  for (;;) {
    long long start = tg_now();
    for (int i = 1; __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE) == seen; i++) {
      tg_pause();
      if ((i & 63) == 0 && tg_now() - start > spin_ns) {
        __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(&p->seq, __ATOMIC_SEQ_CST) == seen) syscall(SYS_futex, &p->seq, FUTEX_WAIT_PRIVATE, seen, 0, 0, 0);
        __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
        start = tg_now();
      }
    }
    seen = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE);
    tg_chunks(p);
  }
}
const long long tg_pool_work = 0LL;
"""

POOL_LLVM = r"""%pool = type { i32, i32, i64, ptr, ptr, i32, i32 }
declare i64 @syscall(i64, ...)
declare i32 @clock_gettime(i32, ptr)
PAUSE_DECL
define internal void @tg_pause() {
  PAUSE_CALL
  ret void
}
define internal void @tg_chunks(ptr %p) {
entry:
  %tp = getelementptr %pool, ptr %p, i32 0, i32 2
  %fp = getelementptr %pool, ptr %p, i32 0, i32 3
  %cp = getelementptr %pool, ptr %p, i32 0, i32 4
  %dp = getelementptr %pool, ptr %p, i32 0, i32 5
  br label %loop
loop:
  %t = load atomic i64, ptr %tp acquire, align 8
  %fn = load atomic ptr, ptr %fp monotonic, align 8
  %ctx = load atomic ptr, ptr %cp monotonic, align 8
  %c = and i64 %t, 65535
  %ns = lshr i64 %t, 16
  %n = and i64 %ns, 65535
  %more = icmp ult i64 %c, %n
  br i1 %more, label %claim, label %out
claim:
  %t1 = add i64 %t, 1
  %r = cmpxchg ptr %tp, i64 %t, i64 %t1 acq_rel acquire
  %ok = extractvalue { i64, i1 } %r, 1
  br i1 %ok, label %run, label %loop
run:
  %c32 = trunc i64 %c to i32
  %n32 = trunc i64 %n to i32
  call void %fn(ptr %ctx, i32 %c32, i32 %n32)
  %d = atomicrmw add ptr %dp, i32 1 release
  br label %loop
out:
  ret void
}
define void @tg_parallel(ptr %p, ptr %fn, ptr %ctx, i32 %n) {
entry:
  %bp = getelementptr %pool, ptr %p, i32 0, i32 6
  %busy = atomicrmw xchg ptr %bp, i32 1 acquire
  %held = icmp ne i32 %busy, 0
  br i1 %held, label %serial, label %start
serial:
  %sc = phi i32 [ 0, %entry ], [ %sc1, %serial1 ]
  %sdone = icmp sge i32 %sc, %n
  br i1 %sdone, label %out, label %serial1
serial1:
  call void %fn(ptr %ctx, i32 %sc, i32 %n)
  %sc1 = add i32 %sc, 1
  br label %serial
out:
  ret void
start:
  %sp = getelementptr %pool, ptr %p, i32 0, i32 1
  %tp = getelementptr %pool, ptr %p, i32 0, i32 2
  %fp = getelementptr %pool, ptr %p, i32 0, i32 3
  %cp = getelementptr %pool, ptr %p, i32 0, i32 4
  %dp = getelementptr %pool, ptr %p, i32 0, i32 5
  %t = load atomic i64, ptr %tp monotonic, align 8
  %job = lshr i64 %t, 32
  %job1 = add i64 %job, 1
  %js = shl i64 %job1, 32
  %n64 = zext i32 %n to i64
  %nsh = shl i64 %n64, 16
  %nt = or i64 %js, %nsh
  store atomic ptr %fn, ptr %fp monotonic, align 8
  store atomic ptr %ctx, ptr %cp monotonic, align 8
  store atomic i32 0, ptr %dp monotonic, align 4
  store atomic i64 %nt, ptr %tp release, align 8
  %s0 = atomicrmw add ptr %p, i32 1 seq_cst
  %sl = load atomic i32, ptr %sp seq_cst, align 4
  %any = icmp sgt i32 %sl, 0
  br i1 %any, label %wake, label %work
wake:
  %w = call i64 (i64, ...) @syscall(i64 SYS_FUTEX, ptr %p, i32 129, i32 2147483647, ptr null, ptr null, i32 0)
  br label %work
work:
  call void @tg_chunks(ptr %p)
  br label %wait
wait:
  %d = load atomic i32, ptr %dp acquire, align 4
  %fin = icmp sge i32 %d, %n
  br i1 %fin, label %done, label %spin
spin:
  call void @tg_pause()
  br label %wait
done:
  store atomic i32 0, ptr %bp release, align 4
  ret void
}
define internal i64 @tg_now() {
  %ts = alloca { i64, i64 }, align 8
  %r = call i32 @clock_gettime(i32 1, ptr %ts)
  %s = load i64, ptr %ts
  %np = getelementptr { i64, i64 }, ptr %ts, i32 0, i32 1
  %ns = load i64, ptr %np
  %sn = mul i64 %s, 1000000000
  %t = add i64 %sn, %ns
  ret i64 %t
}
define void @tg_worker(ptr %p, i64 %spin) {
entry:
  %sp = getelementptr %pool, ptr %p, i32 0, i32 1
  %seen0 = load atomic i32, ptr %p seq_cst, align 4
  br label %top
top:
  %seen = phi i32 [ %seen0, %entry ], [ %cur, %work ], [ %seen, %woke ]
  %start = call i64 @tg_now()
  br label %spinloop
spinloop:
  %i = phi i32 [ 0, %top ], [ %i1, %pausing ], [ %i1, %clock ]
  %cur = load atomic i32, ptr %p acquire, align 4
  %changed = icmp ne i32 %cur, %seen
  br i1 %changed, label %work, label %pausing
pausing:
  call void @tg_pause()
  %i1 = add i32 %i, 1
  %m = and i32 %i1, 63
  %chk = icmp eq i32 %m, 0
  br i1 %chk, label %clock, label %spinloop
clock:
  %now = call i64 @tg_now()
  %el = sub i64 %now, %start
  %long = icmp sgt i64 %el, %spin
  br i1 %long, label %sleep, label %spinloop
sleep:
  %a = atomicrmw add ptr %sp, i32 1 seq_cst
  %cur2 = load atomic i32, ptr %p seq_cst, align 4
  %same = icmp eq i32 %cur2, %seen
  br i1 %same, label %futex, label %woke
futex:
  %r = call i64 (i64, ...) @syscall(i64 SYS_FUTEX, ptr %p, i32 128, i32 %seen, ptr null, ptr null, i32 0)
  br label %woke
woke:
  %b = atomicrmw sub ptr %sp, i32 1 seq_cst
  br label %top
work:
  call void @tg_chunks(ptr %p)
  br label %top
}
@tg_pool_work = constant i64 0
"""

def pool_source(kind: str) -> str:
  if kind == "c": return POOL_C
  machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine().lower(), platform.machine().lower())
  if machine not in _SYS_FUTEX: raise GraphError(f"no futex number known for machine {machine!r} (known: {', '.join(_SYS_FUTEX)})")
  pause = {"x86_64": ("declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"),
           "aarch64": ("declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)")}
  decl, call = pause.get(machine, ("", ""))
  return POOL_LLVM.replace("PAUSE_DECL", decl).replace("PAUSE_CALL", call).replace("SYS_FUTEX", str(_SYS_FUTEX[machine]))

@functools.cache
def compiler_for(kind: str) -> Any:
  """A compiler for code of `kind` ("llvm": llvmlite; "c": clang, else gcc) when no device's is at hand."""
  from tinygrad_cpu.compiler import LLVMCompiler, ClangCompiler, GCCCompiler
  if kind == "llvm": return LLVMCompiler()
  try: return ClangCompiler()
  except RuntimeError: return GCCCompiler()

def _other_cores(n: int) -> list[int | None]:
  """A core for each of n workers, other than the one this thread runs on while there are others (None: no placement).
  Linux starts a new thread on its creator's core when the other cores are busy at that moment (a compile thread of the
  first kernels, another process), and a spinning worker there stays beside its caller for 30-130 ms before the balancer
  moves one: the first split kernels ran at one core's speed (matmul 512: 95 GFLOPS where 200) in 2 of 4 fresh processes."""
  if not hasattr(os, "sched_setaffinity"): return [None] * n
  try: here = ctypes.CDLL(None).sched_getcpu()
  except (OSError, AttributeError): return [None] * n
  others = [c for c in sorted(os.sched_getaffinity(0)) if c != here]
  return [others[i % len(others)] if others else None for i in range(n)]

def _placed(worker: Any, core: int | None, *args: Any) -> None:
  # the worker moves to its core once, then may run anywhere it was allowed to (the scheduler balances it from there)
  if core is not None:
    allowed = os.sched_getaffinity(0)
    try:
      os.sched_setaffinity(0, {core})
      os.sched_setaffinity(0, allowed)
    except OSError: pass
  worker(*args)

class Pool:
  """The process's worker threads and the native state they share (see the module's docstring)."""
  def __init__(self, kind: str):
    self.code = NativeCode("tg_pool", compiler_for(kind).compile_cached(pool_source(kind)), permanent=True)   # (its workers never stop)
    self.state = (ctypes.c_uint64 * 8)()   # struct tg_pool, zeroed
    self.state_addr, self.parallel = ctypes.addressof(self.state), self.code.addr("tg_parallel")
    worker = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_longlong)(self.code.addr("tg_worker"))
    cores = _other_cores(max(CPU_COUNT - 1, 0))
    self.threads = [threading.Thread(target=_placed, args=(worker, c, self.state_addr, CPU_SPIN_US * 1000), daemon=True, name=f"tinygrad_cpu_{i}")
                    for i, c in enumerate(cores)]
    for t in self.threads: t.start()
    self._parallel = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(self.parallel)
  def run(self, task: int, ctx: Any, n: int) -> None:
    """task(ctx, part, n) for every part in [0, n), on this thread and the workers; returns when all are done."""
    self._parallel(self.state_addr, task, ctypes.addressof(ctx), n)

_pool: Pool | None = None
_pool_lock = threading.Lock()
def pool(kind: str) -> Pool:
  """The process's pool, built with code of `kind` on first use (any kind serves every caller: they meet through addresses)."""
  global _pool
  with _pool_lock:
    if _pool is None: _pool = Pool(kind)
    return _pool
def _forget_pool_in_child() -> None:
  # a fork child inherits the pool's state but none of its threads: its first parallel kernel starts a new pool. A graph
  # made before the fork still points at the old state; its parallel kernels then run every chunk on the calling thread
  global _pool, _pool_lock
  _pool, _pool_lock = None, threading.Lock()
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_forget_pool_in_child)

# ---- the graph runner ----

class CPUGraph(GraphRunner):
  """The CPU device's graph runner: one native call per replay (see the module's docstring)."""
  def __init__(self, device: Compiled, steps: list[Any], inputs: list[Buffer], variables: list[UOp]):
    super().__init__(device, steps, inputs, variables)
    from tinygrad_cpu.compiler import LLVMCompiler, CCompiler
    if isinstance(device.compiler, LLVMCompiler): kind = "llvm"
    elif isinstance(device.compiler, CCompiler): kind = "c"
    else: raise GraphError(f"no native graph for compiler {type(device.compiler).__name__}")
    slots: dict[int, int] = {}   # id(Buffer) -> slot in `a`
    bufs: list[Buffer] = []
    vals: list[int] = list(range(len(variables)))   # the replay variables first, then one slot per value fixed at capture
    fixed: list[int] = []
    calls = []
    for i, (c, step) in enumerate(zip(self.calls, steps)):
      if any(v.dtype.itemsize != 4 for v in c.p.vars): raise GraphError(f"kernel {c.p.name} has a variable that is not 32-bit")
      for b in c.bufs:
        if id(b) not in slots:
          slots[id(b)] = len(bufs)
          bufs.append(b)
      vslots = []
      for x in c.vals:
        if isinstance(x, tuple): vslots.append(x[0])
        else:
          vslots.append(len(variables) + len(fixed))
          fixed.append(x)
      calls.append(Call(i, tuple(slots[id(b)] for b in c.bufs), tuple(vslots), step.runner._prg.parts))
    self.graph = NativeGraph(kind, device.compiler, calls, len(bufs), len(variables) + len(fixed))
    g = self.graph
    for j, b in enumerate(bufs): g.a[j] = _addr(b._buf)
    for j, x in enumerate(fixed): g.v[len(variables) + j] = x
    for i, step in enumerate(steps): g.f[i] = step.runner._prg.fxn_addr
    index = {id(b): j for j, b in enumerate(inputs)}
    self.input_slots = [(slots[id(b)], index[id(b)]) for b in bufs if id(b) in index]
    self.keep = bufs   # the graph holds their addresses

  def run(self, inputs: list[Buffer], var_vals: dict[UOp, int]) -> None:
    g = self.graph
    for slot, j in self.input_slots: g.a[slot] = _addr(inputs[j]._buf)
    for j, v in enumerate(self.variables): g.v[j] = var_vals[v]
    g()
