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

Usage: scripts/golden_reference_check.py [--golden DIR] [--reference FILE]
                                         [--print CASE] [CASE...]
Exit status 0 when every case matches, 1 otherwise.
"""
import argparse
import contextlib
import copy
import importlib.util
import io
import json
import math
import os
import struct
import sys
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ---------------------------------------------------------------- attributes

VAR_KINDS = ["BOOL", "INT16", "INT32", "INT64", "FP16", "FP32", "FP64", "LOD_TENSOR",
             "SELECTED_ROWS", "FEED_MINIBATCH", "FETCH_LIST", "STEP_SCOPES", "LOD_RANK_TABLE",
             "LOD_TENSOR_ARRAY", "PLACE_LIST", "READER", "FETCH_VAR_LIST", "RAW", "TUPLE",
             "SIZE_T", "UINT8", "INT8", "BF16", "COMPLEX64", "COMPLEX128"]
KIND = {name: i for i, name in enumerate(VAR_KINDS)}
TENSOR_KINDS = {KIND["LOD_TENSOR"], KIND["SELECTED_ROWS"], KIND["LOD_TENSOR_ARRAY"]}


class TypedInt(int):
    atype = "INT"


class TypedLong(int):
    atype = "LONG"


class TypedFloat(float):
    atype = "FLOAT"


class TypedFloat64(float):
    atype = "FLOAT64"


class TypedStr(str):
    atype = "STRING"


class TypedList(list):
    def __init__(self, values, atype):
        super().__init__(values)
        self.atype = atype


def typed(atype, value):
    """A Python value that remembers its attribute type."""
    if atype in ("INT", "BLOCK"):
        return TypedInt(value)
    if atype == "LONG":
        return TypedLong(value)
    if atype == "FLOAT":
        return TypedFloat(value)
    if atype == "FLOAT64":
        return TypedFloat64(value)
    if atype == "BOOLEAN":
        return bool(value)
    if atype in ("STRING", "VAR", "SCALAR"):
        return TypedStr(value)
    return TypedList(value, atype)


# Attribute types of the attrs collective.py sets, from Paddle's op protos; used
# where a Python value alone does not decide the type (an empty list).
PROTO_ATTR_TYPES = {"other_endpoints": "STRINGS", "devices": "INTS", "op_role_var": "STRINGS"}


def attr_type_of(name, value):
    if hasattr(value, "atype"):
        return value.atype
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "INT"
    if isinstance(value, float):
        return "FLOAT"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, (list, tuple)):
        if name in PROTO_ATTR_TYPES:
            return PROTO_ATTR_TYPES[name]
        if value and all(isinstance(v, str) for v in value):
            return "STRINGS"
        if value and all(isinstance(v, bool) for v in value):
            return "BOOLEANS"
        if value and all(isinstance(v, int) for v in value):
            return "INTS"
        if value and all(isinstance(v, (int, float)) for v in value):
            return "FLOATS"
    raise TypeError(f"attribute {name}: cannot type value {value!r}")


# ---------------------------------------------------------------- text form

def shortest_float32(value):
    """Shortest decimal that reads back as the same float32, formatted as
    std::to_chars formats a float: fixed or scientific, whichever is shorter."""
    f32 = struct.unpack("<f", struct.pack("<f", value))[0]
    return _shortest(f32, lambda s: struct.unpack("<f", struct.pack("<f", float(s)))[0] == f32,
                     9)


def shortest_float64(value):
    return _shortest(value, lambda s: float(s) == value, 17)


def _shortest(value, round_trips, max_digits):
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    for digits in range(1, max_digits + 1):
        sci = f"{value:.{digits - 1}e}"
        if round_trips(sci):
            break
    mantissa, exponent = sci.split("e")
    exponent = int(exponent)
    negative = mantissa.startswith("-")
    mdigits = mantissa.lstrip("-").replace(".", "")
    # scientific as to_chars writes it: d[.ddd]e[+-]XX
    scientific = mdigits[0] + ("." + mdigits[1:] if len(mdigits) > 1 else "")
    scientific += "e" + ("-" if exponent < 0 else "+") + f"{abs(exponent):02d}"
    # fixed
    point = exponent + 1  # digits before the decimal point
    if point <= 0:
        fixed = "0." + "0" * (-point) + mdigits
    elif point >= len(mdigits):
        # Of the integers of that length, to_chars writes the one nearest the value.
        fixed = str(abs(round(value)))
    else:
        fixed = mdigits[:point] + "." + mdigits[point:]
    text = fixed if len(fixed) <= len(scientific) else scientific
    return ("-" if negative else "") + text


def json_string(s):
    """A JSON string literal as ctp's text writer escapes it (non-ASCII kept as is)."""
    special = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n",
               "\r": "\\r", "\t": "\\t"}
    out = []
    for c in s:
        if c in special:
            out.append(special[c])
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def name_text(name):
    """Names print bare unless they hold a character that would split the line."""
    if name and not any(ord(c) <= 0x20 or ord(c) == 0x7F or c in '"\\,[](){}=' for c in name):
        return name
    return json_string(name)


