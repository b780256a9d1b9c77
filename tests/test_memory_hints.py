"""`cache_modifier=`, `eviction_policy=` and `volatile=` of `load` and `store` (Triton's):
checked as Triton checks them, ignored on the CPU, and on a GPU the PTX qualifiers, the
16-byte `ld.global.v4` / `st.global.v4` accesses keeping their width."""

import re

import pytest
import torch

import tile


@tile.kernel
def hinted_kernel(x, y, flag, n, BLOCK: tile.constexpr, CACHE: tile.constexpr, EVICT: tile.constexpr,
                  VOLATILE: tile.constexpr, STORE_CACHE: tile.constexpr):
    pid = tile.program_id(0)
    offs = pid * BLOCK + tile.arange(0, BLOCK)
    m = offs < n
    v = tile.load(x + offs, mask=m, cache_modifier=CACHE, eviction_policy=EVICT, volatile=VOLATILE,)
    scale = tile.load(flag, volatile=True)
    py = y + pid * BLOCK
    tile.store(py + tile.arange(0, BLOCK), v * scale, mask=m, cache_modifier=STORE_CACHE, eviction_policy=EVICT,)


def _run(dtype=torch.float32, n=1000, device="cpu", **hints):
    torch.manual_seed(0)
    x = torch.randn(n).to(dtype)
    y = torch.zeros(n, dtype=dtype, device=device)
    flag = torch.full((1,), 3, dtype=dtype)
    meta = {"CACHE": "", "EVICT": "", "VOLATILE": False, "STORE_CACHE": "", **hints}
    hinted_kernel[(tile.cdiv(n, 512),)](x.to(device), y, flag.to(device), n, BLOCK=512, **meta)
    return x, y


@pytest.mark.parametrize("hints", [{}, {"CACHE": ".cg", "EVICT": "evict_last", "STORE_CACHE": ".cs"},
                                   {"VOLATILE": True, "EVICT": "evict_first"}])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8])
def test_hints_change_nothing_on_the_cpu(dtype, hints):
    x, y = _run(dtype, **hints)
    assert torch.equal(y, x * 3)


def _ptx(dtype=torch.float32, n=1024, target="sm_90a", **hints):
    hinted_kernel._launchers.clear()
    _run(dtype, n, device="meta", **hints)
    (launcher,) = hinted_kernel._launchers.values()
    return launcher.asm["ptx"]


def _accesses(ptx, op):
    return re.findall(rf"@%p\d+ ({op}\.\S+)", ptx)


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_qualifiers_in_the_ptx(gpu_target, target):
    """n = 1024 (a multiple of 16): f32 runs of 4, each one `v4` access with its qualifiers;
    an eviction policy goes to L1 and, by a `createpolicy` register, to L2 (as Triton's)."""
    gpu_target(target)
    plain = _ptx()
    assert set(_accesses(plain, "ld")) == {"ld.global.v4.b32", "ld.volatile.global.b32"} and set(_accesses(plain, "st")) == {"st.global.v4.b32"}
    assert "createpolicy" not in plain
    ptx = _ptx(CACHE=".cg", STORE_CACHE=".wt")
    assert set(_accesses(ptx, "ld")) == {"ld.global.cg.v4.b32", "ld.volatile.global.b32"}  # (the volatile scalar)
    assert set(_accesses(ptx, "st")) == {"st.global.wt.v4.b32"}
    ptx = _ptx(EVICT="evict_last")
    assert re.search(r"createpolicy\.fractional\.L2::evict_last\.b64 %rd\d+, 1\.0;", ptx)
    assert set(_accesses(ptx, "ld")) == {"ld.global.L1::evict_last.L2::cache_hint.v4.b32", "ld.volatile.global.b32"}
    assert set(_accesses(ptx, "st")) == {"st.global.L1::evict_last.L2::cache_hint.v4.b32"}
    ptx = _ptx(CACHE=".cs", EVICT="evict_first", STORE_CACHE=".cg")  # (PTX has no .cs with an L1 priority)
    assert set(_accesses(ptx, "ld")) == {"ld.global.cs.L2::cache_hint.v4.b32", "ld.volatile.global.b32"}
    assert set(_accesses(ptx, "st")) == {"st.global.cg.L2::cache_hint.v4.b32"}
    ptx = _ptx(VOLATILE=True, CACHE=".cv", EVICT="evict_normal")
    assert set(_accesses(ptx, "ld")) == {"ld.volatile.global.v4.b32", "ld.volatile.global.b32"}


