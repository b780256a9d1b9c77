"""Launches a cubin from the cache on its tensors' device, on torch's current stream there.

The cubin is loaded once per device, into that device's primary context (torch's),
at the first launch there; a launch takes the device of its tensor arguments (the
current one if it has none), that device's current stream, and that device's
context when another is current. Tensors of two devices are a LaunchError.

The kernel parameters are built from the ABI recorded at compile time (read
back from the compiled function's signature): for each tensor its pointer
(twice: allocated and aligned), offset 0, sizes and strides in elements; for
each scalar its value; for each TMA copy a pointer to its tensor map
(`tensor_maps.py`). Imports only the standard library and the driver shim.

Two ways in: `__call__(grid, values, names)`, general, and `fast_launch(kinds)`,
a function generated once per specialization (the way Triton generates its
launcher) that `Kernel`'s binder calls with the grid and the arguments it has
already read: it writes exactly the parameters the kernel reads into their
preallocated ctypes slots and calls cuLaunchKernel with values already in C form.
"""

from __future__ import annotations

import ctypes
import linecache
import re
import threading
from collections import Counter

from ..frontend.errors import DeviceUnavailableError, LaunchError
from . import cuda_driver
from .arguments import CTYPES, check_values, tensor_device
from .tensor_maps import TensorMap