def format_scalar(atype, v):
    if atype in ("INT", "INTS"):
        return str(int(v))
    if atype in ("LONG", "LONGS"):
        return f"{int(v)}L"
    if atype in ("FLOAT", "FLOATS"):
        return shortest_float32(float(v)) + "f"
    if atype in ("FLOAT64", "FLOAT64S"):
        s = shortest_float64(float(v))
        if not any(c in s for c in ".en"):
            s += ".0"
        return s
    if atype in ("BOOLEAN", "BOOLEANS"):
        return "true" if v else "false"
    if atype in ("STRING", "STRINGS"):
        return json_string(str(v))
    raise TypeError(atype)


def format_attr(atype, value):
    if atype == "BLOCK":
        return f"block({int(value)})"
    if atype == "BLOCKS":
        return "blocks[" + ", ".join(str(int(v)) for v in value) + "]"
    if atype == "VAR":
        return f"var({name_text(value)})"
    if atype == "VARS":
        return "vars[" + ", ".join(name_text(v) for v in value) + "]"
    if atype == "SCALAR":
        return f"scalar({value})"
    if atype == "SCALARS":
        return "scalars[" + ", ".join(value) + "]"
    if atype in ("INTS", "LONGS", "FLOATS", "FLOAT64S", "BOOLEANS", "STRINGS"):
        if not value:
            return atype + "[]"
        return "[" + ", ".join(format_scalar(atype, v) for v in value) + "]"
    return format_scalar(atype, value)


def format_slots(slots):
    if not slots:
        return "()"
    return ", ".join(f"{name_text(name)}=[{', '.join(name_text(a) for a in args)}]"
                     for name, args in slots)


def format_op(op):
    attrs = sorted((n, t, v) for n, (t, v) in op.typed_attrs.items() if n != "op_callstack")
    body = ", ".join(f"{name_text(n)}={format_attr(t, v)}" for n, t, v in attrs)
    return (f"{name_text(op.type)} {format_slots(op.inputs)} -> {format_slots(op.outputs)} "
            f"{{{body}}}")


# ---------------------------------------------------------------- fake paddle

class OpRole:
    Forward = 0x0000
    Backward = 0x0001
    Optimize = 0x0002
    RPC = 0x0004
    Dist = 0x0008
    LRSched = 0x0010
    Loss = 0x0100


class Variable:
    def __init__(self, block, name, type=KIND["LOD_TENSOR"], shape=None, dtype=None,
                 persistable=None, stop_gradient=False, is_parameter=False, is_distributed=False,
                 lod_level=None, **unused):
        self.block = block
        self.name = name
        self.type = type
        self.shape = tuple(shape) if shape is not None else ()
        self.dtype = dtype if dtype is not None else KIND["FP32"]
        self.persistable = bool(persistable)
        self.stop_gradient = stop_gradient
        self.is_parameter = is_parameter
        self.is_distributed = is_distributed
        self.lod_level = lod_level or 0


class Parameter(Variable):
    pass


def _arg_names(value):
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        value = [value]
    return [v.name if isinstance(v, Variable) else str(v) for v in value]


