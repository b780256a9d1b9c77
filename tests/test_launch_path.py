"""The launch path of a GPU build, on the CPU: the driver is faked (cuLaunchKernel records
the kernel parameters it is given, read back through the `void*[]` as the driver would),
CPU tensors pass the once-per-signature device check, and the kernels are real sm_90 builds.
What is checked: the values marshalled into the parameters (pointers, sizes, strides,
scalars), by the generated fast path and by the general one, and that a change of
alignment, dtype, int specialization or argument kind picks the right specialization."""

import ctypes
import threading

import pytest
import torch

import tile
from tile.runtime import arguments, cuda_driver, cuda_launcher
from tile.runtime.arguments import CTYPES
from tile.runtime.cuda_launcher import CudaLauncher
from tile.runtime.launch_binder import disjoint


def _add(x, y, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    tile.store(out + offs, tile.load(x + offs, mask=mask) + tile.load(y + offs, mask=mask), mask=mask)


def _scale_rows(x, out, scale, BLOCK: tile.constexpr):
    row = tile.program_id(0)
    cols = tile.arange(0, BLOCK)
    mask = cols < x.size(1)
    v = tile.load(x + row * x.stride(0) + cols * x.stride(1), mask=mask)
    tile.store(out + row * out.stride(0) + cols * out.stride(1), v * scale, mask=mask)


STREAM = 0x5EED


class FakeDriver:
    """libcuda as far as a launch goes. Each loaded module gets its own function handle,
    so a launch's handle says which specialization ran."""

    def __init__(self):
        self.launches, self.launchers, self.handles = [], {}, iter(range(0x1000, 0x2000))
        self.loaded = []  # the device of each module loaded
        self.current = 0  # the device whose context is current (`on_device` switches it)

    # cuda_driver._load() returns this object
    def __getitem__(self, name):
        assert name == "cuLaunchKernel"
        return lambda *args: self._record("bare", *args)

    def __getattr__(self, name):
        if name == "cuLaunchKernel":
            return lambda *args: self._record("argtypes", *args)
        raise AttributeError(name)

    static_shared = 0  # what cuFuncGetAttribute reports a kernel's static shared memory as

    def cuFuncSetAttribute(self, function, attribute, value):  # a kernel of more than 48 KiB shared memory
        self.opted_in = (attribute, value)
        return 0

    def cuFuncGetAttribute(self, out, attribute, function):
        ctypes.cast(out, ctypes.POINTER(ctypes.c_int)).contents.value = self.static_shared
        return 0

    def cuGetErrorName(self, result, out):
        out.value = b"CUDA_ERROR_INVALID_VALUE"
        return 0

    def cuGetErrorString(self, result, out):
        out.value = b"invalid argument"
        return 0

    def _record(self, path, handle, gx, gy, gz, bx, by, bz, shared, stream, argv, extra):
        handle, stream = getattr(handle, "value", handle), getattr(stream, "value", stream) or 0
        launcher = self.launchers[handle]
        params = [ctypes.cast(argv[j], ctypes.POINTER(ctypes.c_void_p if ty == "ptr" else CTYPES[ty])).contents.value
                  for j, (_, _, _, ty) in enumerate(launcher.abi)]
        self.launches.append({"path": path, "launcher": launcher, "grid": (gx, gy, gz), "block": (bx, by, bz),
                              "shared": shared, "stream": stream, "params": params, "extra": extra,
                              "handle": handle, "context": self.current})
        return 0

    def on_device(self, device):
        driver = self

        class OnDevice:
            def __enter__(self):
                self.previous, driver.current = driver.current, driver.current if device is None else device

            def __exit__(self, *exc):
                driver.current = self.previous

        return OnDevice()

    def module(self, image, device=None):
        driver = self
        self.loaded.append(device)

        class Module:
            def __init__(self, image):
                pass

            def function(self, name):
                handle = next(driver.handles)
                driver.launchers[handle] = driver._loading
                return cuda_driver.Function(handle, self)

        return Module(image)


@pytest.fixture
def driver(monkeypatch):
    fake = FakeDriver()
    monkeypatch.setenv("TILE_TARGET", "sm_90")
    monkeypatch.delenv("TILE_COMPILE_ONLY", raising=False)
    monkeypatch.setattr(cuda_driver, "_load", lambda: fake)
    monkeypatch.setattr(cuda_driver, "available", lambda: True)
    monkeypatch.setattr(cuda_driver, "Module", fake.module)
    monkeypatch.setattr(cuda_driver, "on_device", fake.on_device)
    monkeypatch.setattr(cuda_driver, "current_context", lambda: 1)
    monkeypatch.setattr(cuda_launcher, "_getters", (lambda device: STREAM, lambda: 0))
    check_tensor = arguments.check_tensor
    monkeypatch.setattr(arguments, "check_tensor", lambda name, t, want_cuda: check_tensor(name, t, False))
    function = CudaLauncher.function

    def loading(self, device=None):  # tell the fake which launcher the next handle belongs to
        fake._loading = self
        return function(self, device)

    monkeypatch.setattr(CudaLauncher, "function", loading)
    return fake


def expected_params(launcher, runtime_values, read=None):
    """What each kernel parameter must hold, by the recorded ABI (None: not read, any value)."""
    out = []
    for j, (arg, part, dim, _) in enumerate(launcher.abi):
        v = runtime_values[arg]
        if read is not None and j not in read:
            out.append(None)
        elif part == "ptr":
            out.append(v.data_ptr())
        elif part == "offset":
            out.append(0)
        elif part == "size":
            out.append(v.shape[dim])
        elif part == "stride":
            out.append(v.stride(dim))
        else:
            out.append(v)
    return out


def assert_params(launch, want):
    got = [g if w is not None else None for g, w in zip(launch["params"], want)]
    for j, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, float):
            assert g == pytest.approx(w, rel=1e-6), (j, got, want)
        else:
            assert g == (w or None if launch["launcher"].abi[j][3] == "ptr" else w), (j, got, want)


