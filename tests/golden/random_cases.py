"""Random transpile cases for a differential check of ctp against the reference:
random Paddle-like programs (params of mixed dtypes, some distributed; backward
ops with zero to three op_role_var pairs; loss-gradient ops; update ops of
several optimizers, some incomplete; role bits combined) and random options for
every mode. scripts/golden_reference_check.py --random N runs each case through
the reference (with the stand-in paddle) and through `ctp transpile`, and
requires the same op lines, or both to fail.
"""
import random

FORWARD, BACKWARD, OPTIMIZE, LRSCHED, LOSS = 0x0, 0x1, 0x2, 0x10, 0x100


def _attr(type_, value):
    return {"type": type_, "value": value}


def _var(name, dtype="FP32", shape=(4,), **flags):
    v = {"name": name, "dtype": dtype, "shape": list(shape)}
    v.update({k: True for k, on in flags.items() if on})
    return v


def random_programs(rng):
    nparams = rng.choice([0, 1, 2, 3, 5, 8, 12])
    params = []
    for i in range(nparams):
        params.append({"name": f"p{i}", "dtype": rng.choice(["FP32", "FP32", "FP16"]),
                       "shape": [rng.randint(1, 8)] * rng.randint(1, 2),
                       "distributed": rng.random() < 0.2})
    startup_vars, startup_ops = [], []
    for p in rng.sample(params, len(params)):  # declaration order differs from main's
        startup_vars.append(_var(p["name"], p["dtype"], p["shape"], persistable=True,
                                 is_parameter=True, is_distributed=p["distributed"]))
        startup_ops.append({"type": "uniform_random", "inputs": {}, "outputs": {"Out": [p["name"]]},
                            "attrs": {"op_role": _attr("INT", FORWARD)}})
    main_vars = [_var("x"), _var("lr", shape=(1,), persistable=True)]
    for p in params:
        main_vars.append(_var(p["name"], p["dtype"], p["shape"], persistable=True,
                              is_parameter=True, is_distributed=p["distributed"]))
        main_vars.append(_var(p["name"] + "@GRAD", p["dtype"], p["shape"]))
        for s in ("m1", "m2", "b1", "b2"):
            main_vars.append(_var(f"{p['name']}_{s}", "FP32", p["shape"], persistable=True))
    ops = []
    nops = rng.randint(3, 30)
    tmp = 0
    for _ in range(nops):
        kind = rng.choices(["fwd", "loss", "lossgrad", "bwd", "opt", "lr"],
                           weights=[4, 1, 1, 5, 3, 1])[0]
        tmp += 1
        out = f"t{tmp}"
        main_vars.append(_var(out))
        if kind == "fwd":
            ops.append({"type": "relu", "inputs": {"X": ["x"]}, "outputs": {"Out": [out]},
                        "attrs": {"op_role": _attr("INT", FORWARD)}})
        elif kind == "loss":
            ops.append({"type": "mean", "inputs": {"X": ["x"]}, "outputs": {"Out": [out]},
                        "attrs": {"op_role": _attr("INT", FORWARD | LOSS)}})
        elif kind == "lossgrad":
            outs = {"Out": [out]} if rng.random() < 0.95 else {}
            ops.append({"type": "fill_constant", "inputs": {}, "outputs": outs,
                        "attrs": {"op_role": _attr("INT", BACKWARD | LOSS),
                                  "value": _attr("FLOAT", 1.0)}})
        elif kind == "bwd":
            pairs = []
            for p in rng.sample(params, min(len(params), rng.choice([0, 1, 1, 1, 2, 3]))):
                pairs += [p["name"], p["name"] + "@GRAD"]
            if pairs and rng.random() < 0.03:
                pairs = pairs[:-1]  # odd: an error on both sides
            if pairs and rng.random() < 0.03:
                pairs[-1] = "undeclared@GRAD"
            role = rng.choice([BACKWARD, BACKWARD, BACKWARD, BACKWARD | OPTIMIZE])
            attrs = {"op_role": _attr("INT", role)}
            if pairs or rng.random() < 0.5:
                attrs["op_role_var"] = _attr("STRINGS", pairs)
            ops.append({"type": "some_grad", "inputs": {"X": ["x"]}, "outputs": {"Out": [out]},
                        "attrs": attrs})
        elif kind == "opt" and params:
            p = rng.choice(params)["name"]
            type_ = rng.choice(["sgd", "momentum", "adam", "adam", "lamb"])
            ins = {"Param": [p], "Grad": [p + "@GRAD"], "LearningRate": ["lr"]}
            outs = {"ParamOut": [p]}
            attrs = {"op_role": _attr("INT", rng.choice([OPTIMIZE, OPTIMIZE, OPTIMIZE | LRSCHED])),
                     "op_role_var": _attr("STRINGS", [p, p + "@GRAD"])}
            if type_ in ("adam", "lamb"):
                ins.update({"Moment1": [p + "_m1"], "Moment2": [p + "_m2"],
                            "Beta1Pow": [p + "_b1"], "Beta2Pow": [p + "_b2"]})
                outs.update({"Moment1Out": [p + "_m1"], "Moment2Out": [p + "_m2"],
                             "Beta1PowOut": [p + "_b1"], "Beta2PowOut": [p + "_b2"]})
                attrs.update({"beta1": _attr("FLOAT", 0.9), "beta2": _attr("FLOAT", 0.999),
                              "epsilon": _attr("FLOAT", 1e-8)})
                if type_ == "adam":
                    attrs.update({"lazy_mode": _attr("BOOLEAN", False),
                                  "min_row_size_to_use_multithread": _attr("LONG", 1000)})
            ops.append({"type": type_, "inputs": ins, "outputs": outs, "attrs": attrs})
        else:
            ops.append({"type": "increment", "inputs": {"X": ["lr"]}, "outputs": {"Out": ["lr"]},
                        "attrs": {"op_role": _attr("INT", LRSCHED)}})

    def program(vars_, ops_):
        return {"version": 0, "blocks": [{"idx": 0, "parent_idx": -1, "vars": vars_,
                                          "ops": ops_}]}
    return program(startup_vars, startup_ops), program(main_vars, ops)


