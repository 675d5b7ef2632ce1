#!/usr/bin/env python3
"""Generate the C++ firmware's model (firmware/cpp): a small int8 gesture
classifier in a flatbuffer-like blob, and the same blob compressed.

Deterministic (xorshift32, fixed seed, python3 only), run at build time:
`gen_cpp_model.py OUT.cpp` (also writes OUT.h). Two images, each ELF links the
one it uses (gc-sections drops the other):
  g_gesture_model       the blob, parsed in place from flash (zero copy)
  g_gesture_model_zrle  the blob compressed with a zero-run code (the
                        load-peak builds copy it to RAM and inflate it)

Blob format (little endian, every table 4-aligned; parsed by cpp/tinyml/model.cpp):
  header     u32 magic 'TML1', u32 version=1, u32 total_size,
             u16 n_tensors, u16 n_operators, u16 n_buffers, u16 input, u16 output, u16 0,
             u32 tensors_off, u32 operators_off, u32 buffers_off, u32 strings_off  (40 B)
  tensor     u8 type (0 int8, 1 int32), u8 rank, u16 buffer (0xffff = activation),
             u16 dims[4], f32 scale, i32 zero_point, u16 channel_scales (buffer of
             f32 per output channel, 0xffff = none), u16 0, u32 name (string offset)  (28 B)
  operator   u8 opcode (0 CONV_2D, 1 FULLY_CONNECTED, 2 ADD, 3 SOFTMAX), u8 activation
             (0 none, 1 relu), u8 stride, u8 0, u16 inputs[3] (0xffff = none),
             u16 output, u32 name  (16 B)
  buffer     u32 offset, u32 size  (8 B; data 4-aligned after the table)
  strings    NUL-terminated names
Compressed image: u32 magic 'TMZ1', u32 raw_size, then tokens: t < 0x80 is a
literal run of t+1 bytes that follow, t >= 0x80 a run of t-0x7f zero bytes.

The activation scales come from a float pass over the three valid input
frames the firmware feeds (cpp/app/sensor.cpp builds the same frames), so
the int8 activations use their range without clipping.
"""
import math
import struct
import sys

H = W = 16
CLASSES = 8
FC1_UNITS = 80


class Rng:
    """xorshift32: the same numbers on every machine and python version."""

    def __init__(self, seed):
        self.s = seed & 0xFFFFFFFF or 1

    def next(self):
        s = self.s
        s ^= (s << 13) & 0xFFFFFFFF
        s ^= s >> 17
        s ^= (s << 5) & 0xFFFFFFFF
        self.s = s
        return s

    def uniform(self):
        return self.next() / 4294967296.0


def frame(p):
    """Input frame p (0..2) as int8 values; must match cpp/app/sensor.cpp."""
    out = []
    for y in range(H):
        for x in range(W):
            v = (x * (3 + p) + y * 5 + p * 11) % 41 - 20
            dx, dy = x - 4 - 2 * p, y - 8
            if dx * dx + dy * dy < 12:
                v += 60
            out.append(v)
    return out


def weights(rng, n_out, fan_in, group, p_zero):
    """int8 weights [n_out][fan_in], pruned in groups; per-channel scales."""
    w = []
    for _ in range(n_out):
        row = []
        while len(row) < fan_in:
            zero = rng.uniform() < p_zero
            for _ in range(min(group, fan_in - len(row))):
                row.append(0 if zero else int(rng.next() % 255) - 127)
        w.append(row)
    scales = [(0.6 + 0.8 * rng.uniform()) / (127.0 * math.sqrt(fan_in * (1 - p_zero)))
              for _ in range(n_out)]
    return w, scales


def asym(lo, hi):
    """int8 scale and zero point for the float range [lo, hi] (0 included)."""
    lo, hi = min(lo, 0.0), max(hi, 1e-6)
    scale = (hi - lo) / 255.0
    zp = int(round(-128 - lo / scale))
    return scale, max(-128, min(127, zp))


def conv(x, cin, w, scales, bias, stride, relu):
    """float NHWC conv 3x3, 'same' padding; x is [H][W][cin]."""
    h, wd = len(x), len(x[0])
    oh, ow = (h + stride - 1) // stride, (wd + stride - 1) // stride
    cout = len(w)
    y = [[[0.0] * cout for _ in range(ow)] for _ in range(oh)]
    for oy in range(oh):
        for ox in range(ow):
            for o in range(cout):
                acc = 0.0
                k = 0
                for ky in range(3):
                    iy = oy * stride + ky - 1
                    for kx in range(3):
                        ix = ox * stride + kx - 1
                        for c in range(cin):
                            if 0 <= iy < h and 0 <= ix < wd:
                                acc += x[iy][ix][c] * w[o][k] * scales[o]
                            k += 1
                acc += bias[o]
                y[oy][ox][o] = max(acc, 0.0) if relu else acc
    return y


