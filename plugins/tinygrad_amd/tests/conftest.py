import os, sys
# the shared kernel builders live next to the tests (the CPU plugin's hand-built kernels are reused)
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tinygrad_cpu", "tests"))
