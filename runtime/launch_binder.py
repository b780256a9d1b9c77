"""The fast launch path of `Kernel` (a mixin): a binder generated per kernel.

`kernel[grid]` is a cached partial of the binder, which reads each argument
once (pointer, dtype, rank, device (a meta tensor never passes for a CPU one) and alignment of a tensor; whether the tensors'
storages overlap; ==1, %16 and the int32 range of an int; class and value of a
constexpr; the options; the environment), looks the specialization's generated launch function up by what
it read, and calls it. Each guess the binder makes (this argument is a tensor,
that one an int) is checked; one that fails goes the general way
(`Kernel.run`), which raises the errors, so every launch is still right.
"""

from __future__ import annotations

import linecache
import operator
import os

from ..frontend.errors import LaunchError, TileError
from ..frontend.tensor_descriptor import is_descriptor
from .arguments import tensor_device as launch_device

OPTION_NAMES = ("num_warps", "num_stages")


def is_tensor(v) -> bool:
    return type(v).__module__.startswith("torch") and hasattr(v, "data_ptr")


def wide(t) -> bool:
    """Whether a tensor's element offsets, sizes or strides may pass int32: 2**31 elements or
    more, or a storage that holds as many (a stride past int32). Its `x.stride(d)` and
    `x.size(d)` are then int64 in the kernel (a specialization); cut to int32, they made
    the offsets wrap, and the kernel read outside the tensor. The binder's key holds
    `max(...) >> 31`, which with the dtype decides it."""
    return max(t.nbytes, t.untyped_storage().nbytes()) >> 31 >= t.element_size()


def disjoint(*tensors) -> bool:
    """No two of the tensors' storages overlap (a specialization: `noalias`). A tensor the
    kernel never writes then stays unchanged while it runs, and may be read through the
    non-coherent path. Storages, not views: two views of one buffer count as overlapping,
    which costs only that path. A storage at address 0 holds nothing: empty, or on 'meta'
    (ahead-of-time builds, compiled as the distinct tensors they stand for, unless one
    tensor is passed twice, as an in-place launch on the GPU will)."""
    if len({id(t) for t in tensors}) < len(tensors):
        return False
    end = 0
    for start, size in sorted([(s.data_ptr(), s.nbytes()) for s in [t.untyped_storage() for t in tensors]]):
        if not start:
            continue
        if start < end:
            return False
        end = start + size
    return True


