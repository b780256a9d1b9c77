"""Every example's main() checks itself against torch; here on the CPU target."""

import importlib

import pytest

from seeds import SEEDS


@pytest.mark.parametrize("name", SEEDS)
def test_example_main(name):
    importlib.import_module(name).main()
