"""Programs from and to files and bytes, their parts as Python values, verify,
the builder, Paddle objects, and ctp.Error with its place."""
import copy

import pytest

import ctp

TRAINING_PAIR = ("beiyuouo_paddleflgui_trainer0_startup.program",
                 "beiyuouo_paddleflgui_trainer0_main.program")


def test_real_file_bytes_round_trip(realworld):
    data = (realworld / TRAINING_PAIR[1]).read_bytes()
    program = ctp.Program.from_bytes(data, source=TRAINING_PAIR[1])
    assert program.op_count == 38  # SOURCES.md: 1 block, 38 ops, 61 vars
    assert program.global_block.var_count == 61
    written = program.to_bytes("proto")
    assert written == data  # byte for byte, as Paddle wrote it
    again = ctp.Program.from_bytes(written)
    assert again == program
    assert again.to_bytes("proto") == written
    as_json = program.to_bytes("json")
    assert ctp.detect_format(as_json) == "json"
    assert ctp.loads(as_json) == program
    assert ctp.load(str(realworld / TRAINING_PAIR[1])) == program


def test_every_real_program_round_trips_byte_for_byte_or_is_refused_with_its_place(realworld):
    loaded = 0
    for path in sorted(realworld.iterdir()):
        try:
            program = ctp.load(str(path))
        except ctp.Error as e:
            assert str(e).startswith(f"{path}: "), str(e)
            continue
        assert not path.name.startswith("NEG_"), path.name  # not programs: must be refused
        assert program.to_bytes("proto") == path.read_bytes(), path.name
        for fmt in ("proto", "json"):
            assert ctp.Program.from_bytes(program.to_bytes(fmt)) == program, (path.name, fmt)
        loaded += 1
    assert loaded >= 40


def test_parts_are_python_values(realworld):
    program = ctp.load(str(realworld / TRAINING_PAIR[1]))
    block = program.global_block
    mul = next(op for op in block.ops if op.type == "mul")
    assert isinstance(mul.inputs, dict) and all(isinstance(v, list) for v in mul.inputs.values())
    assert mul.attr("x_num_col_dims") == 1 and mul.attr_type("x_num_col_dims") == "INT"
    assert type(mul.attr("x_num_col_dims")) is int
    assert mul.attrs["x_num_col_dims"] == 1
    weight = block.var(mul.input("Y")[0])
    assert weight.persistable and weight.dtype == "FP32" and len(weight.shape) == 2
    # Views edit the program.
    mul.set_attr("x_num_col_dims", 2)
    assert mul.attr_type("x_num_col_dims") == "INT"  # set_attr keeps the attribute's type
    assert next(op for op in program.global_block.ops if op.type == "mul").attr("x_num_col_dims") == 2


def test_attribute_types_round_trip():
    op = ctp.Op("scale", {"X": ["x"]}, {"Out": ["y"]},
                {"scale": 2.5, "bias_after_scale": True, "shape": [2, 3], "big": 1 << 40,
                 "names": ["a", "b"]})
    assert op.attr_types == {"scale": "FLOAT", "bias_after_scale": "BOOLEAN", "shape": "INTS",
                             "big": "LONG", "names": "STRINGS"}
    op.set_attr("sub_block", 1, type="BLOCK")
    op.set_attr("longs", [1, 2], type="LONGS")
    op.set_attr("odd", "caf\udce9", type="STRING")  # not UTF-8: kept byte for byte
    program = ctp.Program()
    program.global_block.add_var(ctp.Var("x", [2, 3]))
    program.global_block.append_op(op)
    back = ctp.Program.from_bytes(program.to_bytes("proto")).global_block.op(0)
    assert back.attrs == op.attrs and back.attr_types == op.attr_types
    assert {k: type(v) for k, v in back.attrs.items()} == {
        "scale": float, "bias_after_scale": bool, "shape": list, "big": int, "names": list,
        "sub_block": int, "longs": list, "odd": str}
    with pytest.raises(TypeError):
        op.set_attr("shape", "not a list")  # keeps its type, INTS
    with pytest.raises(TypeError):
        op.set_attr("empty", [])
    with pytest.raises(ValueError):
        op.set_attr("x", 1, type="NO_SUCH_TYPE")


