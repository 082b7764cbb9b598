"""Reads and writes .npy files of FP32 / INT64 arrays without numpy (the device
image's Python may lack it): what compare_params.py and device_run.sh need."""
import ast
import struct

_CODES = {"<f4": ("f", 4), "<i8": ("q", 8), "<f8": ("d", 8), "<i4": ("i", 4)}


def load(path):
    """Returns (shape, flat list of values)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not an .npy file")
    major = data[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header.get("fortran_order"):
        raise ValueError(f"{path}: Fortran order is not supported")
    code, size = _CODES[header["descr"]]
    shape = tuple(header["shape"])
    count = 1
    for d in shape:
        count *= d
    body = data[start + hlen:start + hlen + count * size]
    return shape, list(struct.unpack(f"<{count}{code}", body))


def save(path, shape, values, descr="<f4"):
    code, _ = _CODES[descr]
    header = repr({"descr": descr, "fortran_order": False, "shape": tuple(shape)})
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack(f"<{len(values)}{code}", *values))
