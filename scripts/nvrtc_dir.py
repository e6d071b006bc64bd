"""Prints the directory of the NVRTC that pip installed (nvidia-cuda-nvrtc), for
$ANVIL_CUDA_LIB_DIRS; fails, saying so, where there is none."""

import importlib.util
import os
import sys

spec = importlib.util.find_spec("nvidia")
roots = list(spec.submodule_search_locations) if spec and spec.submodule_search_locations else []
for root in roots:
    for sub in ("cu13/lib", "cu12/lib", "cuda_nvrtc/lib"):
        path = os.path.join(root, sub)
        if os.path.isdir(path) and any(name.startswith("libnvrtc.so") for name in os.listdir(path)):
            print(path)
            sys.exit(0)
sys.exit("NVRTC is not installed in this Python: pip install nvidia-cuda-nvrtc==13.0.88 (scripts/setup.sh does)")
