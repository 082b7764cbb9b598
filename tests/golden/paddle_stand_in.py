"""A stand-in for the parts of the `paddle` package that the reference
collective.py imports, with Paddle's semantics where they decide the output,
and ctp's text form of ops (docs/text-format.md) for comparing results.

Used by scripts/golden_reference_check.py; see its docstring for what the
stand-in does and does not model.
"""
import copy
import importlib.util
import math
import struct
import sys
import types

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
