"""The kernel language: the names a `@tile.kernel` body may call.

These are stubs on the host: calling one outside a kernel raises. Inside a
kernel the frontend resolves a call to one of these objects (however it was
imported) and emits its IR; `frontend/builtins.py` holds the emitters, keyed
by these functions.
"""

from __future__ import annotations

from .dtypes import (bfloat16, float8e4m3, float8e4nv, float8e5, float8e5m2, float16, float32, float64, int1, int8,  # noqa: F401
                     int16, int32, int64, pointer_type, uint8, uint16, uint32, uint64)
from .constexpr import constexpr  # noqa: F401
from .errors import TileError

import enum as _enum

# The most elements a tile may hold in Triton (`tl.TRITON_MAX_TENSOR_NUMEL`), for kernels that
# size their blocks by it.
TRITON_MAX_TENSOR_NUMEL = 1048576


class PropagateNan(_enum.IntEnum):
    """Triton's `tl.PropagateNan`, the `propagate_nan=` of `maximum`, `minimum` and `clamp`:
    NONE, a NaN loses to a number (`maxnumf`); ALL, a NaN wins (`maximumf`)."""

    NONE = 0
    ALL = 0xFFFF


def _builtin(fn):
    def stub(*args, **kwargs):
        raise TileError(f"tile.{fn.__name__} can only be called inside a @tile.kernel or @tile.func")

    stub.__name__, stub.__doc__, stub.__qualname__ = fn.__name__, fn.__doc__, fn.__name__
    stub.tile_builtin = fn.__name__
    return stub


@_builtin
def program_id(axis):
    """Index of this program along grid axis 0, 1 or 2 (an i32 scalar)."""


@_builtin
def num_programs(axis):
    """Number of programs along grid axis 0, 1 or 2."""


@_builtin
def arange(start, end):
    """The 1-D tile start, ..., end - 1 (i32); end - start is a power of two."""


@_builtin
def zeros(shape, dtype):
    """A tile of zeros."""


@_builtin
def full(shape, value, dtype):
    """A tile filled with `value`."""


@_builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="", eviction_policy="",
         volatile=False):
    """Triton form: read `tensor + offsets` where `mask` holds, `other` (default 0) elsewhere; or
    the block of a block pointer (`make_block_ptr`), zero ("nan": NaN) outside the tensor along
    the dims in `boundary_check`. On a GPU: `cache_modifier` ".ca", ".cg", ".cs", ".cv";
    `eviction_policy` "evict_first", "evict_last", "evict_normal"; `volatile` reads memory every
    time (`ld.volatile`)."""


@_builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy="", volatile=False):
    """Triton form: write `value` to `tensor + offsets` where `mask` holds; or to the block of a
    block pointer, the elements outside the tensor along the dims in `boundary_check` skipped
    (`cache_modifier` ".wb", ".cg", ".cs", ".wt" and the load's other options, on a GPU)."""


@_builtin
def join(a, b):
    """a and b stacked along a new last dim of size 2 (Triton's `tl.join`)."""


@_builtin
def split(x):
    """The two halves of x along its last dim, which must be 2 (Triton's `tl.split`)."""


@_builtin
def interleave(a, b):
    """a and b alternating along their last dim (Triton's `tl.interleave`)."""


@_builtin
def to_tensor(x):
    """A number (or constexpr) as a run-time scalar of Triton's type for it: bool int1; int
    int32, uint32, int64 or uint64, the first that holds it; float float32 (float64 past its
    range, and for float32's subnormals). A run-time value is returned as it is."""


@_builtin
def expect_zero(x, mask):
    """x, where asserts are on (as `device_assert`) checked to be 0 wherever `mask` holds:
    Triton's mark of values expected to have underflowed to zero."""


class tensor_descriptor:
    """Triton's `tl.tensor_descriptor`, for `isinstance(d, tile.tensor_descriptor)` in a kernel:
    what `make_tensor_descriptor` makes, or a `tile.TensorDescriptor` argument."""


@_builtin
def load_tensor_descriptor(desc, offsets):
    """`desc.load(offsets)` (Triton's function spelling)."""


@_builtin
def store_tensor_descriptor(desc, offsets, value):
    """`desc.store(offsets, value)` (Triton's function spelling)."""


@_builtin
def add(x, y, sanitize_overflow=True):
    """x + y (Triton's function spelling; integer overflow wraps, as `+` does)."""


