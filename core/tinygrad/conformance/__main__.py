"""`python -m tinygrad.conformance DEVICE[,DEVICE] [--quick] [pytest args...]`: run the conformance suite on those devices."""
import sys

def main(argv: list[str]) -> int:
  # the suite's two dependencies are an extra of the core: without them say so, not a traceback or 4 collection errors
  try:
    import pytest, hypothesis  # noqa: F401
  except ImportError as e:
    print(f"the conformance suite needs pytest and hypothesis ({e}): pip install \"tinygrad-core[conformance]\" "
          "(from a checkout of the core: pip install -e \".[conformance]\")", file=sys.stderr)
    return 2
  if not argv or argv[0].startswith("-"):
    print(__doc__.strip(), file=sys.stderr)
    return 2
  devices, rest = argv[0], argv[1:]
  # tinygrad is imported before pytest starts, so pytest cannot assert-rewrite the pytest11 plugin's package: it warns so on
  # every run, about nothing the author can change (the suite's test modules are rewritten as usual)
  args = ["--pyargs", "tinygrad.conformance", f"--tinygrad-device={devices}", "-p", "tinygrad.conformance.plugin",
          "-W", "ignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"]
  if "--quick" in rest:
    rest.remove("--quick")
    args.append("--tinygrad-quick")
  return int(pytest.main(args + rest))

if __name__ == "__main__": sys.exit(main(sys.argv[1:]))