class CudaLauncher:
    def __init__(self, metadata: dict, cubin: bytes):
        self.metadata, self.name, self.cubin = metadata, metadata["name"], cubin
        self.block = (metadata["num_threads"], 1, 1)
        self.abi = [(a["arg"], a["part"], a.get("dim", 0), a["type"]) for a in metadata["abi"]]
        self.arg_names = [a[0] for a in metadata["args"]]
        self.shared_bytes = metadata.get("shared_bytes", 0)
        self.pdl = bool(metadata.get("options", {}).get("launch_pdl"))  # launched by cuLaunchKernelEx
        self._functions: dict = {}  # device ordinal -> Function (a module per primary context)
        self._handles: dict = {}  # device ordinal -> the function's handle as c_void_p
        # One preallocated ctypes slot per parameter, and the address array over them, built
        # once: a launch only writes values into the slots (launches from one thread at a time).
        self._slots = [ctypes.c_void_p() if ty == "ptr" else CTYPES[ty]() for _, _, _, ty in self.abi]
        self._argv = cuda_driver.parameter_array(self._slots)
        self._maps = {j: TensorMap(a, self.arg_names) for j, a in enumerate(metadata["abi"]) if a["part"] == "tma"}
        self._plan = {}
        for j, (slot, (arg, part, dim, _)) in enumerate(zip(self._slots, self.abi)):
            self._plan.setdefault(arg, []).append((slot, part, self._maps[j] if part == "tma" else dim))
        self._plan = list(self._plan.items())
        self._fast: dict = {}

    def function(self, device: int | None = None):
        """The kernel's function on CUDA device `device` (None: the current one), its module
        loaded into that device's primary context on first use: a function of one context
        does not launch in another."""
        self._need_device()
        if device is None:
            device = _stream_getters()[1]()
        fn = self._functions.get(device)
        if fn is None:
            with cuda_driver.on_device(device):
                module = cuda_driver.Module(self.cubin, device)
                fn = module.function(self.name)
                # Past 48 KB, static shared memory included, a block must opt in: an FP8 matmul
                # with 48 KB of dynamic and 2 KB of static (its mbarriers) failed to launch.
                if self.shared_bytes and self.shared_bytes + fn.static_shared_bytes() > 48 * 1024:
                    fn.set_dynamic_shared_memory(self.shared_bytes)
            self._functions[device] = fn
            self._handles[device] = ctypes.c_void_p(fn.handle)
        return fn

    def check(self, values):
        """Called once per new argument signature, not per launch: tensors on one CUDA device."""
        device = tensor_device(self.arg_names, values)
        self._need_device()  # first: say so if there is no device at all
        check_values(self.arg_names, values, want_cuda=True)
        self.function(device)

    def _need_device(self):
        if not self._functions and not cuda_driver.available():
            raise DeviceUnavailableError(
                f"{self.name} was compiled for {self.metadata['target']} into the cache "
                f"({self.metadata.get('cache_path')}), but this host has no CUDA device to run it")

    def __call__(self, grid, values, names):
        device = tensor_device(names, values)
        if device is None:
            device = _stream_getters()[1]()
        fn = self._functions.get(device) or self.function(device)
        if grid[1] > MAX_GRID_YZ or grid[2] > MAX_GRID_YZ:
            launch_failed(None, *grid)
        for arg, slots in self._plan:
            v = values[arg]
            if hasattr(v, "data_ptr"):
                ptr, shape, strides = v.data_ptr(), v.shape, v.stride()
                for slot, part, dim in slots:
                    if part == "tma":
                        slot.value = dim(ptr, *dim.sizes(values), device)
                        continue
                    slot.value = ptr if part == "ptr" else 0 if part == "offset" else shape[dim] if part == "size" else strides[dim]
            else:
                slots[0][0].value = v
        get_stream, current = _stream_getters()
        stream = get_stream(device)
        if not getattr(_thread, "ready", False):
            _ready_thread(device)
        if current() != device:
            with cuda_driver.on_device(device):
                fn.launch_argv(grid, self.block, self._argv, self.shared_bytes, stream, self.pdl)
            return
        try:
            fn.launch_argv(grid, self.block, self._argv, self.shared_bytes, stream, self.pdl)
        except cuda_driver.CudaError as e:
            if getattr(e, "code", None) != CUDA_ERROR_INVALID_CONTEXT:
                raise
            _adopt_primary(device)  # (a thread with no context current yet: see `_generate`)
            fn.launch_argv(grid, self.block, self._argv, self.shared_bytes, stream, self.pdl)

    # ---- the generated per-specialization launch ----------------------------------
    def params_read(self) -> set[int] | None:
        """Indices of the kernel parameters its PTX reads (`ld.param` and the like name the
        parameter; its declaration names it once), or None when that cannot be told. The
        others (the allocated pointer, often sizes and strides) need not be written."""
        ptx = getattr(self, "asm", {}).get("ptx")
        if not isinstance(ptx, str) or f".entry {self.name}(" not in ptx:
            return None
        uses = Counter(int(i) for i in re.findall(rf"\b{re.escape(self.name)}_param_(\d+)\b", ptx))
        if sorted(uses) != list(range(len(self.abi))):
            return None
        return {i for i, n in uses.items() if n > 1}

    def fast_launch(self, kinds: tuple, device: int | None = None):
        """The launch function for arguments of `kinds` (one per run-time argument: "t" a
        tensor, "i"/"f"/"b" an int/float/bool) on CUDA device `device` (that of the tensor
        arguments; None: whichever is current at each launch), called as `f(gx, gy, gz, *flat)`
        where `flat` is, per argument, `t, t.data_ptr()` for a tensor and the value for a
        scalar. Grid dims are positive ints below 2**31. None if kinds do not fit the ABI, or for
        a programmatic dependent launch (`__call__` makes it)."""
        if self.pdl:
            return None
        if (kinds, device) not in self._fast:
            self._fast[kinds, device] = self._generate(kinds, device)
        return self._fast[kinds, device]

    def _generate(self, kinds, device):
        self.function(device)  # (loaded now: a missing device is an error here, not at a launch)
        if any(arg >= len(kinds) or (kinds[arg] == "t") != (part != "value") for arg, part, _, _ in self.abi):
            return None
        read = self.params_read()
        params = ["_gx", "_gy", "_gz"]
        for i, k in enumerate(kinds):
            params += [f"a{i}", f"a{i}p"] if k == "t" else [f"a{i}"]
        body, slots, shapes, maps = [], [], set(), []
        for j, (slot, (arg, part, dim, _)) in enumerate(zip(self._slots, self.abi)):
            if part == "offset" or (read is not None and j not in read):
                continue  # offsets stay 0 (the slots start zeroed); unread parameters need no value
            if part in ("size", "stride") and (arg, part) not in shapes:
                shapes.add((arg, part))
                body.append(f"a{arg}{part[:2]} = a{arg}.{'shape' if part == 'size' else 'stride()'}")
            if part == "tma":
                m = self._maps[j]
                sizes = ", ".join(f"a{v}" if kind == "arg" else str(v) for kind, v in m.refs)
                body.append(f"_s{j}.value = _tma{j}(a{arg}p, {sizes}, _d)")
                maps.append(j)
            else:
                value = {"ptr": f"a{arg}p", "value": f"a{arg}", "size": f"a{arg}si[{dim}]", "stride": f"a{arg}st[{dim}]"}[part]
                body.append(f"_s{j}.value = {value}")
            slots.append(j)
        bx, by, bz = self.block
        launch = f"_launch(_h, _gx, _gy, _gz, {bx}, {by}, {bz}, {self.shared_bytes}, _sv, _argv, None)"
        # The device of the tensors, its function and its current stream; in its context when
        # another device is current (as torch's device guard does for an op on a tensor there).
        head = ["_d = _get_device()", "_h = _handles.get(_d)", "if _h is None:", "    _h = _handle(_d)"] if device is None \
            else [f"_d = {device}"]
        body[:0] = head
        body += [
            "_st = _get_stream(_d)",
            "_sv = _streams.get(_st)",
            "if _sv is None:",
            "    _sv = _stream_arg(_st)",
        ]
        body += ["if not getattr(_tls, 'ready', False):", "    _ready(_d)"]
        if device is None:
            body.append(f"_r = {launch}")
        else:
            body += ["if _get_device() == _d:", f"    _r = {launch}", "else:", "    with _on_device(_d):", f"        _r = {launch}"]
        # (a context gone since `_ready` saw one: the primary context made current, and again)
        body += [f"if _r == {CUDA_ERROR_INVALID_CONTEXT}:", "    _adopt(_d)", f"    _r = {launch}"]
        body += ["if _r:", "    _check(_r, _gx, _gy, _gz)"]
        cells = ["_launch", "_h", "_handles", "_handle", "_on_device", "_argv", "_get_stream", "_get_device", "_streams",
                 "_stream_arg", "_check", "_adopt", "_tls", "_ready"]
        cells += [f"_s{j}" for j in slots] + [f"_tma{j}" for j in maps]
        src = (f"def _make({', '.join(cells)}):\n"
               f"    def launch_{self.name}({', '.join(params)}):\n"
               + "".join(f"        {line}\n" for line in body)
               + f"    return launch_{self.name}\n")
        namespace: dict = {}
        filename = f"<tile launch {self.name}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, "exec"), namespace)
        get_stream, get_device = _stream_getters()
        launch = namespace["_make"](cuda_driver.bare("cuLaunchKernel"), self._handles.get(device), self._handles,
                                    lambda d: self.function(d) and self._handles[d], cuda_driver.on_device, self._argv,
                                    get_stream, get_device, _streams, _stream_arg, launch_failed, _adopt_primary, _thread, _ready_thread,
                                    *[self._slots[j] for j in slots], *[self._maps[j] for j in maps])
        launch.source = src
        return launch


