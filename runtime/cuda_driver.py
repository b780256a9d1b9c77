"""A small ctypes shim over the CUDA driver API (libcuda.so.1): context setup,
device queries, loading compiled cubin/PTX images and launching their kernels.
It is the only file in `tile` that talks to libcuda; everything else goes
through the functions and classes here. The library is opened lazily on first
use, so importing this module works on hosts without a GPU or driver.
"""
import ctypes
from ctypes import POINTER, c_char_p, c_int, c_uint, c_void_p

CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1  # static shared memory (mbarriers, the dynamic buffer's alignment)
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

# Every entry point we call, with its C signature; all return CUresult (int).
# None of these is remapped to a _v2 symbol by cuda.h (CUDA 13.0): the
# cuCtxSynchronize_v2 it declares takes a context and is a different call.
_SIGNATURES = {
    "cuInit": (c_uint,),
    "cuDeviceGet": (POINTER(c_int), c_int),
    "cuDeviceGetCount": (POINTER(c_int),),
    "cuDeviceGetAttribute": (POINTER(c_int), c_int, c_int),
    "cuCtxGetCurrent": (POINTER(c_void_p),),
    "cuCtxSetCurrent": (c_void_p,),
    "cuDevicePrimaryCtxRetain": (POINTER(c_void_p), c_int),
    "cuModuleLoadData": (POINTER(c_void_p), c_void_p),
    "cuModuleGetFunction": (POINTER(c_void_p), c_void_p, c_char_p),
    "cuModuleUnload": (c_void_p,),
    "cuFuncSetAttribute": (c_void_p, c_int, c_int),
    "cuFuncGetAttribute": (POINTER(c_int), c_int, c_void_p),
    "cuLaunchKernel": (c_void_p, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint,
                       c_uint, c_void_p, POINTER(c_void_p), POINTER(c_void_p)),
    "cuLaunchKernelEx": (c_void_p, c_void_p, POINTER(c_void_p), POINTER(c_void_p)),
    "cuCtxSynchronize": (),
    "cuThreadExchangeStreamCaptureMode": (POINTER(c_int),),
    "cuGetErrorName": (c_int, POINTER(c_char_p)),
    "cuGetErrorString": (c_int, POINTER(c_char_p)),
    # tensorMap, dataType, rank, globalAddress, globalDim, globalStrides, boxDim, elementStrides,
    # interleave, swizzle, l2Promotion, oobFill
    "cuTensorMapEncodeTiled": (c_void_p, c_int, c_uint, c_void_p, POINTER(ctypes.c_uint64), POINTER(ctypes.c_uint64),
                               POINTER(c_uint), POINTER(c_uint), c_int, c_int, c_int, c_int),
}

_lib = None  # the loaded CDLL; None until first use
_initialized = False  # whether cuInit(0) has succeeded in this process


class CudaError(RuntimeError):
    """A CUDA driver call failed, or there is no driver to call."""


def _load():
    """Open libcuda once and set every prototype, so calls never build them again."""
    global _lib
    if _lib is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
            for name, argtypes in _SIGNATURES.items():
                fn = getattr(lib, name)
                fn.argtypes, fn.restype = argtypes, c_int
        except (OSError, AttributeError) as e:
            raise CudaError(f"no CUDA driver (libcuda.so.1) on this host: {e}") from None
        _lib = lib
    return _lib


def check(result: int, what: str) -> None:
    """Raise CudaError naming `what` and the driver's error if `result` is not CUDA_SUCCESS."""
    if result == 0:
        return
    lib = _load()
    # ctypes passes out-params by address since argtypes says POINTER(...).
    name, desc = c_char_p(), c_char_p()
    lib.cuGetErrorName(result, name)
    lib.cuGetErrorString(result, desc)
    name_s = name.value.decode() if name.value else f"CUresult {result}"
    desc_s = desc.value.decode() if desc.value else "unknown error"
    error = CudaError(f"{what} failed: {name_s} ({desc_s})")
    error.code = result
    raise error


def _init():
    global _initialized
    lib = _load()
    if not _initialized:
        check(lib.cuInit(0), "cuInit")
        _initialized = True
    return lib


def available() -> bool:
    """True if the driver loads, initializes and sees at least one device."""
    try:
        count = c_int()
        check(_init().cuDeviceGetCount(count), "cuDeviceGetCount")
        return count.value > 0
    except Exception:
        return False