class Operator:
    def __init__(self, block, type=None, inputs=None, outputs=None, attrs=None):
        self.block = block
        self.type = type
        self.inputs = [(k, _arg_names(v)) for k, v in (inputs or {}).items()]
        self.outputs = [(k, _arg_names(v)) for k, v in (outputs or {}).items()]
        attrs = dict(attrs or {})
        # Paddle's Operator constructor: the program's current role when none is given.
        if "op_role" not in attrs:
            attrs["op_role"] = block.program._op_role
        if "op_role_var" in attrs and len(attrs["op_role_var"]) == 0:
            del attrs["op_role_var"]
        self.typed_attrs = {}
        for name, value in attrs.items():
            atype = attr_type_of(name, value)
            self.typed_attrs[name] = (atype, value)

    @classmethod
    def from_json(cls, block, j):
        op = cls.__new__(cls)
        op.block = block
        op.type = j["type"]
        op.inputs = [(k, list(v)) for k, v in j.get("inputs", {}).items()]
        op.outputs = [(k, list(v)) for k, v in j.get("outputs", {}).items()]
        op.typed_attrs = {n: (a["type"], a["value"]) for n, a in j.get("attrs", {}).items()}
        return op

    @property
    def input_names(self):
        return [k for k, _ in self.inputs]

    @property
    def output_names(self):
        return [k for k, _ in self.outputs]

    @property
    def attr_names(self):
        return list(self.typed_attrs)

    @property
    def input_arg_names(self):
        return [a for _, args in self.inputs for a in args]

    @property
    def output_arg_names(self):
        return [a for _, args in self.outputs for a in args]

    def input(self, name):
        for k, args in self.inputs:
            if k == name:
                return list(args)
        raise RuntimeError(f"(NotFound) op {self.type} has no input '{name}'")

    def output(self, name):
        for k, args in self.outputs:
            if k == name:
                return list(args)
        raise RuntimeError(f"(NotFound) op {self.type} has no output '{name}'")

    def attr(self, name):
        if name not in self.typed_attrs:
            raise RuntimeError(f"(NotFound) op {self.type} has no attribute '{name}'")
        atype, value = self.typed_attrs[name]
        return typed(atype, value)

    def all_attrs(self):
        return {n: self.attr(n) for n in self.typed_attrs}


class Block:
    def __init__(self, program, idx=0):
        self.program = program
        self.idx = idx
        self.vars = {}
        self.ops = []

    def var(self, name):
        if name not in self.vars:
            raise ValueError(f"var {name} not in this block")
        return self.vars[name]

    def create_var(self, name=None, type=KIND["LOD_TENSOR"], shape=None, dtype=None,
                   persistable=None, stop_gradient=False, **kwargs):
        existing = self.vars.get(name)
        if existing is None:
            v = Variable(self, name, type=type, shape=shape, dtype=dtype,
                         persistable=persistable, stop_gradient=stop_gradient)
            self.vars[name] = v
            return v
        # Paddle's Variable constructor on an existing name.
        if existing.type != type:
            raise ValueError(f"Variable '{name}' has been created before with another type")
        if shape is not None and tuple(shape) != existing.shape:
            raise ValueError(f"Variable '{name}' has been created before with shape "
                             f"{existing.shape}, the new shape is {tuple(shape)}")
        if dtype is not None and dtype != existing.dtype:
            raise ValueError(f"Variable '{name}' has been created before with another dtype")
        if persistable is not None and bool(persistable) != existing.persistable:
            raise ValueError(f"Variable '{name}' has been created before with another "
                             "persistable flag")
        existing.stop_gradient = stop_gradient
        return existing

    def iter_parameters(self):
        return (v for v in self.vars.values() if isinstance(v, Parameter))

    def append_op(self, *args, **kwargs):
        op = Operator(self, *args, **kwargs)
        self.ops.append(op)
        return op

    def _insert_op(self, index, *args, **kwargs):
        op = Operator(self, *args, **kwargs)
        self.ops.insert(index, op)
        return op

    def _remove_op(self, index, sync=True):
        del self.ops[index]

    def _sync_with_cpp(self):
        pass


class Program:
    def __init__(self):
        self._op_role = OpRole.Forward
        self._op_role_var = []
        self.blocks = [Block(self, 0)]

    def global_block(self):
        return self.blocks[0]

    def clone(self, for_test=False):
        return copy.copy(self)

    @classmethod
    def from_json(cls, j):
        p = cls()
        jb = j["blocks"][0]
        b = p.blocks[0]
        for jv in jb.get("vars", []):
            kind = KIND[jv.get("type", "LOD_TENSOR")]
            var_cls = Parameter if jv.get("is_parameter", False) else Variable
            b.vars[jv["name"]] = var_cls(
                b, jv["name"], type=kind, shape=jv.get("shape", []),
                dtype=KIND[jv.get("dtype", "FP32")], persistable=jv.get("persistable", False),
                stop_gradient=jv.get("stop_gradient", False),
                is_parameter=jv.get("is_parameter", False),
                is_distributed=jv.get("is_distributed", False), lod_level=jv.get("lod_level", 0))
        b.ops = [Operator.from_json(b, jo) for jo in jb.get("ops", [])]
        return p


class UniqueNames:
    def __init__(self):
        self.ids = {}

    def generate(self, key):
        n = self.ids.get(key, 0)
        self.ids[key] = n + 1
        return f"{key}_{n}"


