"""The `tile` MLIR dialect: op definitions, builders, verifiers and layouts."""

from .tile_dialect import irdl_source, load, make_context

__all__ = ["irdl_source", "load", "make_context"]
