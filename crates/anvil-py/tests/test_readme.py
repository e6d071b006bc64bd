"""The README's Python examples run as written."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_python_quick_start_runs(in_tmp_dir, monkeypatch):
    # The GPU example runs on the CPU's emulation of a GPU where there is none.
    monkeypatch.setenv("ANVIL_CUDA_EMULATE", "1")
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "the README has a Python quick start"
    for block in blocks:
        # As a script would run it (the Dask example guards its cluster with __main__).
        exec(compile(block, "README.md", "exec"), {"__name__": "__main__"})
    assert (in_tmp_dir / "my_module.hpp").exists()
    assert (in_tmp_dir / "model.anvil").exists()
    assert (in_tmp_dir / "sweep.anvil").exists()


MAIN = r"""#include "rosen_disk.hpp"
#include <cstdio>
int main() {
  const double x0[] = {-1.2, 1.0}, p[] = {1.5};
  double x[2], lam_eq[1], lam_ineq[1], lam_box[2];
  rosen_disk::WS_t ws = rosen_disk::init_ws();
  const rosen_disk::Info info =
      rosen_disk::solve(x0, p, nullptr, nullptr, nullptr, x, lam_eq, lam_ineq, lam_box, rosen_disk::Settings{}, ws);
  rosen_disk::free_ws(ws);
  std::printf("%d %.12f\n", static_cast<int>(info.status), x[0] * x[0] + x[1] * x[1]);
  return 0;
}
"""


def test_the_aot_build_lines_compile_without_warnings_and_solve(in_tmp_dir):
    """The README's g++ lines for a solver module, run as written (with `python` this
    environment's), warning-free; both ways of linking the runtime solve."""
    import os
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    sqp = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "rosen_disk" in b)
    exec(compile(sqp, "README.md", "exec"), {"__name__": "__main__"})
    lines = next(b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if "anvil_opti.cpp" in b).strip().splitlines()
    (in_tmp_dir / "main.cpp").write_text(MAIN)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    script = "set -e\ng++ -std=c++17 -O2 -c main.cpp\n" + "\n".join(lines) + "\n"
    run = subprocess.run(["bash", "-c", script], cwd=in_tmp_dir, env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    # The documented alternative: the prebuilt runtime library instead of anvil_opti.o.
    link = lines[-1].split("# or:")[1].strip()
    run = subprocess.run(["bash", "-c", f"g++ {link} -o main2"], cwd=in_tmp_dir, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for exe in ("./main", "./main2"):
        out = subprocess.run([exe], cwd=in_tmp_dir, capture_output=True, text=True, check=True).stdout.split()
        assert out[0] == "0" and abs(float(out[1]) - 1.5) < 1e-8, out


def test_the_documentation_links_to_files_that_exist():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    checked = 0
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            assert (page.parent / target).exists(), f"{page.name} links to {target}, which does not exist"
            checked += 1
    assert checked >= 8
