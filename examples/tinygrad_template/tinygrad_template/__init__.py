"""tinygrad-template: the TEMPLATE device, a starting point for a new tinygrad device plugin (see docs/plugins.md)."""