@_builtin
def sub(x, y, sanitize_overflow=True):
    """x - y (Triton's function spelling)."""


@_builtin
def mul(x, y, sanitize_overflow=True):
    """x * y (Triton's function spelling)."""


@_builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    """A descriptor of `base` (a tensor, plus a scalar offset) seen as a tensor of `shape` and
    `strides` (the last 1), read and written in blocks of `block_shape` (powers of two):
    `desc.load([o0, o1])`, `desc.store([o0, o1], value)`; out of bounds reads zero ("nan": NaN)
    and is not written. `desc.shape`, `desc.strides`, `desc.block_shape`, `desc.dtype`."""


@_builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order=None):
    """A block pointer: the `block_shape` block at `offsets` of `base` seen as a tensor of `shape`
    and `strides`; `load`/`store` it (with `boundary_check`), move it with `advance`."""


@_builtin
def advance(base, offsets):
    """The block pointer `base` moved by `offsets` (one per dim)."""


@_builtin
def atomic_add(pointer, val, mask=None, sem=None, scope=None):
    """Triton form: add `val` to `tensor + offsets` atomically where `mask` holds (float32,
    float64, int32, int64; float16 and bfloat16 on sm_90), each element once; returns the old
    values (0 where the mask is false). `sem`: "acq_rel" (default), "acquire", "release",
    "relaxed"; `scope`: "gpu" (default), "cta", "sys"."""


@_builtin
def atomic_max(pointer, val, mask=None, sem=None, scope=None):
    """As `atomic_add`, keeping the larger value (int32, int64, float32, float64); returns the old values."""


@_builtin
def atomic_min(pointer, val, mask=None, sem=None, scope=None):
    """As `atomic_add`, keeping the smaller value (int32, int64, float32, float64); returns the old values."""


@_builtin
def atomic_and(pointer, val, mask=None, sem=None, scope=None):
    """As `atomic_add`, a bitwise and (int32, int64); returns the old values."""


@_builtin
def atomic_or(pointer, val, mask=None, sem=None, scope=None):
    """As `atomic_add`, a bitwise or (int32, int64); returns the old values."""


@_builtin
def atomic_xor(pointer, val, mask=None, sem=None, scope=None):
    """As `atomic_add`, a bitwise xor (int32, int64); returns the old values."""


@_builtin
def atomic_xchg(pointer, val, mask=None, sem=None, scope=None):
    """As `atomic_add`, writing `val` (int32, int64, float32, float64); returns the old values."""


@_builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    """Compare and swap: where `tensor + offsets` holds `cmp`, write `val` there, atomically
    (int32, int64, float32, float64; compared bit for bit); returns the old values.
    `while tile.atomic_cas(lock, 0, 1) == 1: pass` takes a spin lock."""


@_builtin
def atomic_load(pointer, mask=None, sem=None, scope=None):
    """Read `pointer` atomically (Triton's): `sem` "acquire" (the default) or "relaxed", `scope` as
    `atomic_add`'s (int32, int64, float32, float64, float16, bfloat16); 0 where the mask is false."""


@_builtin
def atomic_store(pointer, val, mask=None, sem=None, scope=None):
    """Write `val` atomically (Triton's): `sem` "release" (the default) or "relaxed", each element once."""


@_builtin
def debug_barrier():
    """Every thread of the program waits until all reach it (`bar.sync 0` on a GPU; nothing on
    the CPU, where a program runs as one thread)."""


@_builtin
def load_tile(tensor, index, shape, padding=0):
    """Structured form: tile number `index` (one per dim) of shape `shape`; out of bounds reads `padding`."""


@_builtin
def store_tile(tensor, index, value):
    """Structured form: write `value` as tile number `index`; out of bounds is skipped."""


@_builtin
def where(condition, x, y):
    """Elementwise `x if condition else y`, broadcasting."""


@_builtin
def trans(x, *dims):
    """Permute a tile's dims (result dim k is dim dims[k]); without dims, transpose a 2-D
    tile. `x.T` is `trans(x)`."""


@_builtin
def permute(x, *dims):
    """Permute a tile's dims: result dim k is dim dims[k] of x (torch's permute)."""


@_builtin
def static_assert(condition, message=""):
    """A compile-time check: compilation fails with `message` where `condition` (of
    constexprs and shapes) is false."""


