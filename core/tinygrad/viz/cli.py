"""VIZ and PROFILE in a terminal: `python -m tinygrad.viz.cli` (public tinygrad's command of the same name and options,
reading our JSON traces: nothing here unpickles a file).

  python -m tinygrad.viz.cli [--profile-path P] [--rewrites-path T] [--list] [-s SOURCE [KERNEL|PASS ...]] [-t [N]]
                             [--interval START [END]] [--json]

- no option: every kernel and copy of the PROFILE=1 timeline in time order, with profile_marker()'s markers;
- `-t [N]`: the N kernels that took the most time in all (20 by default; -1: all), each with its count and share;
- `--list`: the sources (ALL, each device, host: schedule, codegen and compile work); with `-s`, each kernel's codegen
  passes from the VIZ=1 record under it;
- `-s SOURCE [NAME ...]`: one source only, and only the kernels named after it; naming a pass prints its rewrites
  (each rule's file:line and the node it rewrote), from the VIZ=1 record;
- `--interval START [END]`: only what ran between two markers (END: the end of the timeline);
- `--json`: one JSON object per line instead of text.
DEBUG=3 prints each kernel's AST under its first line, DEBUG=4 its source, DEBUG=5 its passes (the VIZ=1 record's).

The timeline is PROFILE_PATH's file, else the newest PROFILE=1 trace in the temp directory, else the timeline inside the
newest VIZ=1 record (VIZ=1 PROFILE=1); the record is the newest VIZ=1 trace (the cache directory's viz/ folder)."""
from __future__ import annotations
import argparse, glob, heapq, json, os, signal, sys, tempfile
from typing import Any, Iterator
from tinygrad.helpers import ansistrip, colored, getenv, time_to_str

def newest_profile() -> str | None:
  found = sorted(glob.glob(os.path.join(tempfile.gettempdir(), "tinygrad_profile_*.json")), key=os.path.getmtime)
  return found[-1] if found else None

def load_json(path: str, what: str) -> dict[str, Any]:
  if not os.path.isfile(path): raise FileNotFoundError(f"no {what} at {path}")
  with open(path) as f: data = json.load(f)
  if not isinstance(data, dict): raise ValueError(f"{path} is not a {what} (a JSON object)")
  return data

def timelines(profile: dict[str, Any]) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
  """A Chrome trace's complete events per source (device names; the host's tracks are one source, "host"), and its markers."""
  names = {e["pid"]: e["args"]["name"] for e in profile.get("traceEvents", []) if e.get("ph") == "M" and e.get("name") == "process_name"}
  out: dict[str, list[dict[str, Any]]] = {n: [] for n in names.values()}
  markers = []
  for e in profile.get("traceEvents", []):
    if e.get("ph") == "X": out.setdefault(names.get(e["pid"], str(e["pid"])), []).append(e)
    elif e.get("ph") == "i": markers.append(e)
  for evs in out.values(): evs.sort(key=lambda e: e["ts"])
  return out, sorted(markers, key=lambda e: e["ts"])

def time_str(us: float) -> str: return time_to_str(us * 1e-6)   # (trace times are microseconds; public tinygrad's cli's units)

def rates(ops: float, nbytes: float, us: float) -> str:
  if us <= 0 or not (ops or nbytes): return ""
  return f"{ops/us*1e-3:8.1f} GFLOPS {nbytes/us*1e-3:8.1f} GB/s"