class FastLaunch:
    def _unbound(self, gx, gy, gz, grid_fn, *args, **kwargs):
        """What kernel[grid] calls until the binder exists, and for kernels it cannot serve."""
        __tracebackhide__ = True  # noqa: F841
        if self._binder is None and self._bindable and self._bind_tries > 0:
            try:
                values, _ = self.bind(list(args), dict(kwargs))
            except TileError:
                values = None  # the general path raises it
            kinds = values and _kinds_of(self, values)
            if kinds:
                self._make_binder(kinds)
            else:
                self._bind_tries -= 1
        if self._binder is not None:
            return self._binder(gx, gy, gz, grid_fn, *args, **kwargs)
        return self._generic(grid_fn or (gx, gy, gz))(*args, **kwargs)

    def _slow(self, gx, gy, gz, grid_fn, params, extra, kwargs, num_warps, num_stages):
        """The binder's way out when its guesses do not hold (an argument of another kind,
        an unknown keyword, too many arguments): the general path, with the call rebuilt."""
        __tracebackhide__ = True  # noqa: F841
        named = {n: v for n, v in zip(self._names, params) if v is not _MISSING}
        if extra:
            args, named = tuple(params) + extra, {}
        else:
            args = ()
        for k, v in (("num_warps", num_warps), ("num_stages", num_stages)):
            if v is not _MISSING:
                named[k] = v
        return self._generic(grid_fn or (gx, gy, gz))(*args, **named, **kwargs)

    def _miss(self, key, gx, gy, gz, grid_fn, params, num_warps, num_stages):
        """A binder key seen for the first time: find or build the specialization, check the
        arguments once, keep its launch function under the key and launch."""
        __tracebackhide__ = True  # noqa: F841
        if fake_launch(params, {}):
            return  # torch's fake tensors (tracing): nothing runs, nothing is kept
        try:
            named = {n: v for n, v in zip(self._names, params) if v is not _MISSING}
            for k, v in (("num_warps", num_warps), ("num_stages", num_stages)):
                if v is not _MISSING:
                    named[k] = v
            values, options = self.bind([], named)
            launcher = self.launcher(values, options, self.target_for(values))
            if read_env()[2]:
                return  # TILE_COMPILE_ONLY: never kept, so every launch reaches the cache
            runtime, names = self.runtime_values(values)
            launcher.check(runtime)
            fast = None
            if _kinds_of(self, values) == self._kinds and not holds_nan(key):
                make = getattr(launcher, "fast_launch", None)
                # (per device: the key holds each tensor's device, and a function is one device's)
                fast = (make and make(self._kinds, launch_device(names, runtime))) or \
                    _adapter(launcher, self._kinds, self._runtime_names)
                self._bound[key] = fast
            if grid_fn is not None:
                grid = normal_grid(grid_fn({p.name: v for p, v in zip(self.params, values)}))
                if grid is None:
                    return
                gx, gy, gz = grid
            if fast is None:
                return launcher((gx, gy, gz), runtime, names)
            flat = []
            for kind, v in zip(self._kinds, runtime):
                flat += (v, v.data_ptr()) if kind == "t" else (v,)
            return fast(gx, gy, gz, *flat)
        except TileError as e:
            raise e.with_traceback(None) from None

    def _make_binder(self, kinds):
        """Generate this kernel's binder: a function with the kernel's parameters (plus the
        grid, num_warps and num_stages) that reads from each argument exactly what the
        specialization depends on, looks the launch function up by that key and calls it
        with what it read. Each of its guesses (this argument is a tensor, that one an int)
        is checked; any that fails takes the general path, so every launch is still right."""
        names = self._names
        pre = "_t"
        while any(n.startswith(pre) for n in names):
            pre += "_"
        M = pre + "M"
        key = [f"{pre}env(b'TILE_TARGET')", f"{pre}env(b'TILE_DUMP_IR')", f"{pre}env(b'TILE_COMPILE_ONLY')",
               f"{pre}env(b'TILE_DEBUG')"]
        guards, reads, flat, tensors = [f"{pre}extra", f"{pre}kw"], [], [], []
        kind_of = iter(kinds)
        for i, (n, const) in enumerate(zip(names, self._is_const)):
            if const:
                key += [f"{n}.__class__", n]
                continue
            kind = next(kind_of)
            if kind == "t":
                ptr = f"{pre}p{i}"
                reads.append(f"{ptr} = {n}.data_ptr()")
                tensors.append(n)
                # (a null pointer, a fake or empty tensor's, keys apart: fake ones never bind)
                key += [f"{n}.dtype", f"{n}.dim()", f"{n}.device", f"(not {ptr} & 15) if {ptr} else None"]
                flat += [n, ptr]
            else:
                guards.append(f"{n}.__class__ is not {pre}{ {'i': 'int', 'f': 'float', 'b': 'bool'}[kind] }")
                if kind == "i":  # ==1 is folded; multiples of 16 and the int32 range are specialized
                    # (and past int64's a miss, which raises)
                    key += [f"{n} == 1", f"{n} != 0 and not {n} & 15", f"-2147483648 <= {n} <= 2147483647",
                            f"-9223372036854775808 <= {n} <= 9223372036854775807"]
                flat.append(n)
        for j, n in enumerate(tensors):  # (`wide`: from the storage's bytes, read once)
            reads += [f"{pre}s{j} = {n}.untyped_storage()", f"{pre}b{j} = {pre}s{j}.nbytes()"]
            key.append(f"{pre}max({n}.nbytes, {pre}b{j}) >> 31")
        if len(tensors) > 1:  # `disjoint` written out pairwise: no call, no sort on every launch
            for j, n in enumerate(tensors):
                reads += [f"{pre}a{j} = {pre}s{j}.data_ptr()", f"{pre}e{j} = {pre}a{j} + {pre}b{j}"]
            pairs = [f"not {pre}a{i} or not {pre}a{j} or {pre}e{i} <= {pre}a{j} or {pre}e{j} <= {pre}a{i}"
                     for j in range(len(tensors)) for i in range(j)]
            key.append(" and ".join(f"({p})" for p in pairs))
        key += ["num_warps.__class__", "num_warps", "num_stages.__class__", "num_stages"]  # 4.0 == 4, True == 1
        if self.captured_values() is not None:  # globals or closure variables it folds
            key.append(f"{pre}captured()")
        grid = [f"{pre}g{d}" for d in "xyz"]
        params_tuple = f"({', '.join(names)}{',' if len(names) == 1 else ''})"
        again = f"{', '.join(grid)}, {pre}gf, {params_tuple}"
        slow = f"{pre}slow({again}, {pre}extra, {pre}kw, num_warps, num_stages)"
        meta = "{" + ", ".join(f"{n!r}: {n}" for n in names) + "}"
        # A parameter's default is the binder's too; the others are missing until given.
        given = {f"{pre}d{i}": p.default for i, p in enumerate(self.params) if p.default is not p.empty}
        defaults = [f"{pre}d{i}" if f"{pre}d{i}" in given else M for i in range(len(names))]
        lines = [
            f"def {pre}binder({', '.join(grid)}, {pre}gf, {''.join(f'{n}={d}, ' for n, d in zip(names, defaults))}*{pre}extra, "
            f"{''.join(f'{n}={M}, ' for n in OPTION_NAMES)}**{pre}kw):",
            f"    if {' or '.join(guards)}:",
            "        __tracebackhide__ = True",
            f"        return {slow}",
            "    try:",
            *[f"        {r}" for r in reads],
            f"        {pre}k = ({', '.join(key)},)",
            f"        {pre}l = {pre}bound.get({pre}k)",
            f"    except ({pre}AttributeError, {pre}TypeError, {pre}RuntimeError):  # (not a tensor; an unhashable constexpr; a sparse tensor)",
            "        __tracebackhide__ = True",
            f"        return {slow}",
            f"    if {pre}l is None:",
            "        __tracebackhide__ = True",
            f"        return {pre}miss({pre}k, {again}, num_warps, num_stages)",
            f"    if {pre}gf is not None:",
            f"        {pre}g = {pre}grid({pre}gf({meta}))",
            f"        if {pre}g is None:",
            "            return",
            f"        {', '.join(grid)} = {pre}g",
            f"    return {pre}l({', '.join(grid + flat)})",
        ]
        src = "\n".join(lines) + "\n"
        filename = f"<tile binder {self.name}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        namespace = {M: _MISSING, f"{pre}env": env_get(), f"{pre}bound": self._bound, f"{pre}slow": self._slow,
                     f"{pre}miss": self._miss, f"{pre}max": max, f"{pre}captured": self.captured_values, f"{pre}grid": normal_grid,
                     f"{pre}AttributeError": AttributeError, f"{pre}TypeError": TypeError, f"{pre}RuntimeError": RuntimeError,
                     f"{pre}int": int, f"{pre}float": float, f"{pre}bool": bool, **given}
        exec(compile(src, filename, "exec"), namespace)
        binder = namespace[f"{pre}binder"]
        binder.__name__ = binder.__qualname__ = self.name  # as tracebacks and TypeErrors name it
        binder.__code__ = binder.__code__.replace(co_name=self.name)
        binder.source = src
        self._kinds, self._binder, self._entry = kinds, binder, binder
        self._grids.clear()  # the cached partials call _unbound