def test_vector_add_parameters_on_the_fast_path(driver):
    add = tile.kernel(_add)
    n = 1000
    for i in range(3):  # new tensors each time: the slots must follow them
        x, y, out = torch.rand(n), torch.rand(n), torch.empty(n)
        add[(4,)](x, y, out, n, BLOCK=256)
        launch = driver.launches[-1]
        launcher = launch["launcher"]
        assert launch["path"] == "bare" and add._binder is not None
        assert launch["grid"] == (4, 1, 1) and launch["block"] == (launcher.metadata["num_threads"], 1, 1)
        assert launch["stream"] == STREAM and launch["extra"] is None
        read = launcher.params_read()
        # The vector add reads the aligned pointers (parameters 1, 6, 11) and n (15); not all.
        assert {1, 6, 11, 15} <= read < set(range(len(launcher.abi)))
        assert_params(launch, expected_params(launcher, [x, y, out, n], read))
    assert len(driver.launches) == 3 and len({id(launch["launcher"]) for launch in driver.launches}) == 1
    assert len(add._bound) == 1


@pytest.mark.parametrize("path", ["fast", "general"])
def test_sizes_strides_and_float_scalar(driver, path):
    """A kernel that reads sizes and strides, on a strided view, through either path."""
    scale = tile.kernel(_scale_rows)
    base = torch.rand(8, 96)
    x, out = base[:, ::3], torch.empty(40, 16).t()  # strides (96, 3) and (1, 16)
    launch_it = scale[(8,)] if path == "fast" else scale._generic((8,))
    for s in (2.5, -0.75):
        launch_it(x, out, s, BLOCK=32)
        launch = driver.launches[-1]
        assert launch["path"] == ("bare" if path == "fast" else "argtypes")
        assert launch["grid"] == (8, 1, 1)
        launcher = launch["launcher"]
        want = expected_params(launcher, [x, out, s], launcher.params_read() if path == "fast" else None)
        assert {"ptr", "size", "stride", "value"} <= {launcher.abi[j][1] for j, w in enumerate(want) if w is not None}
        assert_params(launch, want)


def test_every_parameter_without_ptx(driver):
    """With no PTX to tell which parameters are read, the fast path writes all of them,
    and writes exactly what the general path writes."""
    add = tile.kernel(_add)
    x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
    launcher = add.compile(x, y, out, 64, BLOCK=64)
    launcher.asm = {}
    assert launcher.params_read() is None
    launcher.function()
    launcher.fast_launch(("t", "t", "t", "i"))(3, 2, 1, x, x.data_ptr(), y, y.data_ptr(), out, out.data_ptr(), 64)
    launcher((3, 2, 1), [x, y, out, 64], ["x", "y", "out", "n"])
    fast, general = driver.launches
    want = expected_params(launcher, [x, y, out, 64])
    assert None not in want
    assert_params(fast, want)
    assert_params(general, want)
    assert fast["grid"] == general["grid"] == (3, 2, 1) and fast["stream"] == general["stream"] == STREAM


