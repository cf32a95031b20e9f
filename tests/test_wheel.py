"""The student wheel carries the library only: no notebooks, no solutions, no hidden tests."""

import subprocess
import sys
import zipfile

from .conftest import ROOT


def test_wheel_contains_only_the_library(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path), str(ROOT)], check=True,
                   cwd=tmp_path)
    (wheel,) = tmp_path.glob("coursekit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n == "coursekit/training/memory.py" for n in names)
    assert any(n.startswith("coursekit/data/") and n.endswith(".json") for n in names)
    assert not [n for n in names if n.endswith(".ipynb")]
    assert all(n.startswith(("coursekit/", "coursekit-")) for n in names), names
