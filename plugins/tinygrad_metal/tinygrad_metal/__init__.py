"""tinygrad-metal: the METAL device plugin (MSL rendered on the core's C-style base; Metal framework via PyObjC, imported lazily)."""