def test_respecialization(driver):
    add = tile.kernel(_add)
    buf = torch.rand(3, 1024 + 4)
    x, y, out = buf[0, :1024], buf[1, :1024], torch.empty(1024)

    def run(*args, **meta):
        add[(1,)](*args, BLOCK=1024, **meta)
        return driver.launches[-1]["launcher"]

    aligned = run(x, y, out, 1024)
    assert aligned.metadata["options"]["divisible_args"] == "0,1,2,3"
    assert run(buf[0, 1:1025], y, out, 1024).metadata["options"]["divisible_args"] == "1,2,3"  # x off by 4 bytes
    assert run(x, y, out, 1000).metadata["options"]["divisible_args"] == "0,1,2"  # n not a multiple of 16
    assert run(x, y, out, 1024) is aligned
    half = run(x.half(), y.half(), out.half(), 1024)
    assert half is not aligned and half.metadata["args"][0][2] == "(tile.float16, 1)"
    one = run(x, y, out, 1)
    assert one.metadata["args"][3][1] == "one"  # folded into the kernel
    big = run(x, y, out, 2**31 + 16)
    assert big.metadata["args"][3][2] == "tile.int64" and driver.launches[-1]["params"][-1] == 2**31 + 16
    assert run(x, y, out, 1024, num_warps=8).metadata["num_threads"] == 256
    # noalias: x and y are views of one buffer above; apart, and then with out written in place.
    assert aligned.metadata["options"]["noalias"] is False
    x2 = torch.rand(1024)
    assert run(x2, y, out, 1024).metadata["options"]["noalias"] is True
    assert run(x2, y, x2, 1024).metadata["options"]["noalias"] is False
    assert run(x2, y, out[1:], 1023).metadata["options"]["noalias"] is True
    # Ahead-of-time builds on 'meta' tensors compile what distinct tensors on the device will
    # find, and one tensor passed twice as the aliasing launch it stands for.
    assert disjoint(*[torch.empty(8, device="meta") for _ in range(3)])
    assert not disjoint(*[torch.empty(8, device="meta")] * 3)
    assert all(launch["path"] == "bare" for launch in driver.launches)
    # An argument of another kind than the binder was made for takes the general path, rightly.
    with pytest.raises(tile.LaunchError, match="argument 'y' has type str"):
        add[(1,)](x, "y", out, 1024, BLOCK=1024)
    with pytest.raises(tile.LaunchError, match="unexpected argument 'size'"):
        add[(1,)](x, y, out, 1024, BLOCK=1024, size=3)
    with pytest.raises(tile.LaunchError, match="missing constexpr"):
        add[(1,)](x, y, out, 1024)
    with pytest.raises(tile.LaunchError, match="takes 5 arguments but 6 were given"):
        add[(1,)](x, y, out, 1024, 1024, 7)


def _add_default(x, y, out, n, BLOCK: tile.constexpr = 512):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    tile.store(out + offs, tile.load(x + offs, mask=offs < n) + tile.load(y + offs, mask=offs < n), mask=offs < n)


