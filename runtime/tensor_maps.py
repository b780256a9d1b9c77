"""The TMA descriptors (CUtensorMap) of a launch, one per `tma` part of the ABI.

`tile-pipeline` turns a load of a 2-D block, masked at the bounds of a
row-major tensor, into TMA copies; the kernel then takes a pointer to a
descriptor of that tensor, which only the host can encode: its address, its
bounds and row stride (values of the launch's scalar arguments, named in the
ABI entry), the box one copy moves and the shared-memory swizzle. Each
descriptor is encoded once, copied to the device on the launch's stream and
kept, keyed by what it encodes; a launch with the same tensor and sizes only
looks it up.
"""

from __future__ import annotations

from . import cuda_driver

_MAX_CACHED = 1024


class TensorMap:
    """Makes the descriptor pointer of one ABI entry from the launch's values."""

    def __init__(self, entry: dict, arg_names: list[str]):
        self.entry = entry
        self.name = arg_names[entry["arg"]]
        self.refs = [tuple(entry[k]) for k in ("rows", "cols", "stride")]
        self.elem_bytes = entry["elem_bytes"]
        self._cache: dict = {}

    def sizes(self, values: list) -> tuple[int, int, int]:
        return tuple(values[v] if kind == "arg" else v for kind, v in self.refs)

    def __call__(self, address: int, rows: int, cols: int, stride: int) -> int:
        key = (address, rows, cols, stride)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._upload(address, rows, cols, stride)
        return hit[1]

    def _upload(self, address, rows, cols, stride):
        import torch

        e = self.entry
        try:
            data = cuda_driver.encode_tensor_map(
                e["dtype"], address, [max(1, cols), max(1, rows)], [stride * self.elem_bytes], list(e["box"])[::-1],
                e["swizzle"])
        except cuda_driver.CudaError as err:
            raise cuda_driver.CudaError(
                f"argument '{self.name}': no TMA descriptor for a {rows} x {cols} block view with row stride {stride} "
                f"at 0x{address:x}: {err}") from None
        if len(self._cache) >= _MAX_CACHED:
            self._cache.clear()  # the stream orders a reuse of the freed buffers after the kernels that read them
        buf = torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.device("cuda", torch.cuda.current_device()))
        return buf, buf.data_ptr()
