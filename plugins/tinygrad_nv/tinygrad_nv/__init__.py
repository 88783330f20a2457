"""tinygrad NV device plugin."""