@_builtin
def device_print(prefix, *values):
    """Print each element of each value (a tile or a scalar) with its program id and index
    when the kernel runs: `pid (0, 0, 0) idx (3) x: 0.250000` (Triton's `device_print`)."""


@_builtin
def device_assert(cond, msg="", mask=None):
    """Check `cond` in every element (where `mask` holds) when the kernel runs: on the CPU
    target a failure raises `tile.DeviceAssertionError` after the launch; on a GPU it is
    checked with TILE_DEBUG=1 (or `@tile.jit(debug=True)`), as Triton's with TRITON_DEBUG."""


@_builtin
def static_print(*values):
    """Print compile-time values (a tile: its shape and dtype) when the kernel compiles."""


@_builtin
def randint(seed, offset, n_rounds=10):
    """A random uint32 per offset: the first output of Philox 4x32 (n_rounds rounds) for the
    counter (offset's low and high 32 bits, 0, 0) and the key (seed's low and high 32 bits), as Triton's."""


@_builtin
def rand(seed, offset, n_rounds=10):
    """A uniform float32 in [0, 1) per offset, from `randint` (Triton's `rand`)."""


@_builtin
def randn(seed, offset, n_rounds=10):
    """A standard normal float32 per offset (Box-Muller on two Philox outputs, Triton's `randn`)."""


@_builtin
def randint4x(seed, offset, n_rounds=10):
    """The four uint32 outputs of Philox 4x32 per offset (`randint` is the first), as Triton's."""


@_builtin
def rand4x(seed, offsets, n_rounds=10):
    """Four uniform float32 tiles in [0, 1) per offset, from `randint4x` (Triton's)."""


@_builtin
def randn4x(seed, offset, n_rounds=10):
    """Four standard normal float32 tiles per offset, from `rand4x` (Triton's)."""


@_builtin
def philox(seed, c0, c1, c2, c3, n_rounds=10):
    """Philox on the counter (c0, c1, c2, c3), all 32-bit (4x32) or all 64-bit (4x64) ints, keyed
    by the seed: four uint32 (uint64) tiles, as Triton's."""


@_builtin
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds=10):
    """n_rounds rounds of Philox on the counter (c0, .., c3) and key (k0, k1), uint32 or uint64."""


@_builtin
def uint_to_uniform_float(x):
    """A random 32- or 64-bit int to a float32 in [0, 1) (Triton's)."""


@_builtin
def pair_uniform_to_normal(u1, u2):
    """Two standard normals from two uniforms in [0, 1) (Box-Muller, Triton's)."""


@_builtin
def inline_asm_elementwise(asm, constraints, args, dtype, is_pure, pack):
    """PTX `asm` on every `pack` elements of the broadcast `args` (Triton's): one tile of each
    `dtype` (a tuple of them for a tuple); operands numbered outputs first, with LLVM's
    `constraints`; elements narrower than 32 bits packed into 32-bit registers. GPU targets only."""


@_builtin
def clamp(x, min, max, propagate_nan=None):
    """minimum(maximum(x, min), max); a NaN in x stays NaN (with `propagate_nan=PropagateNan.NONE`
    it gives min)."""


@_builtin
def fma(x, y, z):
    """x * y + z, rounded once."""


@_builtin
def ravel(x):
    """The tile's elements as a 1-D tile, in row-major order."""


@_builtin
def expand_dims(x, axis):
    """x with a dim of size 1 inserted at `axis` (an int or a tuple of ints)."""


@_builtin
def zeros_like(x):
    """A tile of zeros of x's shape and dtype."""


@_builtin
def full_like(x, value):
    """A tile of `value` with x's shape and dtype."""


@_builtin
def exp(x):
    """e**x."""


@_builtin
def exp2(x):
    """2**x."""


@_builtin
def log(x):
    """Natural logarithm."""


@_builtin
def log2(x):
    """Base-2 logarithm."""


@_builtin
def sin(x):
    """Sine (radians)."""


@_builtin
def cos(x):
    """Cosine (radians)."""


@_builtin
def erf(x):
    """The error function."""


@_builtin
def floor(x):
    """Largest integral value not above x (an integer tile is returned as it is)."""


@_builtin
def ceil(x):
    """Smallest integral value not below x (an integer tile is returned as it is)."""


@_builtin
def sqrt(x):
    """Square root."""


