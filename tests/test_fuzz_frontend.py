"""Frontend inputs a fuzzer found that answered wrong, escaped as Python's own errors or
were refused though a Triton user would write them: the Python subset a kernel may use,
the names it reads from outside (globals, closures, modules) and the errors for the
rest. Each now runs right on the CPU target or raises a `tile.TileError` at its line."""

import types

import pytest
import torch

import tile

SCALE = 2.0


@tile.kernel
def scale_kernel(x, out, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, tile.load(x + o) * SCALE)


def test_global_constant_reassigned(monkeypatch):
    """A global's value was not in the cache keys: reassigning it (in this process, or
    in the next one through the disk cache) ran the kernel compiled for the old one."""
    x, out = torch.rand(8), torch.zeros(8)
    for scale in (2.0, 3.0, float("nan"), 3.0):
        monkeypatch.setitem(globals(), "SCALE", scale)
        scale_kernel[(1,)](x, out, B=8)
        torch.testing.assert_close(out, x * scale, equal_nan=True)
    monkeypatch.setitem(globals(), "SCALE", 5.0)
    tile.Kernel(scale_kernel.fn)[(1,)](x, out, B=8)  # empty in-memory caches: the disk's key
    torch.testing.assert_close(out, x * 5.0)


@tile.func
def double(a):
    return a * 2.0


@tile.func
def triple(a):
    return a * 3.0


lib = types.SimpleNamespace(helper=double)


@tile.kernel
def module_helper_kernel(x, out, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, lib.helper(tile.load(x + o)))


def make_closure_kernel(scale, shift):
    @tile.func
    def times(a, plus=shift):
        return a * scale + plus

    @tile.kernel
    def closure_kernel(x, out, B: tile.constexpr):
        o = tile.arange(0, B)
        tile.store(out + o, times(tile.load(x + o)))

    closure_kernel.helper = times
    return closure_kernel


def test_helpers_through_modules_and_closures(monkeypatch):
    """A helper called through a module (`lib.helper(...)`) was left out of the cache key,
    so editing it kept the old code; a kernel's or helper's closure variables were 'not
    defined'; a helper's default value (here its maker's argument) was not in the key."""
    x, out = torch.rand(8), torch.zeros(8)
    module_helper_kernel[(1,)](x, out, B=8)
    torch.testing.assert_close(out, x * 2.0)
    monkeypatch.setattr(lib, "helper", triple)
    tile.Kernel(module_helper_kernel.fn)[(1,)](x, out, B=8)
    torch.testing.assert_close(out, x * 3.0)
    for scale, shift in ((2.0, 0.0), (3.0, 0.0), (3.0, 1.0)):
        make_closure_kernel(scale, shift)[(1,)](x, out, B=8)
        torch.testing.assert_close(out, x * scale + shift)


@tile.func
def combine(a, *rest, scale=2.0, NEGATE: tile.constexpr = False):
    for i in tile.static_range(len(rest)):
        a = a + rest[i]
    if NEGATE:
        return -a * scale
    return a * scale


@tile.kernel
def helper_call_kernel(x, out, n, B: tile.constexpr):
    if tile.program_id(0) >= n:
        return
    o = tile.arange(0, B)
    v = tile.load(x + o)
    tile.store(out + o, combine(v))
    tile.store(out + (B + o), combine(v, v, 1.0, NEGATE=True, scale=3.0))
    return


