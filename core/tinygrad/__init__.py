"""tinygrad: a small tensor compiler core; device backends are separately installed plugins."""
from tinygrad.helpers import Context, getenv, DEBUG
from tinygrad.dtype import dtypes
