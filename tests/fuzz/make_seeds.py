#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/.

Each seed is a small binary file in the input format its target decodes (see the comments in
fuzz_import.cc, fuzz_dtype.cc and fuzz_remote_receive.cc). Run it after changing a format; the
outputs are checked in.

    python3 tests/fuzz/make_seeds.py

fuzz_views_copies, fuzz_validate_diff and fuzz_chains are not written here: their corpora are
the result of long libFuzzer runs minimized with -merge=1 (-use_counters=0 for
fuzz_views_copies, to keep it to edge coverage), checked in as they are.
"""
import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent
CORPUS = HERE / "corpus"

# ---- fuzz_import ---------------------------------------------------------------------------

LEGACY, NULL_STRIDES, NULL_DATA, NULL_SHAPE = 0x01, 0x02, 0x04, 0x08
NULL_DELETER, NULL_ERROR, RAW_VERSION, NULL_IMPORT = 0x10, 0x20, 0x40, 0x80

# Indices into kDtypes in fuzz_import.cc.
DTYPE = {
    "int8": 0, "int16": 1, "int32": 2, "int64": 3, "uint8": 4, "int4": 8, "uint1": 9,
    "uint2": 10, "float16": 11, "float32": 12, "float64": 13, "bfloat16": 14,
    "complex64": 15, "bool": 17, "float4_e2m1fn": 23,
}

# ops byte: slice, select, reshape, permute, transpose, share+legacy, copy, free import first.
OP_SLICE, OP_SELECT, OP_RESHAPE, OP_PERMUTE = 0x01, 0x02, 0x04, 0x08
OP_TRANSPOSE, OP_SHARE, OP_COPY, OP_FREE_FIRST = 0x10, 0x20, 0x40, 0x80


def extent(v):
    """Encodes an extent: 0..7 directly, negatives -1..-16, anything else as raw int64."""
    if 0 <= v <= 7:
        return bytes([v])
    if -16 <= v <= -1:
        return bytes([0xE0 + (-v - 1)])
    return bytes([0xF0]) + struct.pack("<q", v)


def stride(v):
    if -8 <= v <= 8:
        return bytes([v + 8])
    return bytes([0xE0]) + struct.pack("<q", v)


def import_seed(mode=0, minor=3, major=None, flags=0, shape=(), strides=(), dtype="float32",
                raw_dtype=None, lanes=1, device=None, device_id=0, byte_offset=0,
                buffer_size=0, pre=0, ops=None, op_bytes=b""):
    out = bytearray([mode])
    if mode & RAW_VERSION:
        out += struct.pack("<II", major, minor)
    else:
        out.append(minor)
    if flags > 0x0F:
        out += bytes([0xFF]) + struct.pack("<Q", flags)
    else:
        out.append(flags)
    out += struct.pack("<b", len(shape))
    if not mode & NULL_SHAPE:
        for v in shape:
            out += extent(v)
    if not mode & NULL_STRIDES:
        for v in strides:
            out += stride(v)
    if raw_dtype is None:
        out.append(DTYPE[dtype])
    else:
        out += bytes([0xC0, raw_dtype[0], raw_dtype[1]])
    out.append(0 if lanes == 1 else 0xC0 + lanes)
    if device is None:
        out.append(0)  # CPU
    else:
        out.append(0x80 + device)
    if device_id == 0:
        out.append(0)
    else:
        out += bytes([0xF0]) + struct.pack("<b", device_id)
    if byte_offset < 0x40:
        out.append(byte_offset)
    else:
        out += bytes([0xF0]) + struct.pack("<Q", byte_offset)
    out += struct.pack("<HH", buffer_size, pre)
    if ops is not None:
        out.append(ops)
        out += op_bytes
    return bytes(out)


ALL_VIEWS = OP_SLICE | OP_SELECT | OP_RESHAPE | OP_PERMUTE | OP_TRANSPOSE | OP_SHARE | OP_COPY

IMPORT_SEEDS = {
    # float32 2x3, explicit row-major strides; every view; slice [::-1, 1:], select(1, 0).
    "versioned_f32_2x3": import_seed(
        shape=(2, 3), strides=(3, 1), buffer_size=24, ops=ALL_VIEWS,
        op_bytes=bytes([2, 0x80, 0x80, 0xFF, 1, 0x80, 4, 1, 0, 1, 0xFF, 0, 1, 0])),
    # int8 2x3x4 through the legacy struct, NULL strides (compact row-major).
    "legacy_i8_null_strides": import_seed(
        mode=LEGACY | NULL_STRIDES, dtype="int8", shape=(2, 3, 4), buffer_size=24,
        ops=ALL_VIEWS | OP_FREE_FIRST),
    # A major version this library does not speak: refused, deleter called, nothing read.
    "versioned_major_2": import_seed(
        mode=RAW_VERSION, major=2, minor=0, shape=(4,), strides=(1,), buffer_size=16),
    # Negative stride: the first element is the last in memory (byte_offset 12).
    "negative_stride": import_seed(
        shape=(4,), strides=(-1,), byte_offset=12, buffer_size=16, ops=ALL_VIEWS),
    # Packed float4: 7 elements in 4 bytes.
    "packed_float4": import_seed(
        mode=NULL_STRIDES, dtype="float4_e2m1fn", shape=(7,), buffer_size=4, ops=ALL_VIEWS),
    # Padded uint2 (one byte per element), from a newer minor version.
    "padded_uint2": import_seed(
        minor=9, flags=4, dtype="uint2", shape=(5,), strides=(1,), buffer_size=5,
        ops=ALL_VIEWS),
    # Empty tensor with NULL data.
    "empty_null_data": import_seed(
        mode=NULL_DATA, shape=(0, 3), strides=(3, 1), ops=ALL_VIEWS),
    # Read-only float64 3x3 in Fortran order; the import is freed before its views.
    "read_only_fortran": import_seed(
        flags=1, dtype="float64", shape=(3, 3), strides=(1, 3), buffer_size=72,
        ops=ALL_VIEWS | OP_FREE_FIRST),
    # Slices with the extreme steps: DLB_SLICE_NONE (means 1), INT64_MIN + 1 and INT64_MAX.
    "slice_extreme_steps": import_seed(
        shape=(2, 3, 4), strides=(12, 4, 1), dtype="int16", buffer_size=48, ops=OP_SLICE,
        op_bytes=bytes([3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 1, 0x80, 0x7E])),
    # Unknown dtype code: refused.
    "bad_dtype_code": import_seed(
        raw_dtype=(99, 32), shape=(2,), strides=(1,), buffer_size=8),
    # Unknown flag bit: refused.
    "unknown_flag": import_seed(flags=8, shape=(2,), strides=(1,), buffer_size=8),
    # Scalar with NULL shape and strides, no deleter, no error struct.
    "scalar_no_deleter": import_seed(
        mode=NULL_SHAPE | NULL_STRIDES | NULL_DELETER | NULL_ERROR, dtype="int32",
        buffer_size=4, ops=ALL_VIEWS),
    # float32x4 vector type on pinned CUDA host memory, zero stride (broadcast).
    "cuda_host_broadcast": import_seed(
        lanes=4, device=3, shape=(5, 2), strides=(0, 1), buffer_size=32, ops=ALL_VIEWS),
    # CUDA device memory: valid, but never read without a backend.
    "cuda_device": import_seed(
        device=2, device_id=1, shape=(2, 2), strides=(2, 1), buffer_size=16, ops=ALL_VIEWS),
    # Too many dimensions, and a NULL import first.
    "ndim_70": import_seed(mode=NULL_IMPORT | NULL_STRIDES, shape=tuple([1] * 70),
                           buffer_size=4),
    # A huge extent: element count overflow.
    "overflow_extent": import_seed(
        shape=(1 << 40, 1 << 40), strides=(1, 1), buffer_size=8),
}

# Inputs on which the fuzzer caught core bugs; each one keeps its bug fixed. The two span ones
# pass since the core limited spans to 2^60 bytes; the others fail until their bug is fixed.
IMPORT_REGRESSIONS = {
    # int8 shape (2,) stride 2^61: the span is 2^61 + 1 bytes, but the core kept bit counts in
    # 64-bit integers and reported 1 byte (validate.cc compute_geometry).
    "regression_span_bits_wrap": import_seed(
        shape=(2,), strides=(1 << 61,), dtype="int8", buffer_size=8, ops=0),
    # The same wrap hid elements before an opaque handle: Metal, shape (H, 4), strides (-8, -8),
    # byte_offset 0 was accepted although every element but the first lies before the buffer.
    "regression_opaque_negative_reach": import_seed(
        shape=(0x090B030002000304, 4), strides=(-8, -8), dtype="int8", device=8,
        buffer_size=0, ops=0x02, op_bytes=bytes([1, 0])),
    # Slice of an empty tensor whose zero extent is not sliced: the start offset was still
    # applied (2 * 2^60 bytes), giving a view with an out-of-range byte_offset.
    "regression_slice_empty_offset": import_seed(
        shape=(3, 0), strides=(1 << 60, 1), dtype="int8", buffer_size=8, ops=OP_SLICE,
        op_bytes=bytes([1, 2, 0x80, 4])),
    # Reshape of a non-contiguous (2^42, 2) int8 tensor, strides (1, 2^21), into (2, -1): the
    # new strides were multiplied out (2^21 * 2^42, signed overflow) before the layout check.
    "regression_reshape_stride_overflow": import_seed(
        shape=(1 << 42, 2), strides=(1, 1 << 21), dtype="int8", buffer_size=8, ops=OP_RESHAPE,
        op_bytes=bytes([2, 2, 0xFF])),
    # Copy of packed int4 data, shape (1, 2), strides (2^62, 1): the stride of the extent-1
    # dimension is arbitrary, but the bit-level copy multiplied it by the element width
    # (copy.cc bit_copy, signed overflow).
    "regression_subbyte_copy_stride_overflow": import_seed(
        shape=(1, 2), strides=(1 << 62, 1), dtype="int4", buffer_size=1, ops=OP_COPY),
    # Slice [1:] of int8 shape (2,), stride -2^59, byte_offset 0 on the CPU: the view starts
    # 2^59 bytes below `data`, and view.cc apply_offset moved the pointer there with pointer
    # arithmetic that wraps the address space (undefined behaviour).
    "regression_view_pointer_wrap": import_seed(
        shape=(2,), strides=(-(1 << 59),), dtype="int8", buffer_size=8, ops=OP_SLICE,
        op_bytes=bytes([1, 1, 0x80, 4])),
}
IMPORT_SEEDS.update(IMPORT_REGRESSIONS)

# ---- fuzz_dtype ------------------------------------------------------------------------------

def dtype_string(text):
    return b"\x00" + text.encode()


def raw_dtype(code, bits, lanes, flags=0, count=1):
    out = bytes([1]) + struct.pack("<BBH", code, bits, lanes) + bytes([flags])
    if 0 <= count < 0x10000:
        return out + bytes([0]) + struct.pack("<H", count)
    return out + bytes([0xC0]) + struct.pack("<q", count)


def raw_device(device_type, device_id, status=0):
    out = bytearray([2])
    if -1 <= device_type <= 22:
        out.append(device_type + 1)  # small types are stored plus one
    else:
        out += bytes([0xC0]) + struct.pack("<i", device_type)
    if 0 <= device_id < 8:
        out.append(device_id)
    else:
        out += bytes([0xC0]) + struct.pack("<i", device_id)
    return bytes(out) + struct.pack("<i", status)


DTYPE_SEEDS = {
    "str_float32": dtype_string("float32"),
    "str_bfloat16x4": dtype_string("bfloat16x4"),
    "str_float8_e4m3fn": dtype_string("float8_e4m3fn"),
    "str_int4": dtype_string("int4"),
    "str_complex128": dtype_string("complex128"),
    "str_bool": dtype_string("bool"),
    "str_cuda_1": dtype_string("cuda:1"),
    "str_opencl": dtype_string("opencl:0"),
    "raw_float32_count": raw_dtype(2, 32, 1, count=1000),
    "raw_float4_packed": raw_dtype(17, 4, 1, count=7),
    "raw_float4_padded": raw_dtype(17, 4, 1, flags=4, count=7),
    "raw_int4x3_huge": raw_dtype(0, 4, 3, count=(1 << 62) + 5),
    "raw_bad_bits": raw_dtype(10, 16, 1),
    "raw_device_cuda_host": raw_device(3, 0, status=5),
    "raw_device_unnamed": raw_device(25, 2, status=-1),
}

# ---- fuzz_remote_receive -------------------------------------------------------------------

# core/src/ipc/wire.hpp, pack_remote: a Wire's 64-byte head, its first ndim extents and ndim
# strides, then a RemoteExtension's first 40 bytes; native (little-endian) byte order.
WIRE_MAGIC, REMOTE_MAGIC = b"dlbridge", b"dlb-net1"
WIRE_MAJOR, WIRE_MINOR, HANDLE_REMOTE, MAX_NDIM = 1, 5, 4, 64
WIRE_HEAD_BYTES, REMOTE_EXTENSION_BYTES = 64, 40
READ_ONLY, IS_COPIED, SUBBYTE_PADDED = 1, 2, 4
# DLPack type codes and bits of the dtypes the seeds use.
REMOTE_DTYPES = {
    "float32": (2, 32), "int32": (0, 32), "uint8": (1, 8), "bfloat16": (4, 16),
    "complex64": (5, 64), "bool": (6, 8), "int4": (0, 4), "float4_e2m1fn": (17, 4),
}


def compact_bytes(shape, dtype, lanes=1, flags=0):
    count = 1
    for extent in shape:
        count *= extent
    bits = REMOTE_DTYPES[dtype][1] * lanes
    if bits % 8 and flags & SUBBYTE_PADDED:
        return count
    return (count * bits + 7) // 8


def remote_descriptor(shape, dtype, lanes=1, flags=0, payload=None, magic=WIRE_MAGIC,
                      major=WIRE_MAJOR, handle=HANDLE_REMOTE, device=(1, 0), sequence=0,
                      ndim=None, strides=None, byte_offset=0, in_parts=0):
    """A descriptor of compact bytes, or of a covering span laid out by `strides` (its first
    element `byte_offset` bytes in; `payload` then gives the span's size); `in_parts` 1 says
    that some of the bytes come in Part messages."""
    code, bits = REMOTE_DTYPES[dtype]
    if payload is None:
        payload = compact_bytes(shape, dtype, lanes, flags)
    ndim = len(shape) if ndim is None else ndim
    wire_size = WIRE_HEAD_BYTES + 16 * len(shape)
    wire = struct.pack("<8sIIIiiiBBHIQQQ", magic, major, WIRE_MINOR, wire_size, device[0],
                       device[1], ndim, code, bits, lanes, handle, flags, byte_offset, 0)
    assert len(wire) == WIRE_HEAD_BYTES
    if strides is None:
        strides, step = [], 1
        for extent in reversed(shape):
            strides.insert(0, step)
            step *= extent
    wire += struct.pack(f"<{len(shape)}q", *shape) + struct.pack(f"<{len(shape)}q", *strides)
    extension = struct.pack("<8sQ16sII", REMOTE_MAGIC, payload, bytes(16), sequence, in_parts)
    assert len(extension) == REMOTE_EXTENSION_BYTES
    return wire + extension


def remote_seed(descriptor, payload_size, max_bytes=1 << 30, header_size=None, body=b""):
    """An input of fuzz_remote_receive.cc: mode, maximum, payload length, header, payload."""
    if header_size is None:
        head = bytes([0])
    else:
        head = bytes([1]) + struct.pack("<H", header_size)
        descriptor = descriptor[:header_size] + bytes(max(0, header_size - len(descriptor)))
    return head + struct.pack("<QI", max_bytes, payload_size) + descriptor + body


def counting(n):
    return bytes(i % 251 for i in range(n))


F32_2X3 = remote_descriptor((2, 3), "float32")
REMOTE_SEEDS = {
    "f32_2x3": remote_seed(F32_2X3, 24, body=struct.pack("<6f", 0, 1, 2, 3, 4, 5)),
    "i32_7x8": remote_seed(remote_descriptor((7, 8), "int32"), 224,
                           body=struct.pack("<56i", *range(56))),
    "u8_rank4_read_only": remote_seed(remote_descriptor((2, 3, 4, 5), "uint8", flags=READ_ONLY),
                                      120, body=counting(120)),
    "bf16x4_vector": remote_seed(remote_descriptor((3,), "bfloat16", lanes=4), 24,
                                 body=counting(24)),
    "c64_from_cuda": remote_seed(remote_descriptor((4, 1), "complex64", device=(2, 0)), 32,
                                 body=counting(32)),
    "bool_copied_flag": remote_seed(remote_descriptor((5,), "bool", flags=IS_COPIED), 5,
                                    body=bytes([0, 1, 1, 0, 1])),
    "int4_packed_odd": remote_seed(remote_descriptor((7,), "int4"), 4, body=b"\x21\x43\x65\x07"),
    "float4_padded": remote_seed(remote_descriptor((3,), "float4_e2m1fn", flags=SUBBYTE_PADDED),
                                 3, body=bytes([1, 2, 3])),
    "empty_0x3": remote_seed(remote_descriptor((0, 3), "float32"), 0),
    "scalar_f32": remote_seed(remote_descriptor((), "float32"), 4, body=struct.pack("<f", 1.5)),
    "rank64_ones": remote_seed(remote_descriptor((1,) * MAX_NDIM, "uint8"), 1, body=b"\x7f"),
    # Covering spans, the sender's layout kept: a transpose, a broadcast row, a reversed vector
    # (its first element last in the span), a row-padded matrix.
    "span_transposed": remote_seed(remote_descriptor((3, 2), "float32", strides=(1, 3)), 24,
                                   body=struct.pack("<6f", 0, 1, 2, 3, 4, 5)),
    "span_broadcast": remote_seed(remote_descriptor((4, 3), "int32", strides=(0, 1), payload=12),
                                  12, body=struct.pack("<3i", 7, 8, 9)),
    "span_reversed": remote_seed(remote_descriptor((5,), "uint8", strides=(-1,), byte_offset=4),
                                 5, body=counting(5)),
    "span_padded_rows": remote_seed(remote_descriptor((3, 2), "float32", strides=(4, 1),
                                                      payload=40), 40, body=counting(40)),
    # A byte broadcast to 2^25 packed int4 elements: accepted, too many elements to read back
    # within a unit's time (sub-byte elements are copied one at a time).
    "span_broadcast_int4_32m": remote_seed(remote_descriptor((1 << 25,), "int4", strides=(0,),
                                                             payload=1), 1, body=b"\x5a"),
    # Refused: a span that does not start at the first byte, or reaches past the payload.
    "span_offset_gap": remote_seed(remote_descriptor((2,), "uint8", byte_offset=1, payload=3),
                                   3, body=counting(3)),
    "span_reaches_past": remote_seed(remote_descriptor((3, 2), "float32", strides=(4, 1)), 24,
                                     body=counting(24)),
    # Refused: the maximum, a payload shorter than the tensor, an extension that disagrees.
    "over_max": remote_seed(F32_2X3, 24, max_bytes=23, body=counting(24)),
    "short_payload": remote_seed(F32_2X3, 20, body=counting(20)),
    "extension_disagrees": remote_seed(remote_descriptor((2, 3), "float32", payload=32), 24,
                                       body=counting(24)),
    "truncated_head": remote_seed(F32_2X3, 24, header_size=40, body=counting(24)),
    "truncated_descriptor": remote_seed(F32_2X3, 24, header_size=len(F32_2X3) - 8,
                                        body=counting(24)),
    "descriptor_too_long": remote_seed(F32_2X3, 24, header_size=len(F32_2X3) + 8,
                                       body=counting(24)),
    "bad_magic": remote_seed(remote_descriptor((2, 3), "float32", magic=b"dlbridgX"), 24,
                             body=counting(24)),
    "major_2": remote_seed(remote_descriptor((2, 3), "float32", major=2), 24, body=counting(24)),
    "memfd_handle": remote_seed(remote_descriptor((2, 3), "float32", handle=0), 24,
                                body=counting(24)),
    "ndim_65": remote_seed(remote_descriptor((1,) * MAX_NDIM, "uint8", ndim=65), 1, body=b"\x00"),
    # A lone tensor whose bytes partly come in parts: 8 of its 24 came with it. Refused: all of
    # them came, or a parts field other than 0 or 1.
    "parts_f32_2x3": remote_seed(remote_descriptor((2, 3), "float32", in_parts=1), 8,
                                 body=counting(24)),
    "parts_all_came": remote_seed(remote_descriptor((2, 3), "float32", in_parts=1), 24,
                                  body=counting(24)),
    "parts_field_2": remote_seed(remote_descriptor((2, 3), "float32", in_parts=2), 24,
                                 body=counting(24)),
}


# A batch (wire.hpp, BatchHeader and BatchRecord): mode 2, the maximum, a 16-byte header
# ("dlb-btch", the record count, 0), then the records, each a 16-byte frame (its header's and
# its payload's sizes), the tensor's remote header and its payload.
def batch_record(descriptor, payload):
    return struct.pack("<IIQ", len(descriptor), 0, len(payload)) + descriptor + payload


def batch_seed(records, count=None, max_bytes=1 << 30, magic=b"dlb-btch", tail=b""):
    count = len(records) if count is None else count
    return (bytes([2]) + struct.pack("<Q", max_bytes) + struct.pack("<8sII", magic, count, 0) +
            b"".join(records) + tail)


BATCH_F32 = batch_record(F32_2X3, struct.pack("<6f", 0, 1, 2, 3, 4, 5))
BATCH_U8 = batch_record(remote_descriptor((5,), "uint8", sequence=1), counting(5))
REMOTE_SEEDS.update({
    "batch_two": batch_seed([BATCH_F32, BATCH_U8]),
    "batch_one_empty": batch_seed([batch_record(remote_descriptor((0, 3), "float32"), b"")]),
    "batch_over_max": batch_seed([BATCH_F32, BATCH_U8], max_bytes=8),
    "batch_more_than_came": batch_seed([BATCH_F32], count=3),
    "batch_bytes_after": batch_seed([BATCH_F32], tail=b"\x01\x02"),
    "batch_bad_magic": batch_seed([BATCH_F32], magic=b"dlb-btcX"),
    "batch_truncated_record": batch_seed([BATCH_F32[:-3]]),
    "batch_header_too_long": batch_seed([struct.pack("<IIQ", 5000, 0, 0) + F32_2X3]),
    # Refused: a batch's tensor comes whole.
    "batch_record_in_parts": batch_seed([batch_record(
        remote_descriptor((2, 3), "float32", in_parts=1), struct.pack("<6f", 0, 1, 2, 3, 4, 5))]),
})


def write(target, seeds):
    """Replaces the generated seeds of `target`; inputs kept from crashes (regression_*) stay."""
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if not old.name.startswith("regression_"):
            old.unlink()
    for name, data in sorted(seeds.items()):
        (folder / name).write_bytes(data)
    print(f"{folder}: {len(seeds)} seeds")


if __name__ == "__main__":
    write("fuzz_import", IMPORT_SEEDS)
    write("fuzz_dtype", DTYPE_SEEDS)
    write("fuzz_remote_receive", REMOTE_SEEDS)