def _device(ordinal: int) -> int:
    dev = c_int()
    check(_init().cuDeviceGet(dev, ordinal), "cuDeviceGet")
    return dev.value


def ensure_context(ordinal: int = 0) -> int:
    """Make a context current on this thread and return its handle: the one torch
    already made current (so we share its allocations), else device `ordinal`'s primary."""
    ctx = current_context()
    if not ctx:
        ctx = primary_context(ordinal)
        set_context(ctx)
    return ctx


_primary: dict = {}  # device ordinal -> its retained primary context (torch's, for that device)


def primary_context(ordinal: int) -> int:
    """Device `ordinal`'s primary context, retained once: the one torch allocates in."""
    ctx = _primary.get(ordinal)
    if ctx is None:
        handle = c_void_p()
        check(_init().cuDevicePrimaryCtxRetain(handle, _device(ordinal)), "cuDevicePrimaryCtxRetain")
        ctx = _primary[ordinal] = handle.value
    return ctx


def current_context() -> int | None:
    ctx = c_void_p()
    check(_init().cuCtxGetCurrent(ctx), "cuCtxGetCurrent")
    return ctx.value


def set_context(ctx: int | None) -> None:
    check(_init().cuCtxSetCurrent(c_void_p(ctx)), "cuCtxSetCurrent")


class on_device:
    """`with on_device(d):` device d's primary context is current inside (a module loads into
    it, a launch runs in it), the previous one again after; `d` None leaves it as it is."""

    def __init__(self, ordinal: int | None):
        self.ordinal = ordinal

    def __enter__(self):
        if self.ordinal is None:
            ensure_context()
            return self
        self.previous = current_context()
        ctx = primary_context(self.ordinal)
        if ctx != self.previous:
            set_context(ctx)
        else:
            self.previous = False  # nothing to restore
        return self

    def __exit__(self, *exc):
        if self.ordinal is not None and self.previous is not False:
            set_context(self.previous)


CU_STREAM_CAPTURE_MODE_RELAXED = 2


class relaxed_capture:
    """`with relaxed_capture():` this thread may make calls that a stream capture in torch's
    default (global) mode forbids, such as loading a module: a kernel's first launch may then
    come while a CUDA graph is captured (its module is no part of the graph)."""

    def __enter__(self):
        self.mode = c_int(CU_STREAM_CAPTURE_MODE_RELAXED)
        check(_init().cuThreadExchangeStreamCaptureMode(ctypes.byref(self.mode)), "cuThreadExchangeStreamCaptureMode")
        return self

    def __exit__(self, *exc):
        check(_init().cuThreadExchangeStreamCaptureMode(ctypes.byref(self.mode)), "cuThreadExchangeStreamCaptureMode")


def _attribute(attr: int, device: int) -> int:
    value = c_int()
    check(_init().cuDeviceGetAttribute(value, attr, _device(device)), "cuDeviceGetAttribute")
    return value.value


def device_capability(device: int = 0) -> tuple[int, int]:
    return (_attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
            _attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device))


def max_shared_memory_optin(device: int = 0) -> int:
    return _attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device)


def synchronize() -> None:
    check(_load().cuCtxSynchronize(), "cuCtxSynchronize")


class Module:
    """A loaded cubin/fatbin/PTX image (cuModuleLoadData), in device `device`'s primary
    context (None: the current context, else device 0's): a module belongs to one context,
    and its functions launch only there."""

    def __init__(self, image: bytes, device: int | None = None):
        # Kept alive with the module; the copy adds the NUL that PTX text needs.
        self._image = ctypes.create_string_buffer(bytes(image))
        self.device = device
        handle = c_void_p()
        with on_device(device), relaxed_capture():
            check(_load().cuModuleLoadData(handle, self._image), "cuModuleLoadData")
        self.handle = handle.value

    def function(self, name: str) -> "Function":
        handle = c_void_p()
        check(_load().cuModuleGetFunction(handle, self.handle, name.encode()),
              f"cuModuleGetFunction({name!r})")
        return Function(handle.value, self)

    def unload(self) -> None:
        if self.handle is not None:
            check(_load().cuModuleUnload(self.handle), "cuModuleUnload")
            self.handle = None


