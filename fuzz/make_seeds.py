#!/usr/bin/env python3
"""Writes the fuzzers' seed corpus (fuzz/corpus/TARGET/) from a few golden
programs (tests/golden/, op_callstack attributes dropped to keep seeds small)
and hand-made edge cases. The corpus is checked in; re-run this after the
program format changes:

    python3 fuzz/make_seeds.py --ctp build/ctp
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN = os.path.join(ROOT, "tests", "golden")
CORPUS = os.path.join(ROOT, "fuzz", "corpus")

MODES = ["grad_allreduce", "local_sgd", "single_process_multi_thread", "multi_thread"]
# Per mode, golden cases whose programs seed its transpile target.
TRANSPILE_CASES = {
    "grad_allreduce": ["grad_allreduce_sgd_n2_r0_ring1", "grad_allreduce_shared_param_n4_r2_ring2",
                       "grad_allreduce_error_no_params"],
    "local_sgd": ["local_sgd_sgd_n2_r0_ring1", "local_sgd_momentum_n4_r2_ring2_multihost"],
    "single_process_multi_thread": ["spmt_fuse1_one_endpoint_sgd", "spmt_fp16_two_hosts_n2_r0"],
    "multi_thread": ["multi_thread_allgather_adam_n4_r3_ring2_default_gpus",
                     "multi_thread_fuse_mixed_fp16_n4_r0_ring2",
                     "multi_thread_allreduce_n4_r1_ring2_multihost"],
}


# --- protobuf encoding, for the hand-made cases ---

def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def key(field, wire):
    return varint((field << 3) | wire)


def vfield(field, v):
    return key(field, 0) + varint(v)


def bfield(field, payload):
    if isinstance(payload, str):
        payload = payload.encode()
    return key(field, 2) + varint(len(payload)) + payload


def f32field(field, x):
    return key(field, 5) + struct.pack("<f", x)


def f64field(field, x):
    return key(field, 1) + struct.pack("<d", x)


def tensor_var(name, dtype=5, dims=(-1, 4), packed=False, persistable=False, param=False):
    if packed:
        dims_bytes = bfield(2, b"".join(varint(d) for d in dims))
    else:
        dims_bytes = b"".join(vfield(2, d) for d in dims)
    tensor = vfield(1, dtype) + dims_bytes
    var_type = vfield(1, 7) + bfield(3, bfield(1, tensor) + vfield(2, 0))
    out = bfield(1, name) + bfield(2, var_type)
    if persistable:
        out += vfield(3, 1)
    if param:
        out += vfield(5, 1)
    return out


def slot(name, *args):
    return bfield(1, name) + b"".join(bfield(2, a) for a in args)


def attr(name, type_, value_bytes):
    return bfield(1, name) + vfield(2, type_) + value_bytes


def op(type_, inputs=(), outputs=(), attrs=(), extra=b""):
    out = b"".join(bfield(1, s) for s in inputs) + b"".join(bfield(2, s) for s in outputs)
    out += bfield(3, type_) + b"".join(bfield(4, a) for a in attrs) + extra
    return out


def block(idx, parent, vars_=(), ops=(), extra=b""):
    return (vfield(1, idx) + vfield(2, parent) + b"".join(bfield(3, v) for v in vars_) +
            b"".join(bfield(4, o) for o in ops) + extra)


def program(*blocks, extra=b""):
    return b"".join(bfield(1, b) for b in blocks) + extra


def handmade_protos():
    role = attr("op_role", 0, vfield(3, 0))
    every_attr_type = [
        attr("f_nan", 1, f32field(4, math.nan)), attr("f_inf", 1, f32field(4, -math.inf)),
        attr("s", 2, bfield(5, "\xff\xfe not utf-8".encode("latin-1"))),
        attr("ints_packed", 3, bfield(6, varint(1) + varint(-2) + varint(2**31 - 1))),
        attr("floats", 4, f32field(7, 0.5) + f32field(7, -0.0)),
        attr("strings", 5, bfield(8, "a") + bfield(8, "")),
        attr("b", 6, vfield(10, 1)), attr("bools", 7, bfield(11, b"\x01\x00\x01")),
        attr("sub_block", 8, vfield(12, 1)), attr("l", 9, vfield(13, -(2**63))),
        attr("blocks", 10, vfield(14, 0) + vfield(14, 1)),
        attr("longs", 11, bfield(15, varint(2**40) + varint(-1))),
        attr("f64s", 12, bfield(16, struct.pack("<dd", 1e308, math.nan))),
        attr("var", 13, bfield(17, "x")), attr("vars", 14, bfield(18, "x") + bfield(18, "y")),
        attr("f64", 15, f64field(19, -1.5)), attr("scalar", 16, bfield(20, vfield(1, 3))),
        attr("scalars", 17, bfield(21, b"") + bfield(21, vfield(1, 1))), role,
    ]
    group = key(99, 3) + vfield(1, 7) + key(98, 3) + key(98, 4) + key(99, 4)
    sub = block(1, 0, [tensor_var("y", packed=True)],
                [op("scale", [slot("X", "y")], [slot("Out", "y")], [role])])
    return {
        "every_attr_type.pb": program(
            block(0, -1, [tensor_var("x", dims=(2**40, 3)), tensor_var("y", dtype=4)],
                  [op("conditional_block", [slot("Input", "x")], [slot("Out", "y")],
                      every_attr_type)]), sub),
        "unknown_fields_and_groups.pb": program(
            block(0, -1, [tensor_var("x") + bfield(50, "kept")],
                  [op("custom_op", [slot("X", "x")], [], [role], extra=group + vfield(77, 5))],
                  extra=f32field(60, 1.0)),
            extra=vfield(4, 0) + bfield(5, bfield(1, bfield(1, "scale") + bfield(2, vfield(1, 1))))
            + bfield(3, b"\x0a\x00") + group),
        "truncated.pb": program(block(0, -1, [tensor_var("x")]))[:-3],
        "deep_groups.pb": b"".join(key(9, 3) for _ in range(70)) + b"".join(
            key(9, 4) for _ in range(70)),
        "huge_length.pb": key(1, 2) + varint(2**62) + b"\x08\x00",
        "ten_byte_varint.pb": key(4, 0) + b"\xff" * 9 + b"\x01",
    }


def handmade_json():
    op_attrs = {"op_role": {"type": "INT", "value": 0}}
    return {
        "empty_blocks.json": '{"blocks":[]}',
        "specials.json": json.dumps({"version": 1, "blocks": [{"idx": 0, "parent_idx": -1, "vars": [
            {"name": "x\u00e9\u2603", "type": "LOD_TENSOR", "dtype": "FP16", "shape": [-1, 9007199254740993],
             "attrs": {"a": {"type": "INTS", "ints": [1, -2]}}, "unknown_fields": "kAMB"},
            {"name": "r", "type": "RAW"}],
            "ops": [{"type": "scale", "inputs": {"X": ["x"]}, "outputs": {"Out": ["x"]}, "attrs": {
                "op_role": {"type": "INT", "value": 256}, "scale": {"type": "FLOAT", "value": "NaN(0x7fc00001)"},
                "bias": {"type": "FLOAT", "value": "-Infinity"}, "f64s": {"type": "FLOAT64S", "value": [1e308, "NaN", -0.0]},
                "scalar": {"type": "SCALAR", "value": "CAM="}, "b": {"type": "BOOLEANS", "value": [True, False]},
                "sub": {"type": "BLOCK", "value": 0}}}]}],
            "op_version_map": [{"op_name": "scale", "version": 1}]}, separators=(",", ":")),
        "deep_nesting.json": '{"blocks":[{"idx":0,"parent_idx":-1,"unknown_fields":' + "[" * 70 + "]" * 70 + "}]}",
        "duplicate_key.json": '{"blocks":[{"idx":0,"idx":1,"parent_idx":-1}]}',
        "escapes.json": '{"blocks":[{"idx":0,"parent_idx":-1,"vars":[{"name":"\\ud83d\\ude00\\u0000\\"","type":"RAW"}],"ops":[{"type":"t","attrs":'
                        + json.dumps(op_attrs) + "}]}]}",
    }


def npy(descr, shape, data, major=1):
    shape_text = "(" + "".join(f"{d}, " for d in shape).rstrip(" ")
    shape_text = shape_text[:-1] + ")" if len(shape) > 1 else shape_text + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    prefix = 10 if major == 1 else 12
    header += " " * ((64 - (prefix + len(header) + 1) % 64) % 64) + "\n"
    size = struct.pack("<H", len(header)) if major == 1 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes([major, 0]) + size + header.encode() + data


def handmade_npy():
    return {
        "f4_2x3.npy": npy("<f4", (2, 3), struct.pack("<6f", 1, -2, 0.5, math.inf, math.nan, -0.0)),
        "f8_scalar.npy": npy("<f8", (), struct.pack("<d", 3.25)),
        "i8_v2.npy": npy("<i8", (2,), struct.pack("<2q", -1, 2**62), major=2),
        "f2_empty.npy": npy("<f2", (0, 5), b""),
        "b1_u1.npy": npy("|b1", (3,), b"\x01\x00\x01"),
        "i4_native_order.npy": npy("=i4", (1,), struct.pack("<i", 7)),
        "huge_shape.npy": npy("<f4", (1000000000000,), b"\x00" * 4),
        "long_digits.npy": npy("<f4", (99999999999999999999,), b""),
    }


def compact_golden(case, name):
    """The golden program without op_callstack, as compact JSON text."""
    with open(os.path.join(GOLDEN, case, name)) as f:
        prog = json.load(f)
    for blk in prog["blocks"]:
        for o in blk.get("ops", []):
            o.get("attrs", {}).pop("op_callstack", None)
    return json.dumps(prog, separators=(",", ":"))


class Converter:
    def __init__(self, ctp):
        self.ctp = ctp
        self.tmp = tempfile.mkdtemp()

    def to_proto(self, json_text):
        src = os.path.join(self.tmp, "in.json")
        dst = os.path.join(self.tmp, "out.pb")
        with open(src, "w") as f:
            f.write(json_text)
        subprocess.run([self.ctp, "dump", src, "--emit", "proto", "-o", dst], check=True)
        with open(dst, "rb") as f:
            return f.read()


def gpu_count(options, default):
    gpus = options.get("selected_gpus")
    return gpus.count(",") + 1 if gpus else default


def transpile_header(options, mode):
    """The 7 option bytes fuzz_support.h's cut_transpile_input() reads."""
    endpoints = options["endpoints"]
    ranks = min(len(endpoints), 8)
    hosts = [e.rsplit(":", 1)[0] for e in endpoints[:ranks]]
    host_index = [sorted(set(hosts), key=hosts.index).index(h) for h in hosts]
    layouts = {0: [0] * ranks, 1: [r % 2 for r in range(ranks)], 2: list(range(ranks)),
               3: [r // 2 for r in range(ranks)]}
    layout = next((k for k, v in layouts.items() if v == host_index), 1)
    byte0 = (ranks - 1) | (8 if options.get("wait_port") else 0) | (layout << 4)
    byte1 = options["rank"] % (ranks + 1)
    byte2 = (options["nrings"] + 1) & 7 if "nrings" in options else 0
    current = options.get("current_endpoint", endpoints[options["rank"]])
    byte3 = endpoints.index(current) if current in endpoints else ranks
    byte4 = 0
    if mode == "single_process_multi_thread":
        byte4 = options.get("fuse_allreduce", 1) % 3 | (4 if options.get("loss_scale", 1) else 0)
        byte4 |= ((gpu_count(options, 8) - 1) & 7) << 3
    elif mode == "multi_thread":
        trans = ["fuse_all_reduce", "all_gather", "all_reduce"].index(
            options.get("trans_mode", "fuse_all_reduce"))
        byte4 = trans | ((gpu_count(options, 9) - 1) << 2)
    return bytes([byte0, byte1, byte2, byte3, byte4])


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ctp", required=True, help="the built ctp tool (converts JSON to protobuf)")
    args = ap.parse_args()
    conv = Converter(args.ctp)
    shutil.rmtree(CORPUS, ignore_errors=True)

    small = "grad_allreduce_error_no_params"
    sgd = "grad_allreduce_sgd_n2_r0_ring1"
    sgd_main = compact_golden(sgd, "main.json")
    sgd_startup = compact_golden(sgd, "startup.json")
    for name, data in handmade_protos().items():
        for target in ("fuzz_proto_loader", "fuzz_proto_vs_libprotobuf", "fuzz_verify"):
            write(target, name, data)
    for target in ("fuzz_proto_loader", "fuzz_proto_vs_libprotobuf"):
        write(target, "golden_sgd_main.pb", conv.to_proto(sgd_main))
        write(target, "golden_sgd_startup.pb", conv.to_proto(sgd_startup))
    for name, data in handmade_npy().items():
        write("fuzz_npy", name, data)
    for name, text in handmade_json().items():
        write("fuzz_json_loader", name, text)
        write("fuzz_verify", name, text)
    write("fuzz_json_loader", "golden_no_params_main.json", compact_golden(small, "main.json"))
    write("fuzz_json_loader", "golden_sgd_main.json", sgd_main)
    write("fuzz_verify", "golden_sgd_main.pb", conv.to_proto(sgd_main))
    write("fuzz_verify", "golden_no_params_main.json", compact_golden(small, "main.json"))

    for mode in MODES:
        target = "fuzz_transpile_" + mode
        for case in TRANSPILE_CASES[mode]:
            with open(os.path.join(GOLDEN, case, "options.json")) as f:
                options = json.load(f)
            startup = conv.to_proto(compact_golden(case, "startup.json"))
            main_pb = conv.to_proto(compact_golden(case, "main.json"))
            header = transpile_header(options, mode) + struct.pack("<H", len(startup))
            write(target, case, header + startup + main_pb)
        # The same programs as JSON, and a main program with no startup.
        with open(os.path.join(GOLDEN, TRANSPILE_CASES[mode][0], "options.json")) as f:
            options = json.load(f)
        main_json = compact_golden(TRANSPILE_CASES[mode][0], "main.json")
        write(target, "json_main_no_startup",
              transpile_header(options, mode) + b"\x00\x00" + main_json.encode())
    shutil.rmtree(conv.tmp)


if __name__ == "__main__":
    main()
