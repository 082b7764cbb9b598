#!/usr/bin/env python3
"""Checks ctp's golden transpiler files against the reference's own logic.

For every case directory under tests/golden/ (startup.json, main.json,
options.json), this runs the UNMODIFIED reference collective.py
(../shared/reference/collective.py relative to the repository root, or
--reference) on the case's programs, with a minimal in-memory stand-in for the
`paddle` package that collective.py imports, prints the resulting op sequences
in ctp's text form (docs/text-format.md) and compares them with the expected
files startup.expected.txt and main.expected.txt that ctp wrote. A case with an
error.expected.txt instead expects the reference to raise the exception class
named on its first line.

The stand-in implements only what collective.py uses, with Paddle's semantics
where they decide the output:
  * Block.create_var returns the existing var when the name exists (and raises
    ValueError when shape, dtype, type or persistable disagree); stop_gradient
    is always written.
  * An op created without op_role gets the program's default role, Forward (0),
    as Paddle's Operator constructor gives it.
  * Attribute types: bool -> BOOLEAN, int -> INT, float -> FLOAT, str -> STRING,
    list of str -> STRINGS, list of int -> INTS; values read from an existing
    op with op.attr() keep that op's attribute type.
  * unique_name.generate counts per key from 0, fresh for each case.
  * block.vars[...] raises KeyError, block.var(...) ValueError, op.attr() and
    op.input() of a missing name RuntimeError (Paddle's C++ enforce).
  * core.is_compiled_with_cuda() is True; wait_server_ready does nothing.
  * PADDLE_FUSE_ALLREDUCE, PADDLE_LOSS_SCALE and FLAGS_selected_gpus are set
    from options.json (fuse_allreduce, loss_scale, selected_gpus) or unset.

Paddle 3's dialect (ctp transpile --op-dialect paddle3; *.paddle3.expected.txt
beside each case's expected files) is checked against the reference's output
with the three ops Paddle's later collective.py writes differently renamed:
c_broadcast -> broadcast, c_allgather -> all_gather (slots X, Out -> x, out)
and c_comm_init_all -> comm_init_all (PADDLE3_SPELLING below). Read side by
side, the two versions of collective.py differ in nothing else that reaches a
program (the rest is print formatting and the XPU branch).

With --random N --ctp PATH it instead runs N random cases
(tests/golden/random_cases.py: random programs and options for every mode)
through both the reference and `ctp transpile`, and requires the same op lines
or a failure on both sides; a differing case is saved under --keep DIR.

Usage: scripts/golden_reference_check.py [--golden DIR] [--reference FILE]
                                         [--print CASE] [CASE...]
       scripts/golden_reference_check.py --random N --ctp PATH [--seed S] [--keep DIR]
Exit status 0 when every case matches, 1 otherwise.
"""
import argparse
import contextlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "golden"))

from paddle_stand_in import Program, format_op, install_fake_paddle, load_reference  # noqa: E402
import random_cases  # noqa: E402

# ---------------------------------------------------------------- cases

ENV_KEYS = {"fuse_allreduce": "PADDLE_FUSE_ALLREDUCE", "loss_scale": "PADDLE_LOSS_SCALE",
            "selected_gpus": "FLAGS_selected_gpus"}

# legacy op -> (Paddle 3 op, {legacy slot: Paddle 3 slot})
PADDLE3_SPELLING = {"c_broadcast": ("broadcast", {"X": "x", "Out": "out"}),
                    "c_allgather": ("all_gather", {"X": "x", "Out": "out"}),
                    "c_comm_init_all": ("comm_init_all", {})}


def spell_paddle3(program):
    """Renames the ops Paddle's later collective.py writes differently."""
    for op in program.global_block().ops:
        if op.type in PADDLE3_SPELLING:
            op.type, slots = PADDLE3_SPELLING[op.type]
            op.inputs = [(slots.get(k, k), v) for k, v in op.inputs]
            op.outputs = [(slots.get(k, k), v) for k, v in op.outputs]


