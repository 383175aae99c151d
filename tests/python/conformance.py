"""The conformance table (tests/conformance/cases.txt) through libedgefirst_tensor, from Python's
ctypes. Prints one line per case, "name: result", as the Rust and C runners do; exits non-zero when a
result differs from the table's expected column. Usage: conformance.py LIBRARY CASES_FILE"""
import ctypes as C
import os
import sys

lib = C.CDLL(sys.argv[1])
RW, READ = 3, 1
INLINE, REFERENCE = 1, 0
DTYPES = ["u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "f32", "f64"]
FORMATS = {"RGB": 1, "RGBA": 3, "NV12": 9}
MEMORY = {"mem": 0, "shm": 1}
EF_TOO_SMALL, EF_ACCESS_DENIED = 6, 4


class Tensor(C.Structure):
    _fields_ = [("slot", C.c_uint64), ("generation", C.c_uint64)]


class Map(C.Structure):
    _fields_ = [("slot", C.c_uint64), ("generation", C.c_uint64), ("data", C.c_void_p), ("size", C.c_size_t)]


class Plane(C.Structure):
    _fields_ = [("fd", C.c_int32), ("reserved", C.c_uint32), ("offset", C.c_uint64), ("stride", C.c_uint64)]


class Planes(C.Structure):
    _fields_ = [("plane", Plane * 4), ("count", C.c_uint32), ("reserved", C.c_uint32)]


class Desc(C.Structure):
    _fields_ = [("generation", C.c_uint64), ("handle", C.c_int64), ("offset", C.c_uint64), ("size", C.c_uint64),
                ("shape", C.c_uint64 * 8), ("strides", C.c_int64 * 8)] + [
                (n, C.c_uint32) for n in ("slot", "kind", "dtype", "ndim", "flags", "format", "width", "height",
                                          "pid", "version")]


assert C.sizeof(Desc) == 200
lib.ef_status_name.restype = C.c_char_p
lib.ef_last_error.restype = C.c_char_p
lib.ef_tensor_free.argtypes = [Tensor]


class Fail(Exception):
    pass


def ck(rc):
    if rc != 0:
        raise Fail(rc)


def status(rc):
    return lib.ef_status_name(rc).decode()


def new(dtype, shape, memory, access=RW):
    d = [int(x) for x in shape.split(",")]
    t = Tensor()
    ck(lib.ef_tensor_new((C.c_size_t * len(d))(*d), C.c_size_t(len(d)), C.c_uint32(DTYPES.index(dtype)),
                         C.c_int32(MEMORY[memory]), C.c_uint32(access), C.byref(t)))
    return t


def geometry(t):
    n = C.c_size_t()
    ck(lib.ef_tensor_ndim(t, C.byref(n)))
    shape, strides, size = (C.c_uint64 * 8)(), (C.c_int64 * 8)(), C.c_uint64()
    ck(lib.ef_tensor_shape(t, shape, C.c_size_t(8)))
    ck(lib.ef_tensor_strides(t, strides, C.c_size_t(8)))
    ck(lib.ef_tensor_size(t, C.byref(size)))
    join = lambda v: ",".join(str(x) for x in v[:n.value])
    return join(shape), join(strides), size.value


def fill(t):
    m = Map()
    rc = lib.ef_tensor_map(t, C.c_uint32(RW), C.byref(m))
    if rc:
        return rc
    C.memmove(m.data, bytes(i % 256 for i in range(m.size)), m.size)
    return lib.ef_tensor_unmap(C.byref(m))


def byte_sum(t):
    m = Map()
    ck(lib.ef_tensor_map(t, C.c_uint32(READ), C.byref(m)))
    s = sum(C.string_at(m.data, m.size))
    ck(lib.ef_tensor_unmap(C.byref(m)))
    return s


def inode(t):
    fd = C.c_int()
    ck(lib.ef_tensor_clone_fd(t, C.byref(fd)))
    ino = os.fstat(fd.value).st_ino
    os.close(fd.value)
    return ino


def identity(t):
    i = C.c_uint64()
    ck(lib.ef_tensor_identity(t, C.byref(i)))
    return i.value


def export(t, mode):
    n = C.c_size_t()
    rc = lib.ef_tensor_export_blob(t, C.c_uint32(mode), None, C.c_size_t(0), C.byref(n))
    if rc != EF_TOO_SMALL:
        raise Fail(rc)
    buf = (C.c_uint8 * n.value)()
    ck(lib.ef_tensor_export_blob(t, C.c_uint32(mode), buf, n, C.byref(n)))
    return buf, n


def run(op, a):
    if op == "new":
        t = new(a[0], a[1], a[2])
        shape, strides, size = geometry(t)
        d = C.c_uint32()
        lib.ef_tensor_dtype(t, C.byref(d))
        lib.ef_tensor_free(t)
        return f"ok shape={shape} strides={strides} size={size} dtype={d.value}"
    if op == "image":
        t = Tensor()
        ck(lib.ef_tensor_image(C.c_uint32(int(a[1])), C.c_uint32(int(a[2])), C.c_uint32(FORMATS[a[0]]),
                               C.c_uint32(0), C.c_uint32(RW), C.c_int32(MEMORY[a[3]]), C.byref(t)))
        shape, strides, size = geometry(t)
        f = C.c_uint32()
        lib.ef_tensor_format(t, C.byref(f))
        lib.ef_tensor_free(t)
        return f"ok shape={shape} strides={strides} size={size} format={f.value}"
    if op == "view":
        n = [int(x) for x in a[1:]]
        t, v = Tensor(), Tensor()
        ck(lib.ef_tensor_image(C.c_uint32(n[0]), C.c_uint32(n[1]), C.c_uint32(FORMATS[a[0]]), C.c_uint32(0),
                               C.c_uint32(RW), C.c_int32(0), C.byref(t)))
        ck(lib.ef_tensor_view(t, *[C.c_uint64(x) for x in n[2:]], C.byref(v)))
        shape, strides, _ = geometry(v)
        same = int(identity(v) == identity(t))
        lib.ef_tensor_free(v)
        lib.ef_tensor_free(t)
        return f"ok shape={shape} strides={strides} same_identity={same}"
    if op == "batch":
        t, e = new(a[0], a[1], a[2]), Tensor()
        ck(fill(t))
        ck(lib.ef_tensor_batch(t, C.c_uint64(int(a[3])), C.byref(e)))
        shape, strides, _ = geometry(e)
        s, same = byte_sum(e), int(identity(e) == identity(t))
        lib.ef_tensor_free(e)
        lib.ef_tensor_free(t)
        return f"ok shape={shape} strides={strides} sum={s} same_identity={same}"
    if op == "map_sum":
        t = new(a[0], a[1], a[2])
        ck(fill(t))
        s = byte_sum(t)
        lib.ef_tensor_free(t)
        return f"ok sum={s}"
    if op == "access_denied":
        t = new(a[0], a[1], a[2], READ)
        rc = fill(t)
        lib.ef_tensor_free(t)
        return f"err {status(rc)}"
    if op == "stale":
        t = new("u8", "4", "mem")
        lib.ef_tensor_free(t)
        ck(lib.ef_tensor_ndim(t, C.byref(C.c_size_t())))
        return "ok"
    if op == "double_free":
        t = new("u8", "4", "mem")
        lib.ef_tensor_free(t)
        ck(lib.ef_tensor_free(t))
        return "ok"
    if op == "forged":
        ck(lib.ef_tensor_ndim(Tensor(1 << 20, 99), C.byref(C.c_size_t())))
        return "ok"
    if op == "blob":
        mode = INLINE if a[0] == "inline" else REFERENCE
        t = new(a[1], a[2], a[3])
        fill(t)
        buf, n = export(t, mode)
        back = Tensor()
        ck(lib.ef_tensor_import_blob(buf, n, C.byref(back)))
        shape, strides, _ = geometry(back)
        tail = (f"new_identity={int(identity(back) != identity(t))}" if mode == INLINE
                else f"same_inode={int(inode(back) == inode(t))}")
        s = byte_sum(back)
        lib.ef_tensor_free(back)
        lib.ef_tensor_free(t)
        return f"ok shape={shape} strides={strides} sum={s} {tail}"
    if op == "nv12_planes":
        w, h = int(a[0]), int(a[1])
        luma, chroma = new("u8", f"{h},{w}", "shm"), new("u8", f"{h // 2},{w}", "shm")
        fl, fc = C.c_int(), C.c_int()
        ck(lib.ef_tensor_clone_fd(luma, C.byref(fl)))
        ck(lib.ef_tensor_clone_fd(chroma, C.byref(fc)))
        p, t = Planes(), Tensor()
        ck(lib.ef_planes_init(C.byref(p)))
        ck(lib.ef_planes_add(C.byref(p), fl, C.c_uint64(0), C.c_uint64(w)))
        ck(lib.ef_planes_add(C.byref(p), fc, C.c_uint64(0), C.c_uint64(w)))
        ck(lib.ef_tensor_from_planes(C.byref(p), C.c_uint32(w), C.c_uint32(h), C.c_uint32(9), C.c_uint32(RW),
                                     C.byref(t)))
        os.close(fl.value)
        os.close(fc.value)
        shape, _, _ = geometry(t)
        f = C.c_uint32()
        lib.ef_tensor_format(t, C.byref(f))
        buf, n = export(t, INLINE)
        back = Tensor()
        rc = lib.ef_tensor_import_blob(buf, n, C.byref(back))
        inline = "ok" if rc == 0 else status(rc)
        for x in ([back] if rc == 0 else []) + [t, luma, chroma]:
            lib.ef_tensor_free(x)
        return f"ok shape={shape} format={f.value} planes_blob_inline={inline}"
    if op == "hostile_blob":
        word, value = int(a[0]), int(a[1])
        t = new("u8", "4,4", "mem")
        buf, n = export(t, INLINE)
        lib.ef_tensor_free(t)
        for i in range(4):
            buf[word * 4 + i] = (value >> (8 * i)) & 0xFF
        back = Tensor()
        ck(lib.ef_tensor_import_blob(buf, n, C.byref(back)))
        lib.ef_tensor_free(back)
        return "ok"
    if op == "desc":
        t, d, back, m = new("u8", "8,8", a[0]), Desc(), Tensor(), Map()
        ck(lib.ef_tensor_export_descriptor(t, C.byref(d)))
        ck(lib.ef_tensor_import_descriptor(C.byref(d), C.c_uint32(READ), C.byref(back)))
        shape, _, _ = geometry(back)
        access = 1 if lib.ef_tensor_map(back, C.c_uint32(RW), C.byref(m)) == EF_ACCESS_DENIED else 3
        same = int(identity(back) == identity(t))
        lib.ef_tensor_free(back)
        lib.ef_tensor_free(t)
        return f"ok shape={shape} same_identity={same} access={access}"
    if op == "desc_stale":
        t, d, back = new("u8", "8,8", "shm"), Desc(), Tensor()
        ck(lib.ef_tensor_export_descriptor(t, C.byref(d)))
        lib.ef_tensor_free(t)
        ck(lib.ef_tensor_import_descriptor(C.byref(d), C.c_uint32(READ), C.byref(back)))
        return "ok"
    raise SystemExit(f"unknown op {op}")


failures = cases = 0
for line in open(sys.argv[2]):
    if line.startswith("#") or "=" not in line:
        continue
    case, want = line.split("=", 1)
    words = case.split()
    try:
        got = run(words[1], words[2:])
    except Fail as e:
        got = f"err {status(e.args[0])}"
    want = " ".join(want.split())
    print(f"{words[0]}: {got}")
    cases += 1
    if got != want:
        print(f"{words[0]}: got `{got}`, want `{want}`", file=sys.stderr)
        failures += 1
print(f"python conformance: {cases} cases, {failures} failed", file=sys.stderr)
sys.exit(0 if failures == 0 and cases >= 20 else 1)
