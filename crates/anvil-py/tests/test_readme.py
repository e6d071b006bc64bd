"""The README's Python quick start runs as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_python_quick_start_runs(in_tmp_dir):
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README has a Python quick start"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    assert (in_tmp_dir / "my_module.hpp").exists()