CUDA_ERROR_INVALID_CONTEXT = 201


def _adopt_primary(ordinal: int) -> None:
    """Device `ordinal`'s primary context (torch's) made current on this thread, which had none."""
    cuda_driver.set_context(cuda_driver.primary_context(ordinal))


_thread = threading.local()  # .ready: `_ready_thread` ran on this thread


def _ready_thread(ordinal: int) -> None:
    """A context current on this thread before its first launch: a thread torch started (its
    autograd workers run a backward) may have none yet, and cuLaunchKernel then fails with
    CUDA_ERROR_INVALID_CONTEXT (on the H100). The device's primary context, as the CUDA
    runtime would make current."""
    cuda_driver.ensure_context(ordinal)
    _thread.ready = True


MAX_GRID_YZ = 65535  # CUDA's limit on a grid's y and z (x: 2**31 - 1, which every grid keeps)


def launch_failed(result, gx, gy, gz):
    """cuLaunchKernel's error (the fast path's, after the fact: nothing checked per launch);
    a grid past CUDA's y and z limit is the launch's own error, and says so."""
    if gy > MAX_GRID_YZ or gz > MAX_GRID_YZ:
        raise LaunchError(f"grid {(gx, gy, gz)}: on a GPU a grid's second and third dims must be at most "
                          f"{MAX_GRID_YZ} (fold them into the first)")
    cuda_driver.check(result, "cuLaunchKernel")


# torch's raw stream handles as c_void_p, the form cuLaunchKernel takes without argtypes.
_streams: dict = {}


def _stream_arg(stream: int):
    if len(_streams) > 64:
        _streams.clear()
    arg = _streams[stream] = ctypes.c_void_p(stream)
    return arg


_getters = None


def _stream_getters():
    """(get_stream(device) -> raw handle, get_device()): torch's cheapest calls, two C calls."""
    global _getters
    if _getters is None:
        import torch

        get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        device = getattr(torch._C, "_cuda_getDevice", None)
        if get is not None and device is not None:
            torch.cuda.current_device()  # torch's lazy CUDA init, once
            _getters = (get, device)
        else:
            _getters = (lambda d: torch.cuda.current_stream(d).cuda_stream, torch.cuda.current_device)
    return _getters