class NotInReference(Exception):
    """A case of a transpiler the reference has no class for (docs/extending.md)."""


def run_reference(reference, names, case_dir, dialect="legacy"):
    with open(os.path.join(case_dir, "options.json")) as f:
        options = json.load(f)
    with open(os.path.join(case_dir, "startup.json")) as f:
        startup = Program.from_json(json.load(f))
    with open(os.path.join(case_dir, "main.json")) as f:
        main = Program.from_json(json.load(f))
    for key, env in ENV_KEYS.items():
        if key in options:
            os.environ[env] = str(options[key])
        else:
            os.environ.pop(env, None)
    names.ids.clear()
    mode = options["mode"]
    kwargs = {"nrings": options["nrings"]} if "nrings" in options else {}
    if mode == "grad_allreduce":
        t = reference.GradAllReduce(**kwargs)
    elif mode == "local_sgd":
        t = reference.LocalSGD(**kwargs)
    elif mode == "single_process_multi_thread":
        t = reference.SingleProcessMultiThread()
    elif mode == "multi_thread":
        t = reference.MultiThread(trans_mode=options.get("trans_mode", "fuse_all_reduce"),
                                  **kwargs)
    else:
        raise NotInReference(mode)
    endpoints = options["endpoints"]
    rank = options["rank"]
    current = options.get("current_endpoint", endpoints[rank] if 0 <= rank < len(endpoints)
                          else "")
    with contextlib.redirect_stdout(io.StringIO()):
        t.transpile(startup, main, rank, ",".join(endpoints), current,
                    options.get("wait_port", False))
    if dialect == "paddle3":
        spell_paddle3(startup)
        spell_paddle3(main)
    return ([format_op(op) for op in startup.global_block().ops],
            [format_op(op) for op in main.global_block().ops])


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def first_difference(expected, actual):
    for i, (e, a) in enumerate(zip(expected, actual)):
        if e != a:
            return f"line {i + 1}:\n  expected (ctp):      {e}\n  reference produced: {a}"
    return (f"expected {len(expected)} lines, the reference produced {len(actual)}"
            f" (first extra: {(actual + expected)[min(len(expected), len(actual))]})")


def check_case(reference, names, case_dir):
    """Returns None when the case matches, else a message."""
    error_file = os.path.join(case_dir, "error.expected.txt")
    try:
        startup, main = run_reference(reference, names, case_dir)
    except NotInReference:
        raise
    except Exception as e:  # the reference's own exceptions are what some cases expect
        if os.path.exists(error_file):
            want = read_lines(error_file)[0]
            if type(e).__name__ == want:
                return None
            return f"expected {want}, the reference raised {type(e).__name__}: {e}"
        return f"the reference raised {type(e).__name__}: {e}"
    if os.path.exists(error_file):
        return f"expected {read_lines(error_file)[0]}, the reference raised nothing"
    for dialect, suffix in (("legacy", ""), ("paddle3", ".paddle3")):
        if dialect != "legacy":
            startup, main = run_reference(reference, names, case_dir, dialect)
        for name, actual in (("startup", startup), ("main", main)):
            path = os.path.join(case_dir, f"{name}{suffix}.expected.txt")
            if not os.path.exists(path):
                return f"{path} is missing"
            expected = read_lines(path)
            if expected != actual:
                return f"{name}{suffix}: " + first_difference(expected, actual)
    return None


def ctp_op_lines(text):
    """Block 0's op lines from `ctp transpile --emit text` output."""
    return [line[len("  op "):] for line in text.splitlines() if line.startswith("  op ")]


