"""Every example's main() checks itself against torch; here on the CPU target."""

import importlib

import pytest

EXAMPLES = ["vector_add", "fused_softmax", "layer_norm", "add_relu_layernorm", "patch_gather", "matmul", "flash_attention", "paged_attention", "int4_matmul", "fp8_matmul"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_main(name):
    importlib.import_module(name).main()
