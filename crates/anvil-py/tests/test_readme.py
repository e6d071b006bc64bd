"""The README's Python examples run as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_python_quick_start_runs(in_tmp_dir):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README has a Python quick start"
    for block in blocks:
        # As a script would run it (the Dask example guards its cluster with __main__).
        exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    assert (in_tmp_dir / "my_module.hpp").exists()
    assert (in_tmp_dir / "model.anvil").exists()