def install_fake_paddle():
    """Registers the stand-in modules under the names collective.py imports."""
    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    names = UniqueNames()
    unique_name = module("paddle.base.unique_name",
                         generate=lambda key: names.generate(key))
    waits = []
    helper = module("paddle.distributed.fleet.base.private_helper_function",
                    wait_server_ready=lambda endpoints: waits.append(list(endpoints)))

    class OpProtoAndCheckerMaker:
        OpRole = OpRole

        @staticmethod
        def kOpRoleAttrName():
            return "op_role"

        @staticmethod
        def kOpRoleVarAttrName():
            return "op_role_var"

    var_type = types.SimpleNamespace(**KIND)
    core = module("paddle.framework.core",
                  op_proto_and_checker_maker=OpProtoAndCheckerMaker,
                  VarDesc=types.SimpleNamespace(VarType=var_type),
                  is_compiled_with_cuda=lambda: True,
                  is_compiled_with_xpu=lambda: False)
    default_programs = {"main": Program(), "startup": Program()}
    static = module("paddle.static",
                    default_main_program=lambda: default_programs["main"],
                    default_startup_program=lambda: default_programs["startup"])
    base = module("paddle.base", unique_name=unique_name)
    framework = module("paddle.framework", core=core)
    fleet_base = module("paddle.distributed.fleet.base", private_helper_function=helper)
    fleet = module("paddle.distributed.fleet", base=fleet_base)

    def no_custom_device(*_):
        raise AssertionError("the stand-in paddle has no custom devices")

    distributed = module("paddle.distributed", fleet=fleet, ParallelEnv=no_custom_device)
    device = module("paddle.device", get_all_custom_device_type=no_custom_device)
    module("paddle", base=base, framework=framework, static=static, distributed=distributed,
           device=device)
    return names, waits


def load_reference(path):
    spec = importlib.util.spec_from_file_location("ctp_collective_reference", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- cases

ENV_KEYS = {"fuse_allreduce": "PADDLE_FUSE_ALLREDUCE", "loss_scale": "PADDLE_LOSS_SCALE",
            "selected_gpus": "FLAGS_selected_gpus"}


def run_reference(reference, names, case_dir):
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
        raise ValueError(f"unknown mode {mode}")
    endpoints = options["endpoints"]
    rank = options["rank"]
    current = options.get("current_endpoint", endpoints[rank] if 0 <= rank < len(endpoints)
                          else "")
    with contextlib.redirect_stdout(io.StringIO()):
        t.transpile(startup, main, rank, ",".join(endpoints), current,
                    options.get("wait_port", False))
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
    except Exception as e:  # the reference's own exceptions are what some cases expect
        if os.path.exists(error_file):
            want = read_lines(error_file)[0]
            if type(e).__name__ == want:
                return None
            return f"expected {want}, the reference raised {type(e).__name__}: {e}"
        return f"the reference raised {type(e).__name__}: {e}"
    if os.path.exists(error_file):
        return f"expected {read_lines(error_file)[0]}, the reference raised nothing"
    for name, actual in (("startup", startup), ("main", main)):
        path = os.path.join(case_dir, f"{name}.expected.txt")
        if not os.path.exists(path):
            return f"{path} is missing"
        expected = read_lines(path)
        if expected != actual:
            return f"{name}: " + first_difference(expected, actual)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--golden", default=os.path.join(REPO, "tests", "golden"))
    parser.add_argument("--reference",
                        default=os.path.join(REPO, "..", "shared", "reference", "collective.py"))
    parser.add_argument("--print", dest="print_case", metavar="CASE",
                        help="print the reference's op sequences for one case and exit")
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args()
    if not os.path.exists(args.reference):
        print(f"reference not found: {args.reference}", file=sys.stderr)
        return 2
    names, _ = install_fake_paddle()
    reference = load_reference(args.reference)
    if args.print_case:
        startup, main_ops = run_reference(reference, names,
                                          os.path.join(args.golden, args.print_case))
        print("# startup\n" + "\n".join(startup) + "\n# main\n" + "\n".join(main_ops))
        return 0
    cases = args.cases or sorted(
        d for d in os.listdir(args.golden)
        if os.path.exists(os.path.join(args.golden, d, "options.json")))
    failures = 0
    for name in cases:
        problem = check_case(reference, names, os.path.join(args.golden, name))
        if problem:
            failures += 1
            print(f"FAIL {name}: {problem}")
        else:
            print(f"ok   {name}")
    print(f"{len(cases) - failures}/{len(cases)} golden cases match the reference")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