def read_env() -> tuple:
    """TILE_TARGET, TILE_DUMP_IR, whether TILE_COMPILE_ONLY is on and TILE_DEBUG, read on every
    launch (tests change them)."""
    get = env_get()
    return (get(b"TILE_TARGET"), get(b"TILE_DUMP_IR"), flag_on(get(b"TILE_COMPILE_ONLY")), get(b"TILE_DEBUG"))


def flag_on(value) -> bool:
    """An on/off environment variable: unset, empty, 0, false, no and off are off (TILE_COMPILE_ONLY=0
    was on, and every launch silently ran nothing)."""
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def env_get():
    """A getter of one environment variable by bytes name, as cheap as this platform allows."""
    data = getattr(os.environ, "_data", None)
    if data is not None and os.name == "posix":  # the raw bytes mapping: much faster than os.environ.get
        return data.get
    return lambda name: os.environ.get(name.decode())



def fake_launch(args, kwargs) -> bool:
    """Whether a launch's tensors are torch's FakeTensors (none has memory). Their `data_ptr()`
    is 0 (in the binder's key: never a launch function kept for a real tensor's)."""
    for v in (*args, *kwargs.values()):
        v = v.base if is_descriptor(v) else v  # (a tensor descriptor's tensor)
        if is_tensor(v) and type(v).__name__ == "FakeTensor":
            return True
    return False


