"""Shared fixtures: the course root and scratch copies of the course for grading tests."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COURSE_FILES = ("nbgrader_config.py", "pyproject.toml", "notebooks", "source", "release",
                "samples")

os.environ.setdefault("MPLBACKEND", "Agg")


def copy_course(dest: Path) -> Path:
    """A scratch copy of the course (no gradebook, no submissions)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in COURSE_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        else:
            shutil.copy2(src, dest / name)
    return dest


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A scratch course directory with its own gradebook (COURSEKIT_GRADEBOOK)."""
    root = copy_course(tmp_path / "course")
    monkeypatch.setenv("COURSEKIT_GRADEBOOK", str(root / "gradebook.db"))
    return root
