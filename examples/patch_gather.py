"""Spatio-temporal patch gather (the input side of a video ViT's patch embedding).

From a video `(B, T, C, H, W)` take, every `st` frames, a clip of `pt` frames,
cut into `ph x pw` spatial patches, and flatten each patch:

    out[b, i, y, x, k] = video[b, i*st + dt, c, y*ph + dy, x*pw + dx]
    with k = ((c*pt + dt)*ph + dy)*pw + dx
    out shape (B, nT, nH, nW, C*pt*ph*pw), nT = (T - pt)//st + 1, nH = H//ph, nW = W//pw

The video is read through its strides (Triton form), so a permuted or sliced
view works as is, with no `.contiguous()` copy. One program gathers `patches`
neighbouring patches of a band (more bytes in flight a block, the program's
index arithmetic shared). Programs are numbered in the output's order, x
fastest: the blocks resident at
one time then read neighbouring patches, whole bands of each frame, so DRAM
serves long runs instead of scattered 96-byte pieces.

When the pixels of a patch row and their channels are one contiguous run
(channels-last storage: s_c == 1, s_w == C; the wrapper checks the strides and
sets RUN, the row's length padded to a power of two), the program reads each of its pt*ph rows whole, with 16-byte loads,
in the source's order, and `tile.gather` permutes the tile into the output's
(c, dt, dy, dx) order; otherwise every element is read on its own through all
five strides.
"""

import torch

import tile


@tile.kernel
def patch_gather_kernel(video, out, n_t, n_h, n_w, n_k, s_b, s_t, s_c, s_h, s_w, ST: tile.constexpr,
                        PT: tile.constexpr, PH: tile.constexpr, PW: tile.constexpr, BLOCK: tile.constexpr,
                        C: tile.constexpr = 0, RUN: tile.constexpr = 0, NP: tile.constexpr = 1):
    # Program (g, y, clip) gathers the NP neighbouring patches x0 .. x0+NP-1 of band y of
    # clip (b, i), whose outputs are one run of NP * n_k elements. A 3-D grid, so that
    # no program divides its id at run time.
    x0, y, clip = tile.program_id(0) * NP, tile.program_id(1), tile.program_id(2)
    b, i = clip // n_t, clip % n_t
    kk = tile.arange(0, NP * BLOCK)
    q, k = kk // BLOCK, kk % BLOCK  # patch x0 + q, its element k
    c = k // (PT * PH * PW)
    dt = k // (PH * PW) % PT
    dy = k // PW % PH
    dx = k % PW
    mask = (k < n_k) & (x0 + q < n_w)
    if RUN:
        # Row (dt, dy) of patches x0 .., each PW * C contiguous elements padded to RUN (a power
        # of two), the NP patches side by side as they are in memory.
        j = tile.arange(0, PT * PH * NP * RUN)
        row, jq, col = j // (NP * RUN), j // RUN % NP, j % RUN
        first = b * s_b + (i * ST + row // PH) * s_t + (y * PH + row % PH) * s_h + (x0 + jq) * PW * s_w
        rows = tile.load(video + first + col, mask=(col < PW * C) & (x0 + jq < n_w), other=0)
        # A masked-off element's index may point past the tile: gather wraps it, and its value is never stored.
        v = tile.gather(rows, ((dt * PH + dy) * NP + q) * RUN + dx * C + c, 0)
    else:
        src = b * s_b + (i * ST + dt) * s_t + c * s_c + (y * PH + dy) * s_h + ((x0 + q) * PW + dx) * s_w
        v = tile.load(video + src, mask=mask)
    tile.store(out + ((clip * n_h + y) * n_w + x0) * n_k + q * n_k + k, v, mask=mask)


def launch_options(video: torch.Tensor, pt: int, st: int, ph: int, pw: int, patches: int = 2) -> dict:
    """The kernel's compile-time arguments for this video and patching, `patches` neighbouring
    patches a program (a power of two)."""
    B, T, C, H, W = video.shape
    n_k = C * pt * ph * pw
    block = 1 << (n_k - 1).bit_length()
    run = 1 << (pw * C - 1).bit_length()
    # Rows whole: the pixels of a patch row and their channels one run, and its padded tile no larger.
    rows = video.stride(2) == 1 and video.stride(4) == C and pt * ph * run <= block
    return dict(ST=st, PT=pt, PH=ph, PW=pw, BLOCK=block, C=C if rows else 0, RUN=run if rows else 0, NP=patches)


def patch_gather(video: torch.Tensor, pt: int, st: int, ph: int, pw: int, patches: int = 2) -> torch.Tensor:
    """Patches of a (B, T, C, H, W) tensor of any strides; see the module doc for the layout."""
    B, T, C, H, W = video.shape
    n_t, n_h, n_w, n_k = (T - pt) // st + 1, H // ph, W // pw, C * pt * ph * pw
    out = torch.empty((B, n_t, n_h, n_w, n_k), dtype=video.dtype, device=video.device)
    grid = (-(-n_w // patches), n_h, B * n_t)
    patch_gather_kernel[grid](video, out, n_t, n_h, n_w, n_k, *video.stride(),
                              **launch_options(video, pt, st, ph, pw, patches))
    return out


def reference(video, pt, st, ph, pw):
    B, T, C, H, W = video.shape
    n_t, n_h, n_w = (T - pt) // st + 1, H // ph, W // pw
    clips = torch.stack([video[:, i * st : i * st + pt] for i in range(n_t)], dim=1)  # B, nT, pt, C, H, W
    clips = clips[..., : n_h * ph, : n_w * pw].reshape(B, n_t, pt, C, n_h, ph, n_w, pw)
    return clips.permute(0, 1, 4, 6, 3, 2, 5, 7).reshape(B, n_t, n_h, n_w, C * pt * ph * pw)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    # Stored channels-last (B, T, H, W, C), viewed as (B, T, C, H, W), one frame dropped and the width
    # cropped: patch rows are runs (the RUN path). Then a channels-first view, a frame sliced off the
    # end and every other row taken: each element read on its own.
    # Five patches across, gathered one and two a program (the last program's second masked off).
    stored = torch.randn(2, 10, 34, 45, 3, device=device)
    last = stored.permute(0, 1, 4, 2, 3)[:, 1:, :, :, 2:]
    first = torch.randn(2, 9, 3, 68, 43, device=device)[:, :-1, :, ::2]
    for video in (last, first):
        assert not video.is_contiguous()
        for patches in (1, 2):
            got = patch_gather(video, pt=2, st=3, ph=8, pw=8, patches=patches)
            torch.testing.assert_close(got, reference(video, 2, 3, 8, 8), rtol=0, atol=0)
    assert launch_options(last, 2, 3, 8, 8)["RUN"] and not launch_options(first, 2, 3, 8, 8)["RUN"]
    print(f"patch_gather: {tuple(last.shape)} channels-last and {tuple(first.shape)} channels-first strided views, "
          f"1 and 2 patches a program, on {device} match torch")

if __name__ == "__main__":
    main()
