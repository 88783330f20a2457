#!/usr/bin/env python3
"""Print code lines (non-blank, non-comment) per file and per package, so size stays visible."""
import pathlib, sys, tokenize, io

def code_lines(path: pathlib.Path) -> int:
  src = path.read_text()
  lines: set[int] = set()
  try:
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
      if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER, tokenize.STRING):
        lines.update(range(tok.start[0], tok.end[0]+1))
  except tokenize.TokenError: return len([l for l in src.splitlines() if l.strip()])
  return len(lines)

def main() -> None:
  root = pathlib.Path(__file__).resolve().parent.parent
  packages = [root/"core"/"tinygrad"] + sorted(p for p in (root/"plugins").glob("*/*") if p.is_dir() and (p/"__init__.py").exists())
  grand = 0
  for pkg in packages:
    rows = sorted((code_lines(f), str(f.relative_to(root))) for f in pkg.rglob("*.py"))
    total = sum(n for n, _ in rows)
    grand += total
    if "-v" in sys.argv:
      for n, name in rows: print(f"  {n:6d} {name}")
    print(f"{total:7d} {pkg.relative_to(root)} ({len(rows)} files)")
  print(f"{grand:7d} total")

if __name__ == "__main__": main()
