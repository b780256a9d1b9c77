"""The TMA descriptors (CUtensorMap) of a launch, one per `tma` part of the ABI.

`tile-pipeline` turns a load of a 2-D block, masked at the bounds of a
row-major tensor, into TMA copies; the kernel then takes a pointer to a
descriptor of that tensor, which only the host can encode: its address, its
bounds and row stride (values of the launch's scalar arguments, named in the
ABI entry), the box one copy moves and the shared-memory swizzle. Each
descriptor is encoded once per device, copied to that device on the launch's
stream and kept, keyed by what it encodes; a launch with the same tensor and
sizes only looks it up.

CUDA graphs: the copy is asynchronous, from pinned host memory kept with the
device buffer (while capturing, from a slab pinned before), so a first launch
under `torch.cuda.graph` capture records it as a memcpy node (replays copy the
same bytes again) rather than breaking the capture with a synchronous copy; once one was made while capturing, none is
dropped from the cache any more (a graph's kernels keep reading theirs). A
warm-up launch before capture (torch's advice anyway: it also loads the module)
makes replays only read them; new values in the same buffers keep them valid.
"""

from __future__ import annotations

from . import cuda_driver

_MAX_CACHED = 1024
# Whether a descriptor was made during a CUDA graph capture: a graph may then read any of them
# on replay (one made before capture too), so none is dropped any more.
_captured = False


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

    def __call__(self, address: int, rows: int, cols: int, stride: int, device: int = 0) -> int:
        key = (address, rows, cols, stride, device)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._upload(address, rows, cols, stride, device)
        return hit[1]

    def _upload(self, address, rows, cols, stride, device):
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
        global _captured
        capturing = torch.cuda.is_current_stream_capturing()
        _captured = _captured or capturing
        if len(self._cache) >= _MAX_CACHED and not _captured:
            # (the stream orders a reuse of the freed buffers after the kernels that read them)
            self._cache.clear()
        host = _pinned(capturing, self.name)
        host.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
        buf = torch.empty(128, dtype=torch.uint8, device=torch.device("cuda", device))
        buf.copy_(host, non_blocking=True)  # on buf's device's current stream: the launch's
        return buf, buf.data_ptr(), host


_SLAB_SLOTS = 256
_slab: list = []  # free 128-byte slices of pinned memory pinned before any capture


def _pinned(capturing: bool, name: str):
    """128 bytes of pinned host memory for one descriptor's copy, owned by it. While a stream is
    captured, pinning is no call to make (the host allocator queries events): the slice then
    comes from a slab pinned earlier, refilled by each upload outside a capture."""
    import torch

    if not capturing:
        if len(_slab) < _SLAB_SLOTS // 4:
            slab = torch.empty(128 * _SLAB_SLOTS, dtype=torch.uint8, pin_memory=True)
            _slab.extend(slab[i * 128:(i + 1) * 128] for i in range(_SLAB_SLOTS))
        return torch.empty(128, dtype=torch.uint8, pin_memory=True)
    if not _slab:
        from ..frontend.errors import LaunchError

        raise LaunchError(f"argument '{name}': a TMA descriptor made during a CUDA graph capture needs pinned memory "
                          f"set aside by an earlier launch of a TMA kernel: launch it once before capturing")
    return _slab.pop()
