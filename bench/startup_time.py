#!/usr/bin/python3
"""Whole-process time of short ctp commands: `ctp --version`, dumping a small
program and transpiling it (issue 14, item 6: what a process costs before it
does any work, which is mostly loading shared libraries).

Several builds are measured in one run, their runs interleaved (build A's
command, build B's, A's, ...) so that a change in the machine's load affects
all of them alike:

    /usr/bin/python3 bench/startup_time.py --runs 40 \\
        --ctp baseline=/work/notes/baseline_bin/ctp:/work/notes/baseline_bin \\
        --ctp new=build/ctp

Each --ctp is NAME=PATH_TO_CTP[:LD_LIBRARY_PATH]. The commands: `--version`,
`dump` of the program to standard output (/dev/null), the same with `-o FILE`,
and `transpile` (grad_allreduce) into a folder; ctp fsyncs the files it writes,
so the last two also measure the file system of --out-dir. Printed per build and
command: the median and the minimum wall time and the median CPU time (user +
system of the child) in milliseconds, the load average before and after, and
the libraries each build's `ctp dump` maps (from LD_DEBUG=files).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A small program that transpiles: a two-layer model trained with Adam, the
# golden test's input (tests/golden/), about 28 KB of JSON for both programs.
CASE = os.path.join(SOURCE_DIR, "tests", "golden", "grad_allreduce_adam_n2_r1_ring1_multihost")


def commands(out_dir):
    startup = os.path.join(CASE, "startup.json")
    main = os.path.join(CASE, "main.json")
    return {
        "--version": ["--version"],
        "dump": ["dump", main, "--emit", "text"],
        "dump -o": ["dump", main, "--emit", "text", "-o", os.path.join(out_dir, "main.txt")],
        "transpile": ["transpile", "--mode", "grad_allreduce", "--rank", "1", "--endpoints",
                      "10.0.0.1:6170,10.0.0.2:6171", "--startup", startup, "--main", main,
                      "-o", os.path.join(out_dir, "transpiled")],
    }


def parse_build(text):
    name, _, rest = text.partition("=")
    path, _, libs = rest.partition(":")
    if not name or not path:
        raise SystemExit(f"--ctp {text!r}: expected NAME=PATH_TO_CTP[:LD_LIBRARY_PATH]")
    if not os.access(path, os.X_OK):
        raise SystemExit(f"--ctp {text!r}: {path} is not an executable")
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    if libs:
        env["LD_LIBRARY_PATH"] = libs
    return name, os.path.abspath(path), env


def run_once(ctp, args, env):
    """Wall and CPU seconds of one run of `ctp args`; raises on failure."""
    start = time.perf_counter()
    pid = os.posix_spawn(ctp, [ctp] + args, env,
                         file_actions=[(os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                                       (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0)])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{ctp} {' '.join(args)} failed (status {status})")
    return wall, usage.ru_utime + usage.ru_stime


def mapped_libraries(ctp, args, env):
    """The shared objects the dynamic loader opened for one run (LD_DEBUG=files)."""
    debug_env = dict(env, LD_DEBUG="files")
    r = subprocess.run([ctp] + args, env=debug_env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, check=True)
    names = []
    for line in r.stderr.splitlines():
        if "file=" in line and ("needed by" in line or "dynamically loaded by" in line):
            name = line.split("file=", 1)[1].split()[0]
            if name not in names:
                names.append(name)
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ctp", action="append", required=True,
                        help="NAME=PATH_TO_CTP[:LD_LIBRARY_PATH], once per build")
    parser.add_argument("--runs", type=int, default=40, help="runs of each command per build")
    parser.add_argument("--warmup", type=int, default=3, help="unrecorded runs first")
    parser.add_argument("--out-dir", default=None,
                        help="where dump -o and transpile write (default: the system's temporary "
                             "folder); ctp fsyncs what it writes, so the file system matters")
    a = parser.parse_args()
    builds = [parse_build(t) for t in a.ctp]

    with tempfile.TemporaryDirectory(prefix="ctp_startup_", dir=a.out_dir) as out_dir:
        cmds = commands(out_dir)
        for name, ctp, env in builds:
            for args in cmds.values():
                for _ in range(a.warmup):
                    run_once(ctp, args, env)
        load_before = os.getloadavg()
        samples = {(b[0], c): [] for b in builds for c in cmds}
        for _ in range(a.runs):
            for cmd, args in cmds.items():
                for name, ctp, env in builds:
                    samples[(name, cmd)].append(run_once(ctp, args, env))
        load_after = os.getloadavg()
        libraries = {name: mapped_libraries(ctp, cmds["dump"], env) for name, ctp, env in builds}

    print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}; "
          f"{os.cpu_count()} CPUs; {a.runs} runs of each command per build, interleaved; "
          f"outputs in {out_dir}")
    print()
    print("| build | command | median wall ms | min wall ms | median CPU ms |")
    print("|---|---|---|---|---|")
    for name, _, _ in builds:
        for cmd in cmds:
            walls = [w * 1000 for w, _ in samples[(name, cmd)]]
            cpus = [c * 1000 for _, c in samples[(name, cmd)]]
            print(f"| {name} | `ctp {cmd}` | {statistics.median(walls):.1f} | {min(walls):.1f} | "
                  f"{statistics.median(cpus):.1f} |")
    print()
    for name, names in libraries.items():
        print(f"{name}: `ctp dump` opens {len(names)} libraries: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