class Record:
  """A VIZ=1 record's kernels by name, and how to print a kernel's AST, source, passes and a pass's rewrites."""
  def __init__(self, data: dict[str, Any]):
    self.data = data
    self.by_name: dict[str, dict[str, Any]] = {}
    for k in data.get("kernels", []): self.by_name.setdefault(ansistrip(k["name"]), k)
    self.children: dict[int, list[int]] = {}   # a step's nested steps, in order (one pass over the record, not one per step)
    for j, st in enumerate(data.get("steps", [])):
      if st["parent"] is not None: self.children.setdefault(st["parent"], []).append(j)
  def node_lines(self, i: int) -> list[str]:
    nodes, out, seen = self.data["nodes"], [], set()
    def walk(j: int, depth: int) -> None:
      op, dt, arg, src = nodes[j][:4]
      out.append(f"{'  '*depth}{j:5d} {op} {dt} {arg!r}" + (" (above)" if j in seen else ""))
      if j in seen: return
      seen.add(j)
      for s in src: walk(s, depth + 1)
    walk(i, 0)
    return out
  def passes(self, k: dict[str, Any]) -> Iterator[tuple[int, dict[str, Any]]]:
    steps = self.data["steps"]
    def under(i: int, depth: int) -> Iterator[tuple[int, dict[str, Any]]]:
      yield depth, steps[i]
      for j in self.children.get(i, []): yield from under(j, depth + 1)
    for i in k["steps"]: yield from under(i, 0)
  def rewrites(self, step: dict[str, Any]) -> list[str]:
    nodes, rules = self.data["nodes"], self.data["rules"]
    return [f"{rules[r]['loc']}: {nodes[b][0]} {nodes[b][1]} -> {nodes[a][0]} {nodes[a][1]} {nodes[a][2]!r}" for r, b, a in step["matches"]]

