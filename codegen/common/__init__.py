"""What both targets' lowerings share: float8 and tf32 arithmetic, predicated accesses, and
the lowerings of `tile.print` and `tile.assert_fail`."""
