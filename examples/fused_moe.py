"""A mixture-of-experts layer's expert GEMM, fused over every expert in one launch, written as
serving libraries write it in Triton (vLLM's `fused_moe_kernel`):

- the tokens routed to each expert are sorted by expert and padded to a multiple of the block
  (`moe_align_block_size`, done here in torch); each program takes one block of them, gathers
  their rows of A through the sorted ids, and multiplies them by its expert's weight;
- the weights are [E, N, K] (an nn.Linear weight per expert), read as B = W[e].T through
  pointers advanced along K, with the columns wrapped by `% N`: `tile-k-major-loads` copies
  them into the tensor-core rings 16 bytes at a time;
- a block past the routed tokens returns early, and a block of no expert writes zeros;
- the router's weight multiplies each output row when `MUL_ROUTED_WEIGHT`.
"""

import torch

import tile


@tile.jit
def write_zeros_to_output(c_ptr, stride_cm, stride_cn, pid_n, N, offs_token, token_mask, BLOCK_SIZE_M, BLOCK_SIZE_N,
                          compute_type):
    accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=compute_type)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
    tile.store(c_ptrs, accumulator, mask=c_mask)


@tile.kernel
def fused_moe_kernel(
    a_ptr, b_ptr, c_ptr, topk_weights_ptr, sorted_token_ids_ptr, expert_ids_ptr,
    num_tokens_post_padded_ptr,
    N, K, EM, num_valid_tokens,
    stride_am, stride_ak, stride_be, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_SIZE_M: tile.constexpr, BLOCK_SIZE_N: tile.constexpr, BLOCK_SIZE_K: tile.constexpr,
    GROUP_SIZE_M: tile.constexpr, MUL_ROUTED_WEIGHT: tile.constexpr, top_k: tile.constexpr,
    compute_type: tile.constexpr,
):
    pid = tile.program_id(axis=0)
    num_pid_m = tile.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tile.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    num_tokens_post_padded = tile.load(num_tokens_post_padded_ptr)
    if pid_m * BLOCK_SIZE_M >= num_tokens_post_padded:
        return
    offs_token_id = pid_m * BLOCK_SIZE_M + tile.arange(0, BLOCK_SIZE_M).to(tile.int64)
    offs_token = tile.load(sorted_token_ids_ptr + offs_token_id)
    token_mask = offs_token < num_valid_tokens

    off_experts = tile.load(expert_ids_ptr + pid_m).to(tile.int64)
    if off_experts == -1:
        write_zeros_to_output(c_ptr, stride_cm, stride_cn, pid_n, N, offs_token, token_mask,
                              BLOCK_SIZE_M, BLOCK_SIZE_N, compute_type)
        return

    offs_bn = (pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N).to(tile.int64)) % N
    offs_k = tile.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_token[:, None] // top_k * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + off_experts * stride_be + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tile.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tile.float32)
    for k in range(0, tile.cdiv(K, BLOCK_SIZE_K)):
        a = tile.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < K - k * BLOCK_SIZE_K), other=0.0)
        b = tile.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator += tile.dot(a, b)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if MUL_ROUTED_WEIGHT:
        moe_weight = tile.load(topk_weights_ptr + offs_token, mask=token_mask, other=0)
        accumulator = accumulator * moe_weight[:, None]
    accumulator = accumulator.to(compute_type)
    offs_cn = pid_n * BLOCK_SIZE_N + tile.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_token[:, None] + stride_cn * offs_cn[None, :]
    c_mask = token_mask[:, None] & (offs_cn[None, :] < N)
    tile.store(c_ptrs, accumulator, mask=c_mask)


def moe_align_block_size(topk_ids: torch.Tensor, block: int, num_experts: int):
    """(sorted token ids, the expert of each block, [their count]): the flat (token, k) ids sorted
    by expert, each expert's run padded to a multiple of `block` with an out-of-range id, and one
    block no expert owns at the end (-1), as vLLM's kernel may be handed."""
    flat = topk_ids.flatten()
    order = torch.argsort(flat, stable=True).to(torch.int32)
    counts = torch.bincount(flat.long(), minlength=num_experts).tolist()
    ids, experts, start = [], [], 0
    for e, n in enumerate(counts):
        if n:
            pad = torch.full(((-n) % block,), flat.numel(), dtype=torch.int32, device=flat.device)
            ids.append(torch.cat([order[start:start + n], pad]))
            experts += [e] * ((n + block - 1) // block)
            start += n
    used = sum(len(i) for i in ids)
    ids.append(torch.full((block,), flat.numel(), dtype=torch.int32, device=flat.device))
    experts.append(-1)
    return (torch.cat(ids), torch.tensor(experts, dtype=torch.int32, device=flat.device),
            torch.tensor([used], dtype=torch.int32, device=flat.device))


CONFIG = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, num_warps=4, num_stages=3)


def fused_moe(a, w, topk_weights, topk_ids, mul_routed_weight=True, **config):
    """out[m, j] = sum_k a[m, k] * w[e, :, k] (times topk_weights[m, j]) for e = topk_ids[m, j]:
    a M x K, w E x N x K; out M x top_k x N, a's dtype."""
    config = {**CONFIG, **config}
    M, K = a.shape
    E, N, _ = w.shape
    top_k = topk_ids.shape[1]
    c = torch.empty(M, top_k, N, dtype=a.dtype, device=a.device)
    ids, experts, padded = moe_align_block_size(topk_ids, config["BLOCK_SIZE_M"], E)
    grid = (tile.cdiv(ids.numel(), config["BLOCK_SIZE_M"]) * tile.cdiv(N, config["BLOCK_SIZE_N"]),)
    fused_moe_kernel[grid](
        a, w, c, topk_weights, ids, experts, padded,
        N, K, ids.numel(), M * top_k,
        a.stride(0), a.stride(1), w.stride(0), w.stride(2), w.stride(1), c.stride(1), c.stride(2),
        MUL_ROUTED_WEIGHT=mul_routed_weight, top_k=top_k,
        compute_type=tile.bfloat16 if a.dtype == torch.bfloat16 else tile.float16,
        **config,
    )
    return c


def reference(a, w, topk_weights, topk_ids, mul_routed_weight=True):
    """fused_moe's result in f32, an expert at a time (a gather of every token's weights would
    take M * top_k * N * K floats)."""
    out = torch.zeros(*topk_ids.shape, w.shape[1], device=a.device)
    for e in range(w.shape[0]):
        m, j = (topk_ids == e).nonzero(as_tuple=True)
        out[m, j] = a[m].float() @ w[e].float().T
    return out * topk_weights[..., None] if mul_routed_weight else out


def main(device: str = "cpu") -> None:
    torch.manual_seed(0)
    for M, K, N, E, top_k, dtype in [(33, 80, 72, 4, 2, torch.float16), (100, 256, 192, 8, 2, torch.bfloat16)]:
        a = torch.randn(M, K, dtype=dtype, device=device)
        w = (torch.randn(E, N, K, device=device) / K ** 0.5).to(dtype)
        topk_ids = torch.stack([torch.randperm(E, device=device)[:top_k] for _ in range(M)]).to(torch.int32)
        topk_weights = torch.rand(M, top_k, device=device)
        for mul in (True, False):
            got = fused_moe(a, w, topk_weights, topk_ids, mul, **(dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32)
                                                                   if M < 64 else {}))
            torch.testing.assert_close(got.float(), reference(a, w, topk_weights, topk_ids, mul), rtol=2e-2, atol=2e-2)
    print("fused_moe: matches torch")


if __name__ == "__main__":
    main()
