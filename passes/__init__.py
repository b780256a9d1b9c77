"""Passes over the tile dialect, registered by name with `@register_pass`."""
