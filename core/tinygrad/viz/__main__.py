"""`python -m tinygrad.viz [TRACE.json]`: serve a VIZ trace on 127.0.0.1."""
import sys
from tinygrad.viz.serve import main

if __name__ == "__main__": sys.exit(main())
