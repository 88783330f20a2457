"""NV figures per compiler pair (bench/common.py's gpu_figures: elementwise, reduce, float and half matmul, and numpy's
matmul on the host). On the mock driver (NV_MOCK=1) the numbers measure the PYTHON interpreter: they only show it runs."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import gpu_figures

if __name__ == "__main__": gpu_figures("NV", ("NVRTC", "NVCC", "PTX"), os.environ.get("NV_MOCK") == "1")