def dense(x, w, scales, bias, relu):
    y = []
    for o in range(len(w)):
        acc = sum(x[i] * w[o][i] for i in range(len(x))) * scales[o] + bias[o]
        y.append(max(acc, 0.0) if relu else acc)
    return y


def flat(t):
    return [v for row in t for px in row for v in px]


def build():
    rng = Rng(0x9E3779B9)
    in_scale, in_zp = 1.0 / 64.0, 0
    layers = {}
    layers["conv1"] = weights(rng, 8, 9 * 1, 3, 0.3)
    layers["conv2"] = weights(rng, 8, 9 * 8, 4, 0.5)
    layers["conv3"] = weights(rng, 8, 9 * 8, 4, 0.5)
    layers["fc1"] = weights(rng, FC1_UNITS, 8 * 8 * 8, 8, 0.6)
    layers["fc2"] = weights(rng, CLASSES, FC1_UNITS, 4, 0.3)
    fbias = {k: [(rng.uniform() - 0.5) * 0.1 for _ in range(len(v[0]))] for k, v in layers.items()}

    # Float pass over the three valid frames: the range of every activation.
    ranges = {}

    def note(name, values):
        lo, hi = ranges.get(name, (0.0, 0.0))
        ranges[name] = (min(lo, min(values)), max(hi, max(values)))

    for p in range(3):
        f = frame(p)
        x = [[[f[y * W + xx] * in_scale] for xx in range(W)] for y in range(H)]
        c1 = conv(x, 1, *layers["conv1"], fbias["conv1"], 1, True)
        note("conv1_out", flat(c1))
        c2 = conv(c1, 8, *layers["conv2"], fbias["conv2"], 1, True)
        note("conv2_out", flat(c2))
        a = [[[c1[y][xx][c] + c2[y][xx][c] for c in range(8)] for xx in range(W)] for y in range(H)]
        note("add1_out", flat(a))
        c3 = conv(a, 8, *layers["conv3"], fbias["conv3"], 2, True)
        note("conv3_out", flat(c3))
        f1 = dense(flat(c3), *layers["fc1"], fbias["fc1"], True)
        note("fc1_out", f1)
        f2 = dense(f1, *layers["fc2"], fbias["fc2"], False)
        note("logits", f2)
    qp = {name: asym(lo * 1.1, hi * 1.1) for name, (lo, hi) in ranges.items()}
    qp["input"] = (in_scale, in_zp)
    qp["probabilities"] = (1.0 / 256.0, -128)

    # tensors: (name, type, dims, buffer bytes or None, scale, zp, channel scales)
    tensors, buffers = [], []

    def tensor(name, ttype, dims, data=None, scale=0.0, zp=0, cscales=None):
        buf = 0xFFFF
        if data is not None:
            buffers.append(data)
            buf = len(buffers) - 1
        cs = 0xFFFF
        if cscales is not None:
            buffers.append(struct.pack("<%df" % len(cscales), *cscales))
            cs = len(buffers) - 1
        tensors.append((name, ttype, dims, buf, scale, zp, cs))
        return len(tensors) - 1

    def act(name, dims):
        s, z = qp[name]
        return tensor(name, 0, dims, scale=s, zp=z)

    def params(layer, in_name, dims_w):
        w, scales = layers[layer]
        wbytes = bytes((v & 0xFF) for row in w for v in row)
        in_s = qp[in_name][0]
        bias = [int(round(fbias[layer][o] / (in_s * scales[o]))) for o in range(len(w))]
        wt = tensor(layer + "_w", 0, dims_w, wbytes, 0.0, 0, scales)
        bt = tensor(layer + "_b", 1, [len(w)], struct.pack("<%di" % len(bias), *bias))
        return wt, bt

    ops = []
    t_in = act("input", [1, H, W, 1])
    w, b = params("conv1", "input", [8, 3, 3, 1])
    t_c1 = act("conv1_out", [1, H, W, 8])
    ops.append(("conv1", 0, 1, 1, [t_in, w, b], t_c1))
    w, b = params("conv2", "conv1_out", [8, 3, 3, 8])
    t_c2 = act("conv2_out", [1, H, W, 8])
    ops.append(("conv2", 0, 1, 1, [t_c1, w, b], t_c2))
    t_add = act("add1_out", [1, H, W, 8])
    ops.append(("add1", 2, 0, 1, [t_c1, t_c2], t_add))
    w, b = params("conv3", "add1_out", [8, 3, 3, 8])
    t_c3 = act("conv3_out", [1, H // 2, W // 2, 8])
    ops.append(("conv3", 0, 1, 2, [t_add, w, b], t_c3))
    w, b = params("fc1", "conv3_out", [FC1_UNITS, 512])
    t_f1 = act("fc1_out", [1, FC1_UNITS])
    ops.append(("fc1", 1, 1, 1, [t_c3, w, b], t_f1))
    w, b = params("fc2", "fc1_out", [CLASSES, FC1_UNITS])
    t_lg = act("logits", [1, CLASSES])
    ops.append(("fc2", 1, 0, 1, [t_f1, w, b], t_lg))
    t_out = act("probabilities", [1, CLASSES])
    ops.append(("softmax", 3, 0, 1, [t_lg], t_out))
    return tensors, buffers, ops, t_in, t_out


def align4(b):
    return b + b"\0" * (-len(b) % 4)


def serialize(tensors, buffers, ops, t_in, t_out):
    strings = b""
    names = {}

    def name(s):
        nonlocal strings
        if s not in names:
            names[s] = len(strings)
            strings += s.encode() + b"\0"
        return names[s]

    header_len = 40
    tensors_off = header_len
    operators_off = tensors_off + 28 * len(tensors)
    buffers_off = operators_off + 16 * len(ops)
    data_off = buffers_off + 8 * len(buffers)
    table, data = b"", b""
    for buf in buffers:
        table += struct.pack("<II", data_off + len(data), len(buf))
        data += align4(buf)
    trec = b""
    for (n, ttype, dims, buf, scale, zp, cs) in tensors:
        d = (dims + [0, 0, 0, 0])[:4]
        trec += struct.pack("<BBH4HfiHHI", ttype, len(dims), buf, *d, scale, zp, cs, 0, name(n))
    orec = b""
    for (n, opcode, relu, stride, ins, out) in ops:
        i = (ins + [0xFFFF] * 3)[:3]
        orec += struct.pack("<BBBB3HHI", opcode, relu, stride, 0, *i, out, name(n))
    strings_off = data_off + len(data)
    body = trec + orec + table + data + align4(strings)
    total = header_len + len(body)
    header = struct.pack("<4sII6H4I", b"TML1", 1, total, len(tensors), len(ops), len(buffers),
                         t_in, t_out, 0, tensors_off, operators_off, buffers_off, strings_off)
    assert len(header) == header_len
    return header + body


def zrle(raw):
    out = bytearray(b"TMZ1" + struct.pack("<I", len(raw)))
    i, lit = 0, bytearray()

    def flush():
        while lit:
            chunk = lit[:128]
            del lit[:128]
            out.append(len(chunk) - 1)
            out.extend(chunk)

    while i < len(raw):
        run = 0
        while i + run < len(raw) and raw[i + run] == 0 and run < 128:
            run += 1
        if run >= 2:
            flush()
            out.append(0x80 + run - 1)
            i += run
        else:
            lit.append(raw[i])
            i += 1
    flush()
    return bytes(out)


def unzrle(z):
    assert z[:4] == b"TMZ1"
    n = struct.unpack_from("<I", z, 4)[0]
    out, i = bytearray(), 8
    while i < len(z):
        t = z[i]
        i += 1
        if t < 0x80:
            out += z[i:i + t + 1]
            i += t + 1
        else:
            out += b"\0" * (t - 0x7F)
    assert len(out) == n
    return bytes(out)


def c_array(name, data, align):
    lines = ["alignas(%d) const uint8_t %s[%d] = {" % (align, name, len(data))]
    for k in range(0, len(data), 16):
        lines.append("    " + ", ".join("0x%02x" % b for b in data[k:k + 16]) + ",")
    lines.append("};")
    return "\n".join(lines)


def main():
    out_cpp = sys.argv[1]
    out_h = out_cpp[:-4] + ".h"
    blob = serialize(*build())
    z = zrle(blob)
    assert unzrle(z) == blob
    guard = "GESTURE_MODEL_H"
    with open(out_h, "w") as f:
        f.write("// generated by tools/gen_cpp_model.py: do not edit\n")
        f.write("#ifndef %s\n#define %s\n" % (guard, guard))
        f.write("#include <cstddef>\n#include <cstdint>\n\n")
        f.write("extern const uint8_t g_gesture_model[%d];\n" % len(blob))
        f.write("extern const uint8_t g_gesture_model_zrle[%d];\n" % len(z))
        f.write("constexpr size_t kGestureModelSize = %d;\n" % len(blob))
        f.write("constexpr size_t kGestureModelZrleSize = %d;\n" % len(z))
        f.write("\n#endif\n")
    with open(out_cpp, "w") as f:
        f.write("// generated by tools/gen_cpp_model.py: do not edit\n")
        f.write('#include "gesture_model.h"\n\n')
        f.write(c_array("g_gesture_model", blob, 16) + "\n\n")
        f.write(c_array("g_gesture_model_zrle", z, 4) + "\n")


if __name__ == "__main__":
    main()
