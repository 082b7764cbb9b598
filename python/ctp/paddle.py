"""Paddle programs in memory, without importing Paddle.

A paddle.static.Program (or anything with ``desc.serialize_to_string()``
returning bytes) becomes a ctp.Program, and a ctp.Program becomes bytes that
Paddle's ``paddle.static.Program.parse_from_string`` reads.
"""
from ._ctp import Program


def from_paddle(program):
    """The ctp.Program of a Paddle program object (its ProgramDesc's bytes).

    Accepts any object whose ``desc.serialize_to_string()`` returns bytes;
    raises TypeError for anything else, and ctp.Error when the bytes are not
    a program.
    """
    desc = getattr(program, "desc", None)
    serialize = getattr(desc, "serialize_to_string", None)
    if not callable(serialize):
        raise TypeError(
            "from_paddle() takes a Paddle program: an object with "
            f"desc.serialize_to_string(), not {type(program).__name__}")
    data = serialize()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError("desc.serialize_to_string() returned "
                        f"{type(data).__name__}, not bytes")
    return Program.from_bytes(bytes(data), source=f"<{type(program).__name__}>")


def to_paddle_bytes(program):
    """The program as protobuf bytes, for paddle.static.Program.parse_from_string()."""
    if not isinstance(program, Program):
        raise TypeError(f"to_paddle_bytes() takes a ctp.Program, not {type(program).__name__}")
    return program.to_bytes("proto")