@_builtin
def rsqrt(x):
    """1 / sqrt(x)."""


@_builtin
def abs(x):
    """Absolute value."""


@_builtin
def sigmoid(x):
    """1 / (1 + exp(-x))."""


@_builtin
def tanh(x):
    """Hyperbolic tangent."""


@_builtin
def maximum(x, y, propagate_nan=None):
    """Elementwise maximum: NaN-propagating, like torch, unless `propagate_nan=PropagateNan.NONE`
    (a NaN then loses to a number; Triton's default)."""


@_builtin
def minimum(x, y, propagate_nan=None):
    """Elementwise minimum: NaN-propagating, like torch, unless `propagate_nan=PropagateNan.NONE`."""


@_builtin
def sum(x, axis=None, keep_dims=False, dtype=None):
    """Sum along `axis` (None: every dim, a scalar); `keep_dims` keeps the reduced dims as 1;
    `dtype` (Triton's) the dtype it accumulates in and returns."""


@_builtin
def max(x, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Maximum along `axis` (None: every dim); with `return_indices`, (maximum, its index) as
    `argmax` gives it (Triton's signature: `keep_dims` comes fifth)."""


@_builtin
def min(x, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    """Minimum along `axis` (None: every dim); with `return_indices`, (minimum, its index)."""


@_builtin
def argmax(x, axis, tie_break_left=True, keep_dims=False):
    """Index (int32) of the maximum along `axis`: the first one (the last with
    tie_break_left=False); a NaN counts as the maximum, as in torch."""


@_builtin
def argmin(x, axis, tie_break_left=True, keep_dims=False):
    """Index (int32) of the minimum along `axis`; a NaN counts as the minimum, as in torch."""


@_builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    """The inclusive scan of a tile (or a tuple of tiles of one shape) along `axis`:
    out[i] = combine_fn(out[i - 1], x[i]), from the last element with `reverse`. combine_fn
    is a @tile.jit function of 2n scalars (the accumulated values, then the next ones)
    returning n; it must be associative."""


@_builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    """Cumulative sum along `axis`, in `dtype` if given, else int32 for narrower ints, else x's dtype."""


@_builtin
def cumprod(input, axis=0, reverse=False, dtype=None):
    """Cumulative product along `axis`, in the dtype cumsum picks."""


@_builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    """Reduce a tile (or a tuple of tiles of one shape: a tuple back) along `axis` (None: every
    dim) by combine_fn, a @tile.jit function of 2n scalars returning n, associative and
    commutative (as Triton's, the order it combines in is the target's)."""


@_builtin
def xor_sum(input, axis=None, keep_dims=False):
    """Bitwise xor of an integer tile's elements along `axis` (None: every dim)."""


@_builtin
def reduce_or(input, axis=None, keep_dims=False):
    """Bitwise or of an integer tile's elements along `axis` (None: every dim)."""


@_builtin
def reshape(x, shape):
    """The same elements with another static shape."""


@_builtin
def broadcast_to(x, shape):
    """Broadcast a tile to `shape`."""


@_builtin
def gather(src, index, axis):
    """Elements of `src` picked along `axis` by `index` (same rank; other dims equal):
    out[i, j] = src[index[i, j], j] for axis 0. A permutation inside a tile, as when a
    tile loaded in the source's order is stored in another (on a GPU, through shared
    memory). An index is taken modulo src's extent along `axis` (one outside it reads
    some element of the tile, never other memory)."""


@_builtin
def cast(x, dtype, fp_downcast_rounding=None, bitcast=False):
    """Convert to `dtype` (also written `x.to(dtype)` and `x.cast(dtype)`); with
    `bitcast=True`, the same bits read as `dtype`, of the same width."""


@_builtin
def dot(a, b, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None, out_dtype=None):
    """(M, K) @ (K, N) + acc, accumulated in f32 (out_dtype float32). f32 operands are multiplied
    exactly ("ieee") or rounded to tf32 first ("tf32"), which puts them on the tensor cores of a
    GPU; without input_precision (or allow_tf32), Triton's default: tf32 on a GPU, exact on the CPU. 16-bit operands are exact either way (as in
    Triton, the precision is then ignored). float8 operands (e4m3, e5m2, one of each) go to
    sm_90a's float8 wgmma, elsewhere widened to f16 exactly. f16 and float8 operands take an
    f16 accumulator too (out_dtype=float16). int8 operands accumulate in int32, exactly
    (out_dtype int32; no acc: an int32 result): int8 wgmma or mma.sync on a GPU."""


@_builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False, lhs_k_pack=True,
               rhs_k_pack=True, out_dtype=None):
    """Triton's dot of microscaled blocks: lhs (M, K) and rhs (K, N) in lhs_format / rhs_format
    ("e4m3", "e5m2"; "bf16", "fp16" unscaled), each scaled by e8m0 bytes (uint8: 2^(s - 127)),
    lhs_scale (M, K/32) and rhs_scale (N, K/32), one per 32 elements of K; emulated (scaled to
    bf16, then a 16-bit dot). fp4 ("e2m1") is an error: the hardware lacks fp4."""


@_builtin
def multiple_of(x, values):
    """x, which the compiler may take to be a multiple of `values` (runs of a tile start at one)."""


@_builtin
def max_contiguous(x, values):
    """x, which the compiler may take to be made of runs of `values` consecutive integers."""


@_builtin
def max_constancy(x, values):
    """x, which the compiler may take to be made of runs of `values` equal integers."""


@_builtin
def assume(cond):
    """A boolean the compiler may take to hold (accepted; not used yet)."""


@_builtin
def sort(x, dim=None, descending=False):
    """x sorted along its last dim (`dim` None or the last), ascending or descending: Triton's
    bitonic network. Pad a masked load with `other=float("inf")` (or `-inf` descending) so
    that the padding sorts last."""


@_builtin
def topk(x, k, dim=None, descending=True):
    """The k largest (descending=False: smallest) elements of x's last dim, in order; k is a
    power of two."""


@_builtin
def bitonic_merge(x, dim=None, descending=False):
    """x's last dim, a bitonic sequence (rising then falling, or the reverse), sorted."""


@_builtin
def flip(x, dim=None):
    """x reversed along `dim` (default the last)."""


@_builtin
def histogram(input, num_bins, mask=None):
    """int32 counts of the values 0 .. num_bins - 1 in a 1-D int32 tile (values elsewhere, and
    where `mask` is false, are not counted); exact however many elements share a bin."""


@_builtin
def cat(input, other, can_reorder=False, dim=0):
    """Two tiles of one shape one after the other along `dim` (default 0)."""


@_builtin
def broadcast(input, other):
    """Both operands broadcast to their common shape (a pair)."""


@_builtin
def view(input, *shape):
    """Triton's deprecated `view`: `reshape` (here the order is kept)."""


@_builtin
def squeeze(x, dim):
    """x without its dim `dim`, which has size 1."""


@_builtin
def unsqueeze(x, dim):
    """x with a dim of size 1 inserted at `dim` (as `expand_dims`)."""


@_builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """(i, j) of a row-major size_i x size_j grid renumbered column-major in groups of size_g
    rows: the grouped program order of Triton's matmul tutorial."""


@_builtin
def softmax(x, dim=None, keep_dims=None, ieee_rounding=False):
    """exp(x - max) / sum along `dim` (default 0, as Triton's: not torch's last dim)."""


def cdiv(a, b):
    """Ceiling division of integers: (a + b - 1) // b; works on the host too."""
    return -(-a // b)


cdiv.tile_builtin = "cdiv"


@_builtin
def static_range(*args):
    """Like `range`, but unrolled at compile time; bounds must be constexpr."""


BUILTINS = {name: obj for name, obj in list(globals().items()) if getattr(obj, "tile_builtin", None)}


@_builtin
def range(*args, num_stages=None, loop_unroll_factor=None, disallow_acc_multi_buffer=False, flatten=False,
          warp_specialize=False):
    """A run-time loop, as `range`, with its own software-pipelining depth: with
    `num_stages` (a compile-time int), `tile-pipeline` runs this loop's tile loads
    that many stages ahead through shared-memory rings, whatever reads them (the
    kernel's `num_stages` applies only to loops that hold a `dot`); 1 turns it off.
    `warp_specialize=True` has `tile-warp-specialize` split the loop into a producer
    warpgroup issuing its TMA copies and the kernel's warps computing (sm_90a; elsewhere, or
    where it cannot, a `WarpSpecializeWarning` says why). Triton's other keywords
    (`loop_unroll_factor`, `disallow_acc_multi_buffer`, `flatten`) are checked and accepted:
    the loop runs the same without them."""