def test_builder_and_verify():
    b = ctp.ProgramBuilder()
    b.data("x", [-1, 4])
    b.param("w", [4, 2])
    b.tmp("y", [-1, 2])
    b.op("mul").input("X", "x").input("Y", "w").output("Out", "y").role(ctp.op_role.FORWARD)
    program = b.build()
    result = ctp.verify(program)
    assert result.ok, [str(d) for d in result.diagnostics]
    assert result.ops == 1 and result.ops_with_schema == 1 and "1 op" in result.checked()
    program.global_block.append_op(ctp.Op("relu", {"X": ["undeclared"]}, {"Out": ["y"]}))
    result = ctp.verify(program)
    assert not result.ok
    assert any("undeclared" in str(d) and "op 1" in str(d) for d in result.errors)
    finding = next(d for d in result.errors if "undeclared" in str(d))
    assert (finding.place.block, finding.place.op, finding.place.op_type) == (0, 1, "relu")
    assert finding.place.var_name == "undeclared" and finding.severity == "error"
    assert copy.deepcopy(program) == program


class PaddleDesc:
    def __init__(self, data):
        self.data = data

    def serialize_to_string(self):
        return self.data


class PaddleProgram:
    """What ctp sees of a paddle.static.Program."""
    def __init__(self, data):
        self.desc = PaddleDesc(data)


def test_paddle_objects(realworld):
    data = (realworld / TRAINING_PAIR[0]).read_bytes()
    program = ctp.from_paddle(PaddleProgram(data))
    assert program == ctp.Program.from_bytes(data)
    assert ctp.Program.from_bytes(ctp.to_paddle_bytes(program)) == program
    with pytest.raises(TypeError, match="desc.serialize_to_string"):
        ctp.from_paddle(object())
    with pytest.raises(TypeError, match="not bytes"):
        ctp.from_paddle(PaddleProgram("text"))


def test_bad_bytes_raise_with_their_place(realworld):
    data = bytearray((realworld / TRAINING_PAIR[1]).read_bytes())
    with pytest.raises(ctp.Error) as caught:
        ctp.Program.from_bytes(bytes(data[: len(data) // 2]), source="half.pb")
    error = caught.value
    assert str(error).startswith("half.pb: ")
    assert error.place.source == "half.pb" and error.place.block == 0
    assert str(error) == f"{error.place}: {error.message}"
    assert not error.message.startswith("half.pb")
    with pytest.raises(ctp.Error, match=r"^bad\.json: .*blocks\[0\]") as caught:
        ctp.Program.from_bytes(b'{"blocks": [{"idx": "zero"}]}', source="bad.json")
    place = caught.value.place
    assert (place.source, place.block, place.op) == ("bad.json", 0, None)
    assert place.path.startswith("blocks[0]")
    # An attribute's error names the block, op and attribute as fields.
    scaled = ctp.ProgramBuilder()
    scaled.data("x", [-1, 3])
    scaled.tmp("y", [-1, 3])
    scaled.op("scale").input("X", "x").output("Out", "y").attr("scale", 2.0)
    text = scaled.build().to_bytes("json").replace(b'"value": 2.0', b'"value": "two"')
    with pytest.raises(ctp.Error, match=r"^bad\.json: blocks\[0\]\.ops\[0\]\.attrs\.scale: ") as caught:
        ctp.Program.from_bytes(text, source="bad.json")
    place = caught.value.place
    assert (place.source, place.block, place.op, place.attr_name) == ("bad.json", 0, 0, "scale")
    assert place.path == "blocks[0].ops[0].attrs.scale" and place.rank is None
    assert caught.value.message.startswith("expected a number")
    with pytest.raises(ctp.Error, match="no-such-file"):
        ctp.load("/nonexistent/no-such-file.pb")
    assert issubclass(ctp.Error, Exception)