@tile.kernel
def twice_bound_kernel(x, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(x + o, combine(tile.load(x + o), a=1.0))


def test_helper_parameters_and_returns():
    """A helper's defaults, keyword-only or *args parameters raised 'kernels take plain
    parameters only', an argument given twice 'missing argument', and a return under a
    constexpr `if` 'return must be the last statement'; a kernel's last `return` after
    an early one left a block without terminator (an MLIR verifier error)."""
    x, out = torch.rand(8), torch.zeros(16)
    helper_call_kernel[(2,)](x, out, 1, B=8)
    torch.testing.assert_close(out, torch.cat([x * 2.0, -(x + x + 1.0) * 3.0]))
    with pytest.raises(tile.CompilationError, match=r"combine\(\): multiple values for argument 'a'"):
        twice_bound_kernel[(1,)](x, B=8)


@tile.kernel
def optional_bias_kernel(x, out, B: tile.constexpr, BIAS: tile.constexpr = None, MODE: tile.constexpr = "add"):
    o = tile.arange(0, B)
    v = tile.load(x + o)
    if BIAS is not None:
        if MODE not in ("add",):
            v **= 2
        v += BIAS
    tile.store(out + o, v)


@tile.kernel
def f_string_kernel(x, B: tile.constexpr):
    name = f"block {B}"  # noqa: F841


def test_python_comparisons_power_and_f_strings():
    """`BIAS is not None` read as `is` and raised 'unsupported comparison' (`in` too); `v **= 2`
    raised 'operator ** is not defined' though `v ** 2` worked; an f-string escaped as
    ast's 'ValueError: malformed node or string'."""
    x, out = torch.rand(8), torch.zeros(8)
    for meta, want in (({}, x), ({"BIAS": 1.0}, x + 1.0), ({"BIAS": 1.0, "MODE": "square"}, x * x + 1.0)):
        optional_bias_kernel[(1,)](x, out, B=8, **meta)
        torch.testing.assert_close(out, want)
    with pytest.raises(tile.CompilationError, match="unsupported Python construct: f-strings"):
        f_string_kernel[(1,)](x, B=8)


async def async_kernel(x):
    tile.store(x, 1.0)


def star_kernel(x, *rest):
    tile.store(x, 1.0)


@pytest.mark.parametrize("decorate, match", [
    (lambda: tile.kernel(lambda x: tile.store(x, 1.0)), "@tile.kernel takes a function defined with `def`, got a lambda"),
    (lambda: tile.func(lambda a: a), "@tile.func takes a function defined with `def`, got a lambda"),
    (lambda: tile.kernel(async_kernel), "got an async function"),
    (lambda: tile.kernel(scale_kernel), "got <tile.kernel scale_kernel>"),
    (lambda: tile.func(double), "got <tile.func double>"),
    (lambda: tile.kernel(star_kernel), r"parameters must be named, one each \(not \*rest\)"),
    (lambda: double[(1,)], "@tile.func double is inlined into the kernels that call it"),
])
def test_what_the_decorators_take(decorate, match):
    """A lambda or an async function raised StopIteration (no `def` line to point at), a
    kernel or helper decorated twice or a staticmethod AttributeError or TypeError, a
    kernel's *args 'missing argument(s): args', and a helper launched with a grid
    'not subscriptable'."""
    with pytest.raises(tile.TileError, match=match):
        decorate()


def test_kernel_over_a_staticmethod():
    """(its source and globals are its function's: parsing the staticmethod raised TypeError)"""
    assert tile.kernel(staticmethod(scale_kernel.fn)).fn is scale_kernel.fn


@tile.kernel
def branches_kernel(x, out, n, B: tile.constexpr):
    o = tile.arange(0, B)
    scale, shift, src = 1.0, 0, x
    if n > 2:
        scale = 2.0
        src = x + B
        y = tile.load(src + o)
    else:
        shift = 3
        y = tile.load(src + o) * 10.0
    tile.store(out + o, y * scale + shift)


@tile.kernel
def walked_pointer_kernel(x, out, n, B: tile.constexpr):
    o = tile.arange(0, B)
    p, acc = x, tile.zeros((B,), tile.float32)
    for i in range(n):
        acc += tile.load(p + o)
        p = p + B
    tile.store(out + o, acc)


@tile.kernel
def tuple_in_loop_kernel(out, n, B: tile.constexpr):
    pair = (tile.zeros((B,), tile.float32), 1.0)
    for i in range(n):
        pair = (pair[0] + 1.0, 2.0)
    tile.store(out + tile.arange(0, B), pair[0])


@tile.kernel
def dtype_in_if_kernel(x, n, B: tile.constexpr):
    dt = tile.float32
    if n > 2:
        dt = tile.float16
    tile.store(x + tile.arange(0, B), tile.zeros((B,), dt))


@tile.kernel
def unrolled_kernel(x, N: tile.constexpr):
    for i in tile.static_range(N):
        pass


def test_values_through_run_time_control_flow():
    """A Python number or a tensor argument reassigned under a run-time if (or a tensor
    argument walked as a pointer through a loop) kept its first value: silently wrong
    answers; a name assigned in both branches was 'not defined' after the if; a tuple
    reassigned in a loop stayed as it was; static_range(10**9) never ended."""
    x, out = torch.rand(16), torch.zeros(8)
    for n, want in ((3, x[8:] * 2.0), (0, x[:8] * 10.0 + 3)):
        branches_kernel[(1,)](x, out, n, B=8)
        torch.testing.assert_close(out, want)
    walked_pointer_kernel[(1,)](x, out, 2, B=8)
    torch.testing.assert_close(out, x[:8] + x[8:])
    with pytest.raises(tile.CompilationError, match="'pair' holds a compile-time tuple but is reassigned inside a run-time loop"):
        tuple_in_loop_kernel[(1,)](out, 2, B=8)
    with pytest.raises(tile.CompilationError, match="'dt' is the compile-time value tile.float16 or the compile-time value tile.float32 depending"):
        dtype_in_if_kernel[(1,)](out, 3, B=8)
    with pytest.raises(tile.CompilationError, match="static_range unrolls 1000000000 iterations, more than 4096"):
        unrolled_kernel[(1,)](out, N=10**9)


@tile.kernel
def folded_division_kernel(out, n, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, o * 0 + (n - 2) // 2 + (n - 4) % 3)


def test_folded_integer_division_truncates():
    """An int argument equal to 1 is folded to a Python 1, whose // and % floored where the
    run-time value's truncate: n=1 gave (1-2)//2 + (1-4)%3 == -1, not 0 (as n=3 gives -1,
    truncating)."""
    out = torch.zeros(4, dtype=torch.int32)
    for n, want in ((1, 0), (3, -1), (-7, -4 + -2)):
        folded_division_kernel[(1,)](out, n, B=4)
        assert out.tolist() == [want] * 4


@tile.kernel
def short_circuit_kernel(x, out, n, B: tile.constexpr, BIAS: tile.constexpr = None, WIDTH: tile.constexpr = None):
    o = tile.arange(0, WIDTH or B)
    v = tile.load(x + o)
    if BIAS is not None and BIAS > 0:
        v += BIAS
    m = True and (o < n) and True
    tile.store(out + o, tile.where(m, v, 0.0) + (tile.load(n + o) if BIAS is not None and BIAS < 0 else 0.0))


@tile.kernel
def invert_float_kernel(x, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(x + o, ~tile.load(x + o))


def test_short_circuits():
    """`and` and `or` evaluated every operand (`BIAS is not None and BIAS > 0` raised
    'compile-time > failed' for BIAS=None) and folded to a bool (`WIDTH or B` gave True);
    a compile-time conditional expression evaluated the branch not taken (a load through
    an int); ~ on a float tile said 'operator ^ is not defined'."""
    x, out = torch.rand(8), torch.zeros(8)
    short_circuit_kernel[(1,)](x, out, 6, B=8)
    torch.testing.assert_close(out, torch.where(torch.arange(8) < 6, x, 0.0))
    out.zero_()
    short_circuit_kernel[(1,)](x, out, 6, B=8, BIAS=1.0, WIDTH=4)
    torch.testing.assert_close(out, torch.cat([x[:4] + 1.0, torch.zeros(4)]))
    with pytest.raises(tile.CompilationError, match="~ needs an integer or bool operand, got tile.float32"):
        invert_float_kernel[(1,)](x, B=8)


@tile.kernel
def literals_kernel(x, out, B: tile.constexpr):
    ...
    o = tile.arange(0, B)
    t = (1.0, 2.0, 4.0)
    tile.store(out + o, tile.load(x + o) + len("ab" "cd") + t[1:][0] + t[::2][1])


@tile.kernel
def huge_fold_kernel(out, E: tile.constexpr):
    tile.store(out, 10 ** E)


def test_literals_and_compile_time_sizes():
    """A `...` statement, "ab" "cd" and a slice of a constant tuple were 'unsupported';
    10 ** 10 ** 8 folded at compile time never finished."""
    x, out = torch.rand(8), torch.zeros(8)
    literals_kernel[(1,)](x, out, B=8)
    torch.testing.assert_close(out, x + 4 + 2.0 + 4.0)
    with pytest.raises(tile.CompilationError, match=r"compile-time \*\* failed: the result would have more than 4096 bits"):
        huge_fold_kernel[(1,)](out, E=10**8)


@tile.kernel
def bitcast_kernel(x, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(x + o, tile.load(x + o).to(tile.int32, saturate=True))


def test_bad_arguments_name_the_call():
    """A bad keyword to a tile method escaped as 'TypeError: tile_method.<locals>.<lambda>()
    got an unexpected keyword argument' at the statement, naming the compiler's function."""
    with pytest.raises(tile.CompilationError, match=r":\d+:23: bad arguments to \.to\(\): got an unexpected keyword "
                                                    r"argument 'saturate'"):
        bitcast_kernel[(1,)](torch.zeros(8), B=8)


@tile.kernel
def run_time_step_kernel(out, a, b, s, B: tile.constexpr):
    acc = tile.zeros((B,), tile.int32)
    for i in range(a, b, s):
        acc = acc * 3 + i
    tile.store(out + tile.arange(0, B), acc)


@tile.kernel
def float_bound_kernel(out, f, B: tile.constexpr):
    for i in range(0, f):
        tile.store(out + tile.arange(0, B), 1.0)


def test_range_with_a_run_time_step():
    """A run-time step went to scf.for as it was: a negative one counted up for 2**24
    iterations (Python's range runs none, or counts down), a zero one never ended; a float
    bound was truncated to an int, a tile one failed MLIR's verifier."""
    out = torch.zeros(4, dtype=torch.int32)
    for a, b, s in ((0, 10, 3), (10, 0, -3), (0, 10, -1), (7, -8, -5), (0, 10, 0)):
        run_time_step_kernel[(1,)](out, a, b, s, B=4)
        want = 0
        for i in range(a, b, s) if s else ():
            want = want * 3 + i
        assert out.tolist() == [want] * 4, (a, b, s)
    with pytest.raises(tile.CompilationError, match="range's bounds must be ints or int scalars, got a scalar of tile.float32"):
        float_bound_kernel[(1,)](torch.zeros(4), 2.5, B=4)


@tile.kernel
def assert_kernel(x, n, B: tile.constexpr):
    assert B % 4 == 0, "B must be a multiple of 4"
    assert B > 0
    tile.store(x + tile.arange(0, B), 1.0)


@tile.kernel
def run_time_assert_kernel(x, n, B: tile.constexpr):
    assert n > 0


def test_asserts_on_constexprs():
    """assert was an 'unsupported Python construct'; on compile-time values it now checks them
    as the kernel compiles, with its message at its line; on run-time ones when the kernel runs."""
    x = torch.zeros(8)
    assert_kernel[(1,)](x, 1, B=8)
    assert x.tolist() == [1.0] * 8
    with pytest.raises(tile.CompilationError, match=r":\d+:5: assertion failed: B must be a multiple of 4"):
        assert_kernel[(1,)](x, 1, B=6)
    run_time_assert_kernel[(1,)](x, 3, B=8)  # a run-time assert is a device_assert (as Triton's)
    with pytest.raises(tile.DeviceAssertionError, match=r":367: device_assert failed in program \(0, 0, 0\)"):
        run_time_assert_kernel[(1,)](x, 0, B=8)


exec_scope = {"tile": tile}
exec("@tile.func\ndef sourceless(a):\n    return a\n", exec_scope)
sourceless = exec_scope["sourceless"]


@tile.kernel
def sourceless_helper_kernel(x, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(x + o, sourceless(tile.load(x + o)))


def test_helper_without_source():
    """A helper defined by exec escaped as OSError from the cache key; then it was an error
    without a location: it is at the line of its call."""
    with pytest.raises(tile.CompilationError, match="the source of sourceless cannot be read") as e:
        sourceless_helper_kernel[(1,)](torch.zeros(8), B=8)
    assert e.value.filename == __file__ and "sourceless(tile.load(x + o))" in e.value.source_line


@tile.kernel
def constexpr_helper_kernel(x, out, ACT: tile.constexpr, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, ACT(tile.load(x + o)))


@tile.kernel
def first_helper_kernel(x, out, ACTS: tile.constexpr, B: tile.constexpr):
    o = tile.arange(0, B)
    tile.store(out + o, ACTS[0](tile.load(x + o)))


@tile.kernel
def repeat_kernel(out, V: tile.constexpr):
    tile.store(out + tile.arange(0, 4), tile.full((4,), V * 2, tile.float32))


def test_constexpr_helpers_and_strings_in_the_keys():
    """A @tile.func passed as a constexpr (ACT=...) was keyed by its repr, `<tile.func
    times>`: another helper of that name ran the first one's code (in a tuple too); a str constexpr "1"
    was keyed as the int 1 in memory (str(), not repr())."""
    x, out = torch.rand(8), torch.zeros(8)
    for scale in (2.0, 3.0):
        helper = make_closure_kernel(scale, 0.0).helper
        constexpr_helper_kernel[(1,)](x, out, helper, B=8)
        torch.testing.assert_close(out, x * scale)
        first_helper_kernel[(1,)](x, out, (helper,), B=8)
        torch.testing.assert_close(out, x * scale)
    for v, want in ((1, 2.0), ("1", 11.0)):
        repeat_kernel[(1,)](out, V=v)
        assert out[:4].tolist() == [want] * 4


def test_launches_read_only_what_can_change():
    """The language's own names (tile.float32) and a kernel's defaults (in its signature
    already) were read again on every launch, as globals are: each example's did."""
    import layer_norm
    import matmul

    for k in (layer_norm.layer_norm_kernel, matmul.persistent_matmul_kernel):
        assert tile.Kernel(k.fn).captured_values() is None
    assert scale_kernel.captured_values() is not None