class Function:
    """A kernel in a loaded Module (CUfunction)."""

    def __init__(self, handle: int, module: "Module | None" = None):
        self.handle = handle
        self.module = module  # keeps the module (and its image) referenced

    def static_shared_bytes(self) -> int:
        value = c_int()
        check(_load().cuFuncGetAttribute(ctypes.byref(value), CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, self.handle),
              "cuFuncGetAttribute")
        return value.value

    def set_dynamic_shared_memory(self, nbytes: int) -> None:
        """Allow launches with more than the default 48 KiB of dynamic shared memory."""
        check(_load().cuFuncSetAttribute(self.handle, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                         nbytes), "cuFuncSetAttribute")

    def launch(self, grid: tuple[int, int, int], block: tuple[int, int, int], params: list,
               shared_mem: int = 0, stream: int = 0) -> None:
        """`params`: ctypes scalars in kernel-signature order; the driver reads each by address."""
        self.launch_argv(grid, block, parameter_array(params), shared_mem, stream)

    def launch_argv(self, grid, block, argv, shared_mem: int = 0, stream: int = 0, pdl: bool = False) -> None:
        """Launch with a prebuilt `void*[]` of parameter addresses (see `parameter_array`); `pdl`:
        as a programmatic dependent launch (cuLaunchKernelEx with programmatic stream
        serialization: the grid may start before the one before it on the stream ends, and
        waits for it at `griddepcontrol.wait`)."""
        if not pdl:
            check(_load().cuLaunchKernel(self.handle, *grid, *block, shared_mem, stream, argv, None),
                  "cuLaunchKernel")
            return
        attr = LaunchAttribute(id=CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
        attr.value[:4] = (1).to_bytes(4, "little")  # programmaticStreamSerializationAllowed
        config = LaunchConfig(*grid, *block, shared_mem, stream, ctypes.pointer(attr), 1)
        check(_load().cuLaunchKernelEx(ctypes.byref(config), self.handle, argv, None), "cuLaunchKernelEx")


CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 6


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, then a 64-byte union 8-byte aligned."""
    _fields_ = [("id", c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_ubyte * 64)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuLaunchKernelEx's)."""
    _fields_ = [("gridDimX", c_uint), ("gridDimY", c_uint), ("gridDimZ", c_uint), ("blockDimX", c_uint),
                ("blockDimY", c_uint), ("blockDimZ", c_uint), ("sharedMemBytes", c_uint), ("hStream", c_void_p),
                ("attrs", POINTER(LaunchAttribute)), ("numAttrs", c_uint)]


# CUtensorMapDataType, by element type; CUtensorMapSwizzle, by swizzle bytes.
TENSOR_MAP_TYPES = {"u8": 0, "i8": 0, "f8E4M3FN": 0, "f8E5M2": 0, "f16": 6, "f32": 7, "bf16": 9}
TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
_L2_PROMOTION_128B = 2


def encode_tensor_map(dtype: str, address: int, dims: list[int], strides: list[int], box: list[int],
                      swizzle: int) -> bytes:
    """The 128-byte CUtensorMap of a tiled TMA copy (cuTensorMapEncodeTiled): `dims`
    innermost first, `strides` in bytes of each dim after the first, `box` the block one
    copy moves; out-of-bounds elements read as zeros."""
    lib = _init()
    rank = len(dims)
    buf = ctypes.create_string_buffer(128 + 64)
    aligned = (ctypes.addressof(buf) + 63) // 64 * 64  # the driver wants the map 64-byte aligned
    check(lib.cuTensorMapEncodeTiled(
        c_void_p(aligned), TENSOR_MAP_TYPES[dtype], rank, c_void_p(address), (ctypes.c_uint64 * rank)(*dims),
        (ctypes.c_uint64 * max(1, rank - 1))(*strides), (c_uint * rank)(*box), (c_uint * rank)(*([1] * rank)),
        0, TENSOR_MAP_SWIZZLE[swizzle], _L2_PROMOTION_128B, 0), "cuTensorMapEncodeTiled")
    return ctypes.string_at(aligned, 128)


def bare(name: str):
    """Entry point `name` as a second ctypes function object without argtypes (restype
    CUresult), for a hot call whose caller passes values already in C form: handles and
    streams as c_void_p, 32-bit ints as ints, arrays, None for NULL. ctypes then converts
    nothing per argument (cuLaunchKernel: ~0.4 us a call instead of ~1.2 us)."""
    fn = _load()[name]  # CDLL.__getitem__ makes a new function object, unlike getattr
    fn.restype = c_int
    return fn


def parameter_array(params: list):
    """The `void* kernelParams[]` for ctypes scalars; valid while they live."""
    return (c_void_p * len(params))(*[ctypes.addressof(p) for p in params])