_MISSING = object()  # the binder's default for an argument not passed


def holds_nan(key: tuple) -> bool:
    """A launch key holding a NaN (a fresh float("nan") constexpr) equals no later key: kept,
    the launch caches grew by one entry a launch."""
    return any(holds_nan(v) if type(v) is tuple else type(v) is float and v != v for v in key)


def _kinds_of(kernel, values) -> tuple | None:
    """Per run-time argument "t" (tensor), "i", "f" or "b"; None if one is none of these."""
    kinds = []
    for is_const, v in zip(kernel._is_const, values):
        if is_const:
            continue
        if is_tensor(v):
            kinds.append("t")
        else:
            kind = {int: "i", float: "f", bool: "b"}.get(type(v))
            if kind is None:
                return None
            kinds.append(kind)
    return tuple(kinds)


def _adapter(launcher, kinds, names):
    """A fast-launch-shaped function over a launcher that has none (the CPU's)."""
    def launch(gx, gy, gz, *flat):
        values, i = [], 0
        for kind in kinds:
            values.append(flat[i])
            i += 2 if kind == "t" else 1
        return launcher((gx, gy, gz), values, names)

    return launch


def normal_grid(grid):
    """The 3-tuple of ints of a grid, or None when it is empty (nothing to launch)."""
    if not isinstance(grid, (tuple, list)):
        grid = (grid,)
    # ints (a float would be truncated), each fitting the 32-bit program id
    if not 1 <= len(grid) <= 3 or any(not _is_int(g) or not 0 <= g < 2**31 for g in grid):
        raise LaunchError(f"grid must be 1 to 3 ints in [0, 2**31), got {tuple(grid)!r}")
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    return None if 0 in grid else grid


def _is_int(v) -> bool:
    """An int, a numpy or 0-d torch integer; not a bool or a float."""
    if isinstance(v, bool):
        return False
    try:
        return operator.index(v) == v
    except TypeError:
        return False


def exact_grid(grid):
    """(gx, gy, gz) if grid is 1 to 3 positive ints (the only grids kernel[grid] caches), else None."""
    if type(grid) is int:
        grid = (grid,)
    if type(grid) is not tuple or not 1 <= len(grid) <= 3 or any(type(g) is not int or not 0 < g < 2**31 for g in grid):
        return None
    return grid + (1,) * (3 - len(grid))
