"""Shared fixtures of the Python package's tests (python/CMakeLists.txt runs them
through ctest with PYTHONPATH at the build's package, CTP_CLI at the `ctp` tool
and CTP_SOURCE_DIR at the project)."""
import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("CTP_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
REALWORLD = SOURCE_DIR.parent / "shared" / "realworld" / "programs"


@pytest.fixture
def realworld():
    """../shared/realworld/programs, or a visible skip when this checkout has none."""
    if not REALWORLD.is_dir():
        pytest.skip(f"real Paddle programs not found at {REALWORLD} (clone beside ../shared)")
    return REALWORLD


@pytest.fixture
def ctp_cli():
    """The `ctp` command-line tool of this build."""
    path = os.environ.get("CTP_CLI")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("CTP_CLI must name the ctp tool of this build (ctest sets it)")
    return path
