"""Prints the directory of the NVRTC that pip installed (nvidia-cuda-nvrtc), for
$ANVIL_CUDA_LIB_DIRS, as the anvil package finds it (anvil/_cuda.py, read from the source
tree: the package need not be built yet); fails, saying so, where there is none."""

import importlib.util
import pathlib
import sys

source = pathlib.Path(__file__).resolve().parents[1] / "crates/anvil-py/python/anvil/_cuda.py"
spec = importlib.util.spec_from_file_location("anvil_cuda_search", source)
assert spec is not None and spec.loader is not None
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
dirs = module.nvrtc_dirs()
if not dirs:
    sys.exit("NVRTC is not installed in this Python: pip install nvidia-cuda-nvrtc==13.0.88 (scripts/setup.sh does)")
print(dirs[0])
