"""Batch syntax check of rendered MSL with clang++ -fsyntax-only against metal_stub.h (one clang++ run per batch)."""
from __future__ import annotations
import os, re, shutil, subprocess, tempfile

STUB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "metal_stub.h")
CLANGXX = shutil.which("clang++")
FLAGS = ["-fsyntax-only", "-std=c++17", "--target=arm64-apple-macos13", "-nostdinc++", "-Wno-unknown-attributes", "-Wno-parentheses-equality", "-ferror-limit=0"]
_INCLUDE = "#include <metal_stdlib>\nusing namespace metal;\n"

def batch(srcs: dict[str, str]) -> tuple[str, dict[int, str]]:
  """One C++ file holding every kernel in its own namespace (names repeat across kernels), and line -> kernel label."""
  lines, owner = ["#include <metal_stdlib>"], {}
  for i, (label, src) in enumerate(srcs.items()):
    assert src.startswith(_INCLUDE), f"{label}: MSL must start with the metal_stdlib include"
    # a threadgroup array is a function-scope variable in MSL; clang's address_space attribute allows that only on statics
    body = re.sub(r"(?m)^(\s*)threadgroup ", r"\1static threadgroup ", src[len(_INCLUDE):])
    lines.append(f"namespace k{i} {{ using namespace metal;  // {label}")
    for ln in body.splitlines():
      owner[len(lines) + 1] = label
      lines.append(ln)
    lines.append("}")
  return "\n".join(lines) + "\n", owner

def check(srcs: dict[str, str]) -> list[str]:
  """clang++ diagnostics (errors and warnings), each prefixed with the kernel it is in; [] when all kernels are clean."""
  text, owner = batch(srcs)
  with tempfile.TemporaryDirectory(prefix="tinygrad_metal_chk_") as tmp:
    with open(os.path.join(tmp, "metal_stdlib"), "w") as f: f.write(f'#include "{STUB}"\n')
    path = os.path.join(tmp, "kernels.cpp")
    with open(path, "w") as f: f.write(text)
    r = subprocess.run([str(CLANGXX), *FLAGS, f"-I{tmp}", path], capture_output=True, text=True)
  out = []
  for m in re.finditer(r"^(\S+?):(\d+):\d+: (error|warning): (.*)$", r.stderr, re.M):
    where = owner.get(int(m.group(2)), "?") if m.group(1) == path else os.path.basename(m.group(1))
    out.append(f"{where}: {m.group(3)}: {m.group(4)}")
  if r.returncode != 0 and not out: out.append(r.stderr.strip() or f"clang++ exit {r.returncode}")
  return out

# MSL has no generic pointers: every pointer type in a cast must name its address space
_BARE_PTR_CAST = re.compile(r"\(\((?!device |threadgroup |thread |constant )[A-Za-z_][\w ]*\*\)")
def lint(src: str) -> list[str]:
  """MSL rules the C++ check cannot see."""
  bad = [f"pointer cast without an address space: {m.group(0)}" for m in _BARE_PTR_CAST.finditer(src)]
  if re.search(r"\bdouble\b|\blong long\b", src): bad.append("double / long long do not exist in MSL")
  return bad
