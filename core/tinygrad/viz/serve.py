"""The VIZ page: a small HTTP server on 127.0.0.1 serving a recorded trace and the page that draws it (static/, our own
SVG drawing: no library, no CDN).

  python -m tinygrad.viz [TRACE.json] [--profile PROFILE.json] [--port N] [--host 127.0.0.1]

Without a trace it serves the newest one VIZ=1 wrote (in the cache directory's viz/ folder)."""
from __future__ import annotations
import argparse, glob, json, os, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
from typing import Any

STATIC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
FILES = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
         "/viz.js": ("viz.js", "text/javascript; charset=utf-8"), "/viz.css": ("viz.css", "text/css; charset=utf-8"),
         "/favicon.svg": ("favicon.svg", "image/svg+xml"), "/favicon.ico": ("favicon.svg", "image/svg+xml")}

def load_trace(trace_path: str, profile_path: str | None = None) -> bytes:
  """The JSON the page reads: a VIZ record, or a PROFILE=1 Chrome trace alone (shown as the timeline), with `profile_path`'s
  timeline added to the record when given."""
  with open(trace_path, "rb") as f: data = json.load(f)
  if isinstance(data, dict) and "traceEvents" in data and "nodes" not in data: data = {"profile": data}   # a profile alone
  if not isinstance(data, dict): raise ValueError(f"{trace_path} is neither a VIZ trace nor a PROFILE trace (a JSON object)")
  if profile_path is not None:
    with open(profile_path, "rb") as f: data["profile"] = json.load(f)
  return json.dumps(data).encode()

def allowed_hosts(host: str, port: int) -> set[str]:
  """The Host headers VIZ answers: 127.0.0.1 and localhost with the port (and the address it was told to listen on)."""
  names = {"127.0.0.1", "localhost"} | ({host.lower()} if host not in ("", "0.0.0.0", "::") else set())
  return {f"{n}:{port}" for n in names}

def make_server(trace_path: str, port: int = 0, host: str = "127.0.0.1", profile_path: str | None = None) -> ThreadingHTTPServer:
  """A server for `trace_path` (a VIZ trace, or a PROFILE trace alone; `profile_path` adds a PROFILE trace to a VIZ one)
  (not started: call serve_forever, or run it on a thread); port 0 picks a free one (`server.server_address[1]`)."""
  for path in (trace_path, profile_path):
    if path is not None and not os.path.isfile(path): raise FileNotFoundError(f"no VIZ or PROFILE trace at {path}")
  trace = load_trace(trace_path, profile_path)
  class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
      # DNS rebinding: a web page whose name resolves to 127.0.0.1 could read the trace; its requests carry its own Host
      if self.headers.get("Host", "").lower() not in allowed:
        self.send_error(403, "forbidden: VIZ answers only requests addressed to 127.0.0.1 or localhost")
        return
      path = self.path.split("?", 1)[0]
      if path == "/trace.json": self._send(trace, "application/json")
      elif path in FILES:
        with open(os.path.join(STATIC, FILES[path][0]), "rb") as f: self._send(f.read(), FILES[path][1])
      else: self.send_error(404, "not found")
    def _send(self, body: bytes, ctype: str) -> None:
      self.send_response(200)
      self.send_header("Content-Type", ctype)
      self.send_header("Content-Length", str(len(body)))
      self.send_header("Cache-Control", "no-store")
      self.end_headers()
      self.wfile.write(body)
    def log_message(self, *args: Any) -> None: pass   # quiet: the page polls nothing, errors reach the browser
  srv = ThreadingHTTPServer((host, port), Handler)
  allowed = allowed_hosts(host, srv.server_port)   # the port it got (port 0 picks one)
  return srv

def _bind(trace_path: str, port: int, host: str, profile_path: str | None = None) -> ThreadingHTTPServer:
  for path in (trace_path, profile_path):   # a missing file is not a busy port
    if path is not None and not os.path.isfile(path): raise FileNotFoundError(f"no VIZ or PROFILE trace at {path}")
  # the asked-for port, else the next ones, else any free port
  for p in [*range(port, port + 10), 0] if port else [0]:
    try: return make_server(trace_path, p, host, profile_path)
    except OSError as e:
      if isinstance(e, FileNotFoundError): raise
      continue
  raise OSError(f"no free port to serve VIZ on {host}")

def serve_forever(trace_path: str, port: int | None = None, host: str = "127.0.0.1", profile_path: str | None = None) -> None:
  from tinygrad.helpers import VIZ_PORT
  srv = _bind(trace_path, VIZ_PORT.value if port is None else port, host, profile_path)
  print(f"VIZ: serving {trace_path} on http://{host}:{srv.server_address[1]}/ (Ctrl-C stops)", file=sys.stderr)
  try: srv.serve_forever()
  except KeyboardInterrupt: pass
  finally: srv.server_close()

def newest_trace() -> str | None:
  from tinygrad.helpers import cache_dir
  found = sorted(glob.glob(os.path.join(cache_dir(), "viz", "trace_*.json")), key=os.path.getmtime)
  return found[-1] if found else None

def main(argv: list[str] | None = None) -> int:
  ap = argparse.ArgumentParser(prog="python -m tinygrad.viz", description="Serve a VIZ=1 trace as a web page on this machine.")
  ap.add_argument("trace", nargs="?", help="a trace written by VIZ=1, or a PROFILE=1 trace alone (default: the newest VIZ trace)")
  ap.add_argument("--profile", default=None, help="a PROFILE=1 trace to show as the timeline beside the VIZ trace")
  ap.add_argument("--port", type=int, default=None, help="port (default VIZ_PORT, 8000; the next free one when taken)")
  ap.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
  args = ap.parse_args(argv)
  path = args.trace or newest_trace()
  if path is None:
    print("no VIZ trace found: run a program with VIZ=1 first, or give the trace's path", file=sys.stderr)
    return 2
  try: serve_forever(path, args.port, args.host, args.profile)
  except (FileNotFoundError, ValueError) as e:
    print(f"VIZ: {e}", file=sys.stderr)
    return 2
  return 0
