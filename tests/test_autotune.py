"""tile.autotune on the CPU target: every config compiled, the fastest kept, the choice
kept on disk for later processes."""

import os

import torch

import tile


@tile.kernel
def scale_kernel(x, out, n, BLOCK: tile.constexpr):
    offs = tile.program_id(0) * BLOCK + tile.arange(0, BLOCK)
    mask = offs < n
    tile.store(out + offs, tile.load(x + offs, mask=mask) * 2.0, mask=mask)


CONFIGS = [tile.Config(BLOCK=64), tile.Config(BLOCK=256), tile.Config(BLOCK=1024)]


def _grid(meta):
    return (tile.cdiv(meta["n"], meta["BLOCK"]),)


def test_autotune_picks_a_config_and_remembers_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    tuner = tile.autotune(CONFIGS, key=["n"], rep=3, warmup=1, workers=2)(scale_kernel)
    timed = []
    real_time = tuner.time_config
    monkeypatch.setattr(tuner, "time_config", lambda *a: timed.append(a[-1]) or real_time(*a))
    x = torch.rand(3000)
    out = torch.empty_like(x)
    tuner[_grid](x, out, 3000)
    torch.testing.assert_close(out, 2 * x)
    assert len(timed) == 3  # each config was run and timed
    # Every config was compiled (in worker processes) into the disk cache.
    entries = [d for d in os.listdir(tmp_path) if d != "autotune"]
    assert len(entries) >= 3
    best = tuner.best_config(x, out, 3000)
    assert best in CONFIGS

    # A new tuner (as in a new process) reads the choice from disk and times nothing.
    again = tile.autotune(CONFIGS, key=["n"])(scale_kernel)
    monkeypatch.setattr(again, "time_config", lambda *a: (_ for _ in ()).throw(AssertionError("re-tuned")))
    out2 = torch.empty_like(x)
    again[_grid](x, out2, 3000)
    torch.testing.assert_close(out2, 2 * x)
    assert again.best_config(x, out2, 3000) == best

    # Another key tunes again.
    timed.clear()
    y = torch.rand(100)
    tuner[_grid](y, torch.empty_like(y), 100)
    assert len(timed) == 3


def test_autotune_rejects_an_unknown_key():
    try:
        tile.autotune(CONFIGS, key=["rows"])(scale_kernel)
    except tile.TileError as e:
        assert "rows" in str(e)
    else:
        raise AssertionError("no error for an unknown key")


def test_configs_that_do_not_compile_are_left_out(tmp_path, monkeypatch):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    bad = tile.Config(BLOCK=100)  # not a power of two: arange refuses it
    tuner = tile.autotune([bad, tile.Config(BLOCK=128)], key=["n"], rep=2, warmup=1)(scale_kernel)
    x = torch.rand(500)
    out = torch.empty_like(x)
    tuner[_grid](x, out, 500)
    torch.testing.assert_close(out, 2 * x)
    assert tuner.best_config(x, out, 500).kwargs == {"BLOCK": 128}
    only_bad = tile.autotune([bad], key=["n"])(scale_kernel)
    try:
        only_bad[_grid](x, out, 500)
    except tile.TileError as e:
        assert "power of two" in str(e)
    else:
        raise AssertionError("no error when no config compiles")


def test_autotune_shows_its_progress(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TILE_AUTOTUNE_PROGRESS", "1")
    tuner = tile.autotune(CONFIGS, key=["n"], rep=2, warmup=1, workers=1)(scale_kernel)
    x = torch.rand(500)
    tuner[_grid](x, torch.empty_like(x), 500)
    err = capsys.readouterr().err
    assert "autotuning scale_kernel [" in err and "3/3 configs" in err
    assert f"autotuning scale_kernel: {tuner.best_config(x, x, 500)!r} in " in err
    monkeypatch.setenv("TILE_AUTOTUNE_PROGRESS", "0")
    tuner[_grid](torch.rand(400), torch.empty(400), 400)
    assert "autotuning" not in capsys.readouterr().err


@tile.kernel
def desc_rows_kernel(x_desc, out, n, BLOCK: tile.constexpr):
    tile.static_assert(x_desc.block_shape[0] == BLOCK)
    row = tile.program_id(0) * BLOCK
    offs = row + tile.arange(0, BLOCK)
    tile.store(out + offs, tile.sum(x_desc.load([row, 0]), axis=1) * 2.0, mask=offs < n)


def _block_shape_hook(nargs):
    nargs["x_desc"].block_shape = [nargs["BLOCK"], 16]  # (tutorial 06's `_host_descriptor_pre_hook`)


def test_config_pre_hook_sets_what_its_compile_sees(tmp_path, monkeypatch):
    """A config's pre_hook that sets a host descriptor's block shape (Triton's tutorial 06 makes its
    descriptors with a dummy [1, 1] block and sets it per config): each config compiles with the
    block shape its hook gives (a TILE_COMPILE_ONLY build compiles nothing else). The configs were
    once compiled before any hook ran, against the dummy block, and none compiled."""
    monkeypatch.setenv("TILE_CACHE_DIR", str(tmp_path))
    configs = [tile.Config(BLOCK=b, pre_hook=_block_shape_hook) for b in (8, 32)]
    tuner = tile.autotune(configs, key=["n"], rep=2, warmup=1, workers=2)(desc_rows_kernel)
    x = torch.randn(50, 16)
    out = torch.empty(50)
    desc = tile.TensorDescriptor(x, shape=[50, 16], strides=[16, 1], block_shape=[1, 1])
    tuner[lambda meta: (tile.cdiv(50, meta["BLOCK"]),)](desc, out, 50)
    torch.testing.assert_close(out, x.sum(1) * 2)
    assert desc.block_shape == [tuner.best_config(desc, out, 50).kwargs["BLOCK"], 16]