def test_parameter_defaults(driver):
    """A default (here a constexpr's) fills an argument left out, on the fast path and the
    general one, and gives the same specialization as passing it; the grid function sees it."""
    add = tile.kernel(_add_default)
    x, y, out = torch.rand(1024), torch.rand(1024), torch.empty(1024)
    add[lambda meta: (meta["n"] // meta["BLOCK"],)](x, y, out, 1024)
    default = driver.launches[-1]
    assert default["grid"] == (2, 1, 1) and default["path"] == "bare"
    add[(2,)](x, y, out, n=1024, BLOCK=512)
    assert driver.launches[-1]["launcher"] is default["launcher"]
    add[(4,)](x, y, out, 1024, BLOCK=256)
    assert driver.launches[-1]["launcher"] is not default["launcher"]
    assert add.compile(x, y, out, 1024) is default["launcher"]


def test_grids(driver):
    add = tile.kernel(_add)
    x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
    for grid, want in [((2,), (2, 1, 1)), (3, (3, 1, 1)), ((2, 3), (2, 3, 1)), ([4, 1, 2], (4, 1, 2)),
                       (lambda meta: (meta["n"] // meta["BLOCK"],), (4, 1, 1))]:
        add[grid](x, y, out, 64, BLOCK=16)
        assert driver.launches[-1]["grid"] == want
    count = len(driver.launches)
    add[(0,)](x, y, out, 64, BLOCK=16)
    add[lambda meta: (0, 1)](x, y, out, 64, BLOCK=16)
    assert len(driver.launches) == count  # an empty grid launches nothing
    with pytest.raises(tile.LaunchError, match="grid must be"):
        add[(-1,)](x, y, out, 64, BLOCK=16)
    with pytest.raises(tile.LaunchError, match="grid must be"):
        add[lambda meta: (1, 1, 1, 1)](x, y, out, 64, BLOCK=16)


def test_compile_only_launches_nothing_and_keeps_nothing(driver, monkeypatch):
    monkeypatch.setenv("TILE_COMPILE_ONLY", "1")
    add = tile.kernel(_add)
    x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
    for _ in range(2):
        add[(1,)](x, y, out, 64, BLOCK=64)
    assert driver.launches == [] and add._bound == {} and len(add._launchers) == 1


def test_driver_error_names_the_call(driver, monkeypatch):
    add = tile.kernel(_add)
    x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
    add[(1,)](x, y, out, 64, BLOCK=64)
    monkeypatch.setattr(driver, "_record", lambda *args: 1)  # CUDA_ERROR_INVALID_VALUE
    with pytest.raises(cuda_driver.CudaError, match=r"cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE \(invalid argument\)"):
        add[(1,)](x, y, out, 64, BLOCK=64)


@pytest.mark.parametrize("path", ["fast", "general"])
def test_tensor_map_parameters(driver, monkeypatch, path):
    """An sm_90a matmul whose operands come by TMA takes one tensor-map pointer per operand:
    each launch passes the pointer made for (address, rows, cols, row stride) from its own
    arguments (a: M x K, stride s_am; b: K x N, stride s_bk), made once per distinct key."""
    import matmul

    from tile.runtime.tensor_maps import TensorMap

    monkeypatch.setenv("TILE_TARGET", "sm_90a")
    made = []

    def upload(self, address, rows, cols, stride, device):
        made.append((self.entry["arg"], address, rows, cols, stride))
        return None, 0x7000 + 0x100 * len(made)

    monkeypatch.setattr(TensorMap, "_upload", upload)
    cfg = dict(BM=128, BN=256, BK=64, GROUP=8, num_warps=8, num_stages=4, ACTIVATION="gelu")
    M, N, K = 256, 512, 320
    a, b = torch.empty(M, K, dtype=torch.bfloat16), torch.empty(K, N, dtype=torch.bfloat16)
    bias, out = torch.empty(N, dtype=torch.bfloat16), torch.empty(M, N, dtype=torch.bfloat16)
    args = (a, b, bias, out, M, N, K, *a.stride(), *b.stride(), *out.stride())
    kernel = tile.kernel(matmul.matmul_kernel.fn)  # its own launchers, loaded by this test's fake driver
    launch_it = kernel[(8,)] if path == "fast" else kernel._generic((8,))
    for _ in range(2):
        launch_it(*args, **cfg)
    assert made == [(0, a.data_ptr(), M, K, K), (1, b.data_ptr(), K, N, N)]  # the second launch: no new map
    first, second = driver.launches[-2:]
    abi = first["launcher"].abi
    tma = [j for j, (_, part, _, _) in enumerate(abi) if part == "tma"]
    assert [first["params"][j] for j in tma] == [second["params"][j] for j in tma] == [0x7100, 0x7200]
    assert tma == [len(abi) - 2, len(abi) - 1]


def test_encode_tensor_map_arguments(monkeypatch):
    """cuTensorMapEncodeTiled gets dims innermost first, the row stride in bytes, the box,
    unit element strides and the swizzle's enum; the 128-byte map comes back."""
    seen = {}

    class Lib:
        def cuTensorMapEncodeTiled(self, out, dtype, rank, address, dims, strides, box, estrides, interleave, swizzle,
                                   l2, oob):
            seen.update(dtype=dtype, rank=rank, address=address.value, dims=list(dims[:rank]), strides=[strides[0]],
                        box=list(box[:rank]), estrides=list(estrides[:rank]), swizzle=swizzle, oob=oob)
            assert out.value % 64 == 0
            ctypes.memset(out.value, 7, 128)
            return 0

    monkeypatch.setattr(cuda_driver, "_init", lambda: Lib())
    data = cuda_driver.encode_tensor_map("bf16", 0x10000, [320, 256], [640], [64, 128], 128)
    assert data == bytes([7]) * 128
    assert seen == dict(dtype=9, rank=2, address=0x10000, dims=[320, 256], strides=[640], box=[64, 128],
                        estrides=[1, 1], swizzle=3, oob=0)


def test_tensor_map_error_names_the_argument(monkeypatch):
    """A tensor map the driver refuses is an error naming the argument and the block view."""
    from tile.runtime.tensor_maps import TensorMap

    def refuse(*args):
        raise cuda_driver.CudaError("cuTensorMapEncodeTiled failed: CUDA_ERROR_INVALID_VALUE (invalid argument)")

    monkeypatch.setattr(cuda_driver, "encode_tensor_map", refuse)
    entry = {"arg": 1, "part": "tma", "type": "ptr", "dtype": "bf16", "elem_bytes": 2, "rows": ["arg", 6],
             "cols": ["const", 64], "stride": ["arg", 9], "box": [64, 64], "swizzle": 128}
    m = TensorMap(entry, ["a", "b"])
    assert m.sizes([0] * 6 + [300, 0, 0, 520]) == (300, 64, 520)
    with pytest.raises(cuda_driver.CudaError, match=r"argument 'b': no TMA descriptor for a 300 x 64 block view"):
        m(0x1002, 300, 64, 520)


@pytest.mark.parametrize("static, opts_in", [(0, False), (2048, True)])
def test_shared_memory_opt_in_counts_static(driver, static, opts_in):
    """48 KB of dynamic shared memory launches as it is, unless static shared memory (a TMA
    kernel's mbarriers) takes the block past 48 KB: then it opts in (cuFuncSetAttribute)."""
    from tile.runtime.cuda_launcher import CudaLauncher

    driver.static_shared = static
    launcher = CudaLauncher({"name": "k", "num_threads": 128, "abi": [], "args": [], "shared_bytes": 48 * 1024}, b"")
    driver._loading = launcher
    launcher.function()
    assert getattr(driver, "opted_in", None) == ((cuda_driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 48 * 1024)
                                                 if opts_in else None)


@pytest.mark.parametrize("lost", [False, True])
@pytest.mark.parametrize("path", ["fast", "general"])
def test_thread_without_a_context_adopts_the_primary_one(driver, monkeypatch, path, lost):
    """torch's autograd runs a backward on a worker thread where no context is current yet:
    before its first launch there, the device's primary context is made current on it, as the
    CUDA runtime would (so that cuLaunchKernel never fails with CUDA_ERROR_INVALID_CONTEXT,
    which compute-sanitizer reports); a context gone later (`lost`) is adopted on that error."""
    record = driver._record
    state = {"context": None, "refused": 0}

    def launch_needing_a_context(*args):
        if state["context"] is None:
            state["refused"] += 1
            return cuda_launcher.CUDA_ERROR_INVALID_CONTEXT
        return record(*args)

    monkeypatch.setattr(driver, "_record", launch_needing_a_context)
    monkeypatch.setattr(cuda_driver, "current_context", lambda: state["context"])
    monkeypatch.setattr(cuda_driver, "primary_context", lambda ordinal: 0xC0 + ordinal)
    monkeypatch.setattr(cuda_driver, "set_context", lambda ctx: state.update(context=ctx))
    monkeypatch.setattr(cuda_launcher, "_thread", threading.local())  # (a new thread)
    if lost:
        cuda_launcher._thread.ready = True
    add = tile.kernel(_add)
    x, y, out = torch.rand(64), torch.rand(64), torch.empty(64)
    launch_it = add[(1,)] if path == "fast" else add._generic((1,))
    launch_it(x, y, out, 64, BLOCK=64)
    assert state == {"context": 0xC0, "refused": int(lost)} and len(driver.launches) == 1
    launch_it(x, y, out, 64, BLOCK=64)  # (the context stays current on this thread)
    assert state["refused"] == int(lost) and len(driver.launches) == 2