def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinygrad.viz.cli", description="Print a PROFILE=1 timeline and a VIZ=1 record in the terminal.")
  ap.add_argument("-s", "--src", nargs="+", default=[], metavar="NAME", help="a source (a device, or host), then kernel or pass names")
  ap.add_argument("--list", "--ls", dest="list", action="store_true", help="list the sources (with -s: each kernel's passes)")
  ap.add_argument("--interval", nargs="+", metavar=("START", "END"), help="only between these markers (END: to the end)")
  ap.add_argument("-t", nargs="?", type=int, const=20, metavar="COUNT", help="the kernels that took the most time (default 20; -1: all)")
  ap.add_argument("--profile-path", metavar="PATH", help="a PROFILE=1 trace (default: PROFILE_PATH, else the newest)")
  ap.add_argument("--rewrites-path", metavar="PATH", help="a VIZ=1 trace (default: the newest)")
  ap.add_argument("--json", action="store_true", help="one JSON object per line")
  args = ap.parse_args(argv)
  from tinygrad.viz import stop_recording
  stop_recording()   # (VIZ=1 or PROFILE=1 left in the environment: this process's own empty record would replace the one it reads)
  if hasattr(signal, "SIGPIPE"): signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `| head` ends the listing quietly
  from tinygrad.viz.serve import newest_trace
  try:
    rec_path = args.rewrites_path or newest_trace()
    record = load_json(rec_path, "VIZ trace") if rec_path else None
    prof_path = args.profile_path or os.environ.get("PROFILE_PATH") or newest_profile()
    profile = load_json(prof_path, "PROFILE trace") if prof_path else (record or {}).get("profile")
  except (FileNotFoundError, ValueError) as err:
    print(f"viz.cli: {err}", file=sys.stderr)
    return 2
  if profile is None:
    print("viz.cli: no PROFILE trace found: run a program with PROFILE=1 (or VIZ=1 PROFILE=1) first, or give --profile-path", file=sys.stderr)
    return 2
  rec = Record(record) if record is not None and "kernels" in record else None
  tracks, markers = timelines(profile)
  def emit(obj: dict[str, Any], text: str) -> None: print(json.dumps(obj) if args.json else text)

  if args.list and not args.src:
    for name in ["ALL", *tracks]: emit({"source": name, "events": sum(map(len, tracks.values())) if name == "ALL" else len(tracks[name])}, name)
    return 0
  src, names = (args.src[0], set(args.src[1:])) if args.src else ("ALL", set())
  if src != "ALL" and src not in tracks:
    print(f"viz.cli: no source {src!r}; the sources are: {', '.join(['ALL', *tracks])}", file=sys.stderr)
    return 2
  lo, hi = 0.0, float("inf")
  if args.interval:
    at = {m["name"]: m["ts"] for m in markers}
    for m in args.interval:
      if m not in at:
        print(f"viz.cli: no marker {m!r}; the markers are: {', '.join(at) or '(none: profile_marker() adds them)'}", file=sys.stderr)
        return 2
    lo, hi = at[args.interval[0]], at[args.interval[1]] if len(args.interval) > 1 else float("inf")
  # ALL: the devices' kernels and copies; the host's schedule/codegen/compile work only when asked for by name
  srcs = [s for s in tracks if s != "host"] if src == "ALL" else [src]
  events = [(e["ts"], s, e) for s in srcs for e in tracks[s] if lo <= e["ts"] <= hi and (not names or ansistrip(e["name"]) in names)]

  def kernel_detail(name: str, shown: set[str]) -> None:
    if rec is None or name in shown or (k := rec.by_name.get(name)) is None: return
    shown.add(name)
    if getenv("DEBUG") >= 3: emit({"kernel": name, "ast": rec.node_lines(k["ast"])}, "\n".join(rec.node_lines(k["ast"])))
    if getenv("DEBUG") >= 4: emit({"kernel": name, "source": k["source"]}, k["source"])
    if getenv("DEBUG") >= 5 or args.list:
      inside = None   # the depth of a pass named on the command line while printing the rewrites in it (its nested ones too)
      for depth, s in rec.passes(k):
        emit({"kernel": name, "pass": s["name"], "depth": depth, "ms": s["ms"], "rewrites": len(s["matches"])},
             f"{'  '*(depth+1)}{s['name']}" + (f" - {len(s['matches'])}" if s["matches"] else ""))
        if inside is not None and depth <= inside: inside = None
        if inside is None and s["name"] in names: inside = depth
        if inside is not None:
          for line in rec.rewrites(s): emit({"kernel": name, "pass": s["name"], "rewrite": line}, f"{'  '*(depth+2)}{line}")

  if args.t is not None:
    agg: dict[tuple[str, str], list[float]] = {}
    for _, s, e in events:
      a = agg.setdefault((s, ansistrip(e["name"])), [0.0, 0, 0.0, 0.0])
      a[0] += e["dur"]; a[1] += 1
      if e.get("cat") == "kernel": a[2] += e["args"].get("ops", 0) or 0; a[3] += e["args"].get("bytes", 0) or 0   # (a compile's bytes: its binary)
    total = sum(a[0] for a in agg.values()) or 1.0
    rows = sorted(agg.items(), key=lambda kv: -kv[1][0])
    n = len(rows) if args.t < 0 else args.t
    for (s, name), (us, c, ops, nb) in rows[:n]:
      emit({"device": s, "name": name, "dur_ms": us * 1e-3, "count": c, "pct": us / total * 100},
           f"{s[:7]:7s} {name:40s} {time_str(us)} {c:7d} {us/total*100:6.2f}%  {rates(ops, nb, us)}")
    if rows[n:]:
      us, c = sum(a[0] for _, a in rows[n:]), sum(a[1] for _, a in rows[n:])
      emit({"device": None, "name": "Other", "dur_ms": us * 1e-3, "count": int(c), "pct": us / total * 100},
           f"{'':7s} {'Other':40s} {time_str(us)} {int(c):7d} {us/total*100:6.2f}%")
    return 0
  shown: set[str] = set()
  marks = [(m["ts"], "MARKER", m) for m in markers if lo <= m["ts"] <= hi] if src == "ALL" and not names else []
  for ts, s, e in heapq.merge(sorted(events, key=lambda x: x[0]), marks, key=lambda x: x[0]):
    if s == "MARKER":
      emit({"device": "MARKER", "name": e["name"], "st_ms": ts * 1e-3}, f"--- MARKER {e['name']}/{ts*1e-3:9.2f}ms")
      continue
    name, a = ansistrip(e["name"]), e["args"]
    emit({"device": s, "name": name, "dur_ms": e["dur"] * 1e-3, "st_ms": ts * 1e-3, "args": a},
         f"*** {s[:7]:7s} {name:46s} tm {colored(time_str(e['dur']), 'yellow' if e['dur'] > 1e4 else None)}/{ts*1e-3:9.2f}ms"
         + (f" ({rates(a.get('ops', 0) or 0, a.get('bytes', 0) or 0, e['dur'])})" if e.get("cat") == "kernel" else "")
         + (" jit" if a.get("jit") else ""))
    kernel_detail(name, shown)
  return 0

if __name__ == "__main__":
  try: sys.exit(main())
  except KeyboardInterrupt: pass
