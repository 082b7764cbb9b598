"""Writes a startup program (ctp's JSON) that gives every parameter of a real
inference model values, so that `ctp run` can time the model: Paddle's saved
inference programs carry no parameter values. Every persistable LOD_TENSOR an
op reads gets uniform values in [-0.1, 0.1) (seeded), batch_norm's variances
1: the same values tests/realworld_inference_util.h gives them.

  ctp dump MODEL > model.json
  python3 bench/gpu/realworld_startup.py model.json startup.json

Standard library only (any python3).
"""
import json
import sys

FP32 = {"FP32": 5, "FP64": 6, "FP16": 4, "BF16": 22, "INT32": 2, "INT64": 3}


def attr(kind, value):
    return {"type": kind, "value": value}


def startup_for(main):
    block = main["blocks"][0]
    read, variances = set(), set()
    for op in block["ops"]:
        for names in op.get("inputs", {}).values():
            read.update(names)
        if op["type"] == "batch_norm":
            variances.update(op["inputs"].get("Variance", []))
    out_vars, ops, seed = [], [], 1
    for var in block["vars"]:
        if not var.get("persistable") or var.get("type") != "LOD_TENSOR":
            continue
        if var["name"] not in read:
            continue
        out_vars.append({"name": var["name"], "type": "LOD_TENSOR", "dtype": var["dtype"],
                         "shape": var["shape"], "persistable": True})
        attrs = {"shape": attr("LONGS", var["shape"]),
                 "dtype": attr("INT", FP32[var["dtype"]])}
        if var["name"] in variances:
            attrs["value"] = attr("FLOAT", 1.0)
            kind = "fill_constant"
        else:
            attrs.update(min=attr("FLOAT", -0.1), max=attr("FLOAT", 0.1),
                         seed=attr("INT", seed))
            seed += 1
            kind = "uniform_random"
        ops.append({"type": kind, "inputs": {}, "outputs": {"Out": [var["name"]]},
                    "attrs": attrs})
    return {"version": 0, "blocks": [{"idx": 0, "parent_idx": -1, "vars": out_vars,
                                      "ops": ops}]}


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: realworld_startup.py MODEL.json STARTUP.json")
    with open(sys.argv[1]) as f:
        main_program = json.load(f)
    with open(sys.argv[2], "w") as f:
        json.dump(startup_for(main_program), f)


if __name__ == "__main__":
    main()
