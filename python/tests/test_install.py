"""`cmake --install` puts the package where the interpreter it was built for
finds it, and the installed module uses the installed libraries."""
import os
import pathlib
import subprocess
import sys

import pytest

BINARY_DIR = os.environ.get("CTP_BINARY_DIR")

CHECK = """
import ctp, sys
b = ctp.ProgramBuilder(); b.data('x', [-1, 2]); p = b.build()
assert ctp.Program.from_bytes(p.to_bytes()) == p
maps = open('/proc/self/maps').read()
libs = {line.split()[-1] for line in maps.splitlines() if 'libctp_ir' in line}
print(ctp.__file__); print(ctp._ctp.__file__); print(*sorted(libs))
"""


def test_installed_package_is_found_and_uses_installed_libraries(tmp_path):
    if not BINARY_DIR:
        pytest.fail("CTP_BINARY_DIR must name the build (ctest sets it)")
    prefix = tmp_path / "prefix"
    install = subprocess.run(["cmake", "--install", BINARY_DIR, "--prefix", str(prefix)],
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stdout + install.stderr
    modules = list(prefix.rglob("ctp/_ctp*.so"))
    assert len(modules) == 1, modules
    package_root = modules[0].parent.parent
    relative = package_root.relative_to(prefix)
    # Under the default prefix that directory is on this interpreter's path.
    assert str(pathlib.Path("/usr/local") / relative) in sys.path, (relative, sys.path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = str(package_root)
    run = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    package, module, libs = run.stdout.splitlines()
    assert package.startswith(str(package_root)) and module.startswith(str(package_root))
    assert libs.startswith(str(prefix / "lib")), libs
