"""Spatio-temporal patch gather (the input side of a video ViT's patch embedding).

From a video `(B, T, C, H, W)` take, every `st` frames, a clip of `pt` frames,
cut into `ph x pw` spatial patches, and flatten each patch:

    out[b, i, y, x, k] = video[b, i*st + dt, c, y*ph + dy, x*pw + dx]
    with k = ((c*pt + dt)*ph + dy)*pw + dx
    out shape (B, nT, nH, nW, C*pt*ph*pw), nT = (T - pt)//st + 1, nH = H//ph, nW = W//pw

The video is read through its strides (Triton form), so a permuted or sliced
view works as is, with no `.contiguous()` copy. One program gathers one patch.
Programs are numbered in the output's order, x fastest: the blocks resident at
one time then read neighbouring patches, whole bands of each frame, so DRAM
serves long runs instead of scattered 96-byte pieces.
"""

import torch

import tile


@tile.kernel
def patch_gather_kernel(video, out, n_t, n_h, n_w, n_k, s_b, s_t, s_c, s_h, s_w, ST: tile.constexpr,
                        PT: tile.constexpr, PH: tile.constexpr, PW: tile.constexpr, BLOCK: tile.constexpr):
    patch = tile.program_id(0)  # ((b * n_t + i) * n_h + y) * n_w + x
    x, y, clip = patch % n_w, patch // n_w % n_h, patch // (n_w * n_h)
    b, i = clip // n_t, clip % n_t
    k = tile.arange(0, BLOCK)
    c = k // (PT * PH * PW)
    dt = k // (PH * PW) % PT
    dy = k // PW % PH
    dx = k % PW
    src = b * s_b + (i * ST + dt) * s_t + c * s_c + (y * PH + dy) * s_h + (x * PW + dx) * s_w
    mask = k < n_k
    tile.store(out + patch * n_k + k, tile.load(video + src, mask=mask), mask=mask)


def patch_gather(video: torch.Tensor, pt: int, st: int, ph: int, pw: int) -> torch.Tensor:
    """Patches of a (B, T, C, H, W) tensor of any strides; see the module doc for the layout."""
    B, T, C, H, W = video.shape
    n_t, n_h, n_w, n_k = (T - pt) // st + 1, H // ph, W // pw, C * pt * ph * pw
    out = torch.empty((B, n_t, n_h, n_w, n_k), dtype=video.dtype, device=video.device)
    block = 1 << (n_k - 1).bit_length()
    patch_gather_kernel[(B * n_t * n_h * n_w,)](video, out, n_t, n_h, n_w, n_k, *video.stride(), ST=st, PT=pt, PH=ph, PW=pw,
                                                BLOCK=block)
    return out


def reference(video, pt, st, ph, pw):
    B, T, C, H, W = video.shape
    n_t, n_h, n_w = (T - pt) // st + 1, H // ph, W // pw
    clips = torch.stack([video[:, i * st : i * st + pt] for i in range(n_t)], dim=1)  # B, nT, pt, C, H, W
    clips = clips[..., : n_h * ph, : n_w * pw].reshape(B, n_t, pt, C, n_h, ph, n_w, pw)
    return clips.permute(0, 1, 4, 6, 3, 2, 5, 7).reshape(B, n_t, n_h, n_w, C * pt * ph * pw)


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    # Stored channels-last (B, T, H, W, C), viewed as (B, T, C, H, W), one frame dropped and the width cropped.
    stored = torch.randn(2, 10, 34, 37, 3, device=device)
    video = stored.permute(0, 1, 4, 2, 3)[:, 1:, :, :, 2:]
    assert not video.is_contiguous()
    got = patch_gather(video, pt=2, st=3, ph=8, pw=8)
    torch.testing.assert_close(got, reference(video, 2, 3, 8, 8), rtol=0, atol=0)
    print(f"patch_gather: {tuple(video.shape)} strided view -> {tuple(got.shape)} on {device} matches torch")


if __name__ == "__main__":
    main()