def test_narrow_elements_one_at_a_time(gpu_target):
    """Runs of less than a word (int8 when n is odd: nothing proven aligned) take the hints an
    element at a time; float16 runs keep their width."""
    gpu_target()
    ptx = _ptx(torch.int8, n=999, CACHE=".ca")
    assert set(_accesses(ptx, "ld")) == {"ld.global.ca.u8", "ld.volatile.global.u8"}
    plain = _accesses(_ptx(torch.float16), "ld")
    hinted = _accesses(_ptx(torch.float16, EVICT="evict_first"), "ld")
    assert "ld.global.v2.b32" in plain  # (four elements a thread: 8 bytes)
    assert hinted == [a.replace("ld.global.", "ld.global.L1::evict_first.L2::cache_hint.") for a in plain]


@tile.kernel
def bad_hint_kernel(x, CACHE: tile.constexpr, EVICT: tile.constexpr, VOLATILE: tile.constexpr, STORE: tile.constexpr):
    offs = tile.arange(0, 16)
    if STORE:
        tile.store(x + offs, 1.0, cache_modifier=CACHE, eviction_policy=EVICT)
    else:
        v = tile.load(x + offs, cache_modifier=CACHE, eviction_policy=EVICT, volatile=VOLATILE)


@pytest.mark.parametrize("cache, evict, volatile, store, message, line", [
    (".wb", "", False, False, "load's cache_modifier must be one of '.ca', '.cg', '.cs', '.cv', got '.wb'", "v = tile.load"),
    (".ca", "", False, True, "store's cache_modifier must be one of '.wb', '.cg', '.cs', '.wt', got '.ca'", "tile.store("),
    ("", "evict_all", False, False, "load's eviction_policy must be one of 'evict_first', 'evict_last', 'evict_normal', "
                                    "got 'evict_all'", "v = tile.load"),
    ("", "", 1, False, "load's volatile must be True or False", "v = tile.load"),
])
def test_bad_hints_are_errors_at_the_line(cache, evict, volatile, store, message, line):
    with pytest.raises(tile.CompilationError, match=re.escape(message)) as e:
        bad_hint_kernel[(1,)](torch.zeros(16), CACHE=cache, EVICT=evict, VOLATILE=volatile, STORE=store)
    assert line in str(e.value)


@tile.kernel
def loop_kernel(x, y, n, BLOCK: tile.constexpr, VOLATILE: tile.constexpr):
    acc = tile.zeros((BLOCK,), tile.float32)
    for i in tile.range(0, n, num_stages=3):
        acc += tile.load(x + i * BLOCK + tile.arange(0, BLOCK), volatile=VOLATILE)
    tile.store(y + tile.arange(0, BLOCK), acc)


def test_volatile_loads_are_not_read_ahead(gpu_target):
    """A pipelined loop reads its loads stages ahead (cp.async), but not a volatile one: it
    stays an `ld.volatile` where the loop body reads it."""
    x, y = torch.randn(5 * 512), torch.empty(512)
    loop_kernel[(1,)](x, y, 5, BLOCK=512, VOLATILE=True)
    torch.testing.assert_close(y, x.view(5, 512).sum(0))
    gpu_target()
    for volatile in (False, True):
        loop_kernel._launchers.clear()
        loop_kernel[(1,)](x.to("meta"), y.to("meta"), 5, BLOCK=512, VOLATILE=volatile)
        (launcher,) = loop_kernel._launchers.values()
        ptx = launcher.asm["ptx"]
        assert ("cp.async" in ptx) != volatile and ("ld.volatile.global.v4.b32" in ptx) == volatile