def run_ctp(ctp, case_dir, options, out_dir):
    env = {k: v for k, v in os.environ.items() if k not in ENV_KEYS.values()}
    cmd = [ctp, "transpile", *random_cases.cli_arguments(options),
           "--startup", os.path.join(case_dir, "startup.json"),
           "--main", os.path.join(case_dir, "main.json"), "-o", out_dir, "--emit", "text"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return done.returncode, done.stderr.strip()
    with open(os.path.join(out_dir, "startup.txt")) as f:
        startup = ctp_op_lines(f.read())
    with open(os.path.join(out_dir, "main.txt")) as f:
        main = ctp_op_lines(f.read())
    return 0, (startup, main)


def random_check(reference, names, args):
    rng = random.Random(args.seed)
    failures = 0
    outcomes = {"both succeeded": 0, "both failed": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.random):
            case_dir = os.path.join(tmp, f"random_{i}")
            os.makedirs(case_dir)
            startup, main = random_cases.random_programs(rng)
            options = random_cases.random_options(rng)
            for name, value in (("startup", startup), ("main", main), ("options", options)):
                with open(os.path.join(case_dir, name + ".json"), "w") as f:
                    json.dump(value, f)
            try:
                want = run_reference(reference, names, case_dir,
                                     options.get("op_dialect", "legacy"))
            except Exception as e:  # noqa: BLE001 - any reference failure must be mirrored
                want = e
            code, got = run_ctp(args.ctp, case_dir, options, os.path.join(tmp, f"out_{i}"))
            problem = None
            if isinstance(want, Exception):
                if code != 1:
                    problem = (f"the reference raised {type(want).__name__}: {want}; ctp "
                               f"exited {code}")
                else:
                    outcomes["both failed"] += 1
            elif code != 0:
                problem = f"ctp failed (exit {code}): {got}"
            elif got != want:
                which = "startup" if got[0] != want[0] else "main"
                k = 0 if which == "startup" else 1
                problem = which + ": " + first_difference(got[k], want[k])
            else:
                outcomes["both succeeded"] += 1
            if problem:
                failures += 1
                kept = ""
                if args.keep:
                    dest = os.path.join(args.keep, f"random_seed{args.seed}_{i}")
                    shutil.copytree(case_dir, dest, dirs_exist_ok=True)
                    kept = f" (saved in {dest})"
                print(f"FAIL random case {i}{kept}: {problem}")
    print(f"{args.random - failures}/{args.random} random cases agree "
          f"({outcomes['both succeeded']} transpiled alike, {outcomes['both failed']} "
          f"failed on both sides)")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--golden", default=os.path.join(REPO, "tests", "golden"))
    parser.add_argument("--reference",
                        default=os.path.join(REPO, "..", "shared", "reference", "collective.py"))
    parser.add_argument("--print", dest="print_case", metavar="CASE",
                        help="print the reference's op sequences for one case and exit")
    parser.add_argument("--random", type=int, metavar="N",
                        help="check N random cases against `ctp transpile` instead")
    parser.add_argument("--ctp", help="the ctp executable (with --random)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (with --random)")
    parser.add_argument("--keep", metavar="DIR", help="save differing random cases here")
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args()
    if not os.path.exists(args.reference):
        print(f"reference not found: {args.reference}", file=sys.stderr)
        return 2
    names, _ = install_fake_paddle()
    reference = load_reference(args.reference)
    if args.random:
        if not args.ctp:
            parser.error("--random needs --ctp PATH")
        return random_check(reference, names, args)
    if args.print_case:
        startup, main_ops = run_reference(reference, names,
                                          os.path.join(args.golden, args.print_case))
        print("# startup\n" + "\n".join(startup) + "\n# main\n" + "\n".join(main_ops))
        return 0
    cases = args.cases or sorted(
        d for d in os.listdir(args.golden)
        if os.path.exists(os.path.join(args.golden, d, "options.json")))
    failures = skipped = 0
    for name in cases:
        try:
            problem = check_case(reference, names, os.path.join(args.golden, name))
        except NotInReference as e:
            skipped += 1
            print(f"skip {name}: the reference has no transpiler '{e}'")
            continue
        if problem:
            failures += 1
            print(f"FAIL {name}: {problem}")
        else:
            print(f"ok   {name}")
    print(f"{len(cases) - failures - skipped}/{len(cases)} golden cases match the reference"
          + (f" ({skipped} skipped: no such class in the reference)" if skipped else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
