"""ctp.transpile gives the bytes `ctp transpile` writes, for every golden case
(tests/golden: every mode), in both op dialects and for every rank at once,
and refuses what the command line refuses."""
import json
import os
import subprocess

import pytest

import ctp
from conftest import SOURCE_DIR

GOLDEN = SOURCE_DIR / "tests" / "golden"
CASES = sorted(p.name for p in GOLDEN.iterdir() if (p / "options.json").is_file())
COLLECTIVE_KEYS = {"mode", "rank", "endpoints", "nrings", "current_endpoint", "wait_port",
                   "params"}
# What `ctp transpile` reads from the environment; the library never does.
PADDLE_VARIABLES = {"PADDLE_FUSE_ALLREDUCE", "PADDLE_LOSS_SCALE", "FLAGS_selected_gpus"}


def case_options(name):
    options = json.loads((GOLDEN / name / "options.json").read_text())
    options.setdefault("params", "marked")  # the golden cases' semantics (golden_test.cc)
    return options


def flag_text(value):
    return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)


def cli_flags(options):
    flags = ["--mode", options["mode"], "--endpoints", ",".join(options["endpoints"]),
             "--params", options["params"]]
    if "rank" in options:
        flags += ["--rank", str(options["rank"])]
    for key in ("nrings", "current_endpoint"):
        if key in options:
            flags += ["--" + key.replace("_", "-"), str(options[key])]
    if options.get("wait_port"):
        flags.append("--wait-port")
    for key, value in options.items():
        if key not in COLLECTIVE_KEYS:
            flags += ["--" + key.replace("_", "-"), flag_text(value)]
    return flags


def python_settings(options):
    return {k: v for k, v in options.items() if k not in COLLECTIVE_KEYS | {"rank"}}


def run_cli(ctp_cli, flags, case, out_dir):
    env = {k: v for k, v in os.environ.items() if k not in PADDLE_VARIABLES}
    return subprocess.run(
        [ctp_cli, "transpile", *flags, "--startup", str(GOLDEN / case / "startup.json"),
         "--main", str(GOLDEN / case / "main.json"), "-o", str(out_dir)],
        capture_output=True, text=True, env=env)


def inputs(case):
    return (ctp.load(str(GOLDEN / case / "startup.json")),
            ctp.load(str(GOLDEN / case / "main.json")))


def python_transpile(case, options, **extra):
    startup, main = inputs(case)
    return ctp.transpile(startup, main, mode=options["mode"], endpoints=options["endpoints"],
                         rank=options["rank"], current_endpoint=options.get("current_endpoint"),
                         nrings=options.get("nrings"), params=options["params"],
                         wait_port=options.get("wait_port", False),
                         **python_settings(options), **extra)


@pytest.mark.parametrize("dialect", ["legacy", "paddle3"])
@pytest.mark.parametrize("case", CASES)
def test_same_bytes_as_the_command_line(ctp_cli, tmp_path, case, dialect):
    options = case_options(case)
    cli = run_cli(ctp_cli, cli_flags(options) + ["--op-dialect", dialect], case, tmp_path)
    if cli.returncode != 0:
        with pytest.raises(ctp.Error) as caught:
            python_transpile(case, options, op_dialect=dialect)
        assert str(caught.value) in cli.stderr, cli.stderr
        return
    startup, main = python_transpile(case, options, op_dialect=dialect)
    assert startup.to_bytes("proto") == (tmp_path / "startup.pb").read_bytes()
    assert main.to_bytes("proto") == (tmp_path / "main.pb").read_bytes()


def first_case_of_each_mode():
    seen = {}
    for case in CASES:
        options = case_options(case)
        if "error" not in case and options["mode"] not in seen:
            seen[options["mode"]] = case
    return sorted(seen.values())