def random_options(rng):
    mode = rng.choice(["grad_allreduce", "local_sgd", "single_process_multi_thread",
                       "multi_thread"])
    nranks = rng.choice([1, 2, 2, 3, 4, 8])
    hosts = rng.choice([1, 2, nranks])
    endpoints = [(f"10.0.0.{r % hosts + 1}" if hosts > 1 else "127.0.0.1") + f":{6170 + r}"
                 for r in range(nranks)]
    rank = rng.randrange(nranks)
    opts = {"mode": mode, "rank": rank, "endpoints": endpoints,
            "current_endpoint": endpoints[rank]}
    if mode != "single_process_multi_thread" and rng.random() < 0.8:
        opts["nrings"] = rng.randint(1, 3)
    if mode == "multi_thread":
        opts["trans_mode"] = rng.choice(["fuse_all_reduce", "all_gather", "all_reduce"])
    if mode == "single_process_multi_thread":
        if rng.random() < 0.7:
            opts["fuse_allreduce"] = rng.randint(0, 2)
        if rng.random() < 0.5:
            opts["loss_scale"] = rng.randint(0, 1)
    if mode in ("single_process_multi_thread", "multi_thread") and rng.random() < 0.7:
        opts["selected_gpus"] = ",".join(str(i) for i in range(rng.randint(1, 4)))
    opts["op_dialect"] = rng.choice(["legacy", "paddle3"])
    return opts


def cli_arguments(opts):
    """`ctp transpile` flags for a case's options."""
    # The reference takes the parameters marked is_parameter.
    args = ["--mode", opts["mode"], "--rank", str(opts["rank"]),
            "--endpoints", ",".join(opts["endpoints"]),
            "--current-endpoint", opts["current_endpoint"], "--params", "marked"]
    for key, flag in (("nrings", "--nrings"), ("trans_mode", "--trans-mode"),
                      ("fuse_allreduce", "--fuse-allreduce"), ("loss_scale", "--loss-scale"),
                      ("selected_gpus", "--selected-gpus"), ("op_dialect", "--op-dialect")):
        if key in opts:
            args += [flag, str(opts[key])]
    return args
