"""Seeing the compiler work. VIZ=1: record every rewrite pass and kernel (record.py) and show them in a local web page
(serve.py; `python -m tinygrad.viz [trace]`). PROFILE=1: a Chrome trace-event timeline (profile.py).

`from_env()` runs at `import tinygrad`: it installs what the environment asks for and, at exit, writes the files and
prints where they are (VIZ=1 then serves the page when stdout is a terminal; else it prints the command that does)."""
from __future__ import annotations
import atexit, json, os, sys, tempfile
from typing import Any

def write_json(path: str, obj: Any) -> str:
  """Write `obj` as JSON at `path` through a unique temp file renamed into place (a reader never sees half a trace)."""
  fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".trace_", suffix=".json")
  try:
    with os.fdopen(fd, "w") as f: json.dump(obj, f)
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp): os.unlink(tmp)
    raise
  return path

def _save(record: Any, path: str | None, what: str) -> str:
  """record.save(path); when that place cannot be written (a read-only or missing folder, a full disk) the record goes to a
  new file in the temp dir instead, with a line saying where: it is never lost to a traceback at exit."""
  try: return record.save(path)
  except OSError as e:
    fd, tmp = tempfile.mkstemp(prefix=f"tinygrad_{what.lower()}_{os.getpid()}_", suffix=".json")
    os.close(fd)
    print(f"{what}: could not write the record ({type(e).__name__}: {e}); writing it to {tmp} instead", file=sys.stderr)
    return record.save(tmp)

def _viz_at_exit(rec: object) -> None:
  from tinygrad.viz.record import Recorder
  assert isinstance(rec, Recorder)
  rec.uninstall()
  path = _save(rec, None, "VIZ")
  print(f"VIZ: {len(rec.kernels)} kernels, {len(rec.steps)} rewrite steps recorded in {path}", file=sys.stderr)
  if sys.stdout.isatty():
    from tinygrad.viz.serve import serve_forever
    serve_forever(path)
  else: print(f"VIZ: to see it: python -m tinygrad.viz {path}", file=sys.stderr)

def _profile_at_exit(prof: object) -> None:
  from tinygrad.viz.profile import Profiler
  from tinygrad.helpers import PROFILE_PATH
  assert isinstance(prof, Profiler)
  prof.uninstall()
  path = _save(prof, PROFILE_PATH.value or None, "PROFILE")
  print(f"PROFILE: {len(prof.events)} events written to {path} (open it in ui.perfetto.dev or chrome://tracing)", file=sys.stderr)

def from_env() -> None:
  from tinygrad.helpers import VIZ, PROFILE
  rec = None
  if VIZ.value:
    from tinygrad.viz.record import Recorder
    atexit.register(_viz_at_exit, rec := Recorder().install())
  if PROFILE.value:
    from tinygrad.viz.profile import Profiler
    atexit.register(_profile_at_exit, prof := Profiler().install())
    if rec is not None: rec.profiler = prof   # VIZ=1 PROFILE=1: the page shows the timeline too

def stop_recording() -> None:
  """Undo from_env() in this process: record nothing and write nothing at exit (`python -m tinygrad.viz.cli` run with
  PROFILE=1 and PROFILE_PATH still set must not overwrite the trace it reads with its own empty one)."""
  from tinygrad.uop import upat
  from tinygrad.viz import profile
  atexit.unregister(_viz_at_exit)
  atexit.unregister(_profile_at_exit)
  if upat.TRACER is not None: upat.TRACER.uninstall()
  if profile.PROFILER is not None: profile.PROFILER.uninstall()