@pytest.mark.parametrize("case", first_case_of_each_mode())
def test_every_rank_at_once(ctp_cli, tmp_path, case):
    options = case_options(case)
    flags = cli_flags(options)
    at = flags.index("--rank")
    del flags[at:at + 2]
    if "--current-endpoint" in flags:
        at = flags.index("--current-endpoint")
        del flags[at:at + 2]
    cli = run_cli(ctp_cli, flags + ["--all-ranks"], case, tmp_path)
    assert cli.returncode == 0, cli.stderr
    startup, main = inputs(case)
    ranks = ctp.transpile_all_ranks(startup, main, mode=options["mode"],
                                    endpoints=options["endpoints"], nrings=options.get("nrings"),
                                    params=options["params"], **python_settings(options))
    assert len(ranks) == len(options["endpoints"])
    for rank, result in enumerate(ranks):
        expected = tmp_path / f"rank_{rank}"
        assert result.startup.to_bytes() == (expected / "startup.pb").read_bytes(), rank
        assert result.main.to_bytes() == (expected / "main.pb").read_bytes(), rank
    assert ranks[0].main == ranks[1].main and ranks[0].startup != ranks[1].startup


def test_bucket_setting_and_parameters(ctp_cli, tmp_path):
    case = "grad_allreduce_adam_n2_r1_ring1_multihost"
    options = dict(case_options(case), bucket_mb=0.001)
    cli = run_cli(ctp_cli, cli_flags(options), case, tmp_path)
    assert cli.returncode == 0, cli.stderr
    result = python_transpile(case, options)
    assert result.main.to_bytes() == (tmp_path / "main.pb").read_bytes()
    assert result.parameters and result.parameter_note in cli.stderr


def test_inputs_are_not_changed():
    case = "grad_allreduce_adam_n2_r1_ring1_multihost"
    startup, main = inputs(case)
    before = (startup.copy(), main.copy())
    ctp.transpile(startup, main, mode="grad_allreduce", rank=0, endpoints=["a:1", "b:2"])
    assert (startup, main) == before


def test_refuses_what_the_command_line_refuses():
    startup, main = inputs("grad_allreduce_sgd_n2_r0_ring1")
    job = dict(rank=0, endpoints=["127.0.0.1:6170", "127.0.0.1:6171"])
    with pytest.raises(ctp.Error, match="not one of"):
        ctp.transpile(startup, main, mode="multi_thread", trans_mode="scatter", **job)
    with pytest.raises(ctp.Error, match="bucket_mb applies to mode grad_allreduce only"):
        ctp.transpile(startup, main, mode="local_sgd", bucket_mb=1, **job)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bucket'"):
        ctp.transpile(startup, main, mode="grad_allreduce", bucket=1, **job)
    with pytest.raises(ctp.Error, match="unknown transpiler 'nope'") as caught:
        ctp.transpile(startup, main, mode="nope", **job)
    assert not caught.value.place and caught.value.message == str(caught.value)
    with pytest.raises(ctp.Error, match="rank 2 has no entry in the endpoints"):
        ctp.transpile(startup, main, mode="grad_allreduce", rank=2, endpoints=job["endpoints"])
    with pytest.raises(ctp.Error, match="unknown parameter source .all."):
        ctp.transpile(startup, main, mode="grad_allreduce", params="all", **job)
    assert set(ctp.transpilers()) == {"grad_allreduce", "local_sgd",
                                      "single_process_multi_thread", "multi_thread"}


def test_a_pass_error_carries_its_place():
    case = "multi_thread_error_odd_role_var"
    with pytest.raises(ctp.Error) as caught:
        python_transpile(case, case_options(case))
    error = caught.value
    place = error.place
    assert place.pass_name == "multi_thread main"
    assert (place.block, place.op, place.op_type, place.attr_name) == (0, 14, "mul_grad",
                                                                        "op_role_var")
    assert place.source is None and place.rank is None
    assert str(error) == f"{place}: {error.message}"
    assert error.message.startswith("has odd length 1")
