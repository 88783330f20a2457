"""The conformance suite: every capability a tinygrad device must have, checked against numpy, as a pytest plugin.

Run it against any installed device (your own plugin's included):

    python -m tinygrad.conformance FOO            # the whole suite on device FOO (add --quick for a smoke run)
    pytest --pyargs tinygrad.conformance --tinygrad-device=FOO [--tinygrad-quick]

The plugin module (`tinygrad.conformance.plugin`) is registered in the `pytest11` entry-point group, so an environment
with tinygrad-core installed has the options above; from a source tree add `-p tinygrad.conformance.plugin`. The
test modules here (`test_*.py`) need numpy, hypothesis and pytest; `import tinygrad` never imports this package.
See docs/plugins.md, "Testing your plugin".
"""
MODULES = ("test_ops", "test_alignment", "test_dtypes", "test_launch", "test_copy", "test_allocator", "test_compile_cache", "test_kernel_count", "test_errors",
           "test_inplace", "test_programs", "test_jit", "test_fp8")
