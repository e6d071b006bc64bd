import os

import pytest


@pytest.fixture
def in_tmp_dir(tmp_path):
    """Run a test in a fresh directory (generate_module writes into the current one)."""
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield tmp_path
    finally:
        os.chdir(old)
