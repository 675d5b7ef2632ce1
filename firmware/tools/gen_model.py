#!/usr/bin/env python3
"""Generate the two demo models (wake word, command word) as C arrays in flash.

Deterministic (fixed-seed PRNG, no dependencies beyond python3), run at build
time: `gen_model.py OUT.c` (also writes OUT.h). For each model it writes three images of the same
weights, and each scenario ELF links only the one it uses (gc-sections drops
the rest):
  <m>_raw   serialized model, every conv weight in NCHW (what the kernels want)
  <m>_nhwc  the same, but conv_b's weights stored NHWC (scenario `reorder`)
  <m>_rle   the raw image compressed with a PackBits-style RLE (scenario
            `load-peak`); src/rle.c is the matching decoder.
Weights are "pruned": whole groups of 8 are zero with probability 0.6, which
is what makes the RLE image about half the size.

File format (little endian), parsed by src/loader.c:
  header  u32 magic 'MLKW', u16 version=1, u16 n_records, u32 file_len, u32 model_id
  record  u16 layer, u8 layout (0 NCHW, 1 NHWC), u8 0, u32 w_len, u32 b_len,
          i32 mult, i32 shift                               (20 bytes each)
  data    per record: bias (int32[b_len/4]) then weights (int8[w_len]),
          padded to 4 bytes
The layer shapes must match src/graph.c (the loader checks the sizes).
"""
import math
import struct
import sys

# layer index, name, kind, in_ch, out_ch, k  (must match src/graph.c)
LAYERS = [
    (0, "conv1", "conv", 1, 16, 3),
    (1, "dw2", "dw", 16, 16, 3),
    (2, "pw2", "conv", 16, 32, 1),
    (3, "dw3", "dw", 32, 32, 3),
    (4, "pw3", "conv", 32, 32, 1),
    (6, "conv_a", "conv", 32, 32, 3),
    (7, "conv_b", "conv", 32, 32, 3),
    (10, "fc5", "dense", 1024, 8, 1),
    (11, "head_p3", "conv", 16, 16, 1),
    (12, "head_p4", "conv", 32, 16, 1),
    (13, "head_p5", "conv", 32, 16, 1),
]
REORDER_LAYER = 7  # conv_b
INPUT_SHAPE = (1, 32, 16)


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


def quant(fan_in, density):
    """mult/shift so that acc*mult>>shift has a useful int8 range."""
    scale = 1.0 / (math.sqrt(fan_in * density) * 70.0)
    shift = 14
    while round(scale * (1 << shift)) < (1 << 14):
        shift += 1
    return round(scale * (1 << shift)), shift


def gen_weights(rng, n):
    out = bytearray()
    while len(out) < n:
        group = min(8, n - len(out))
        if rng.next() % 10 < 6:
            out += bytes(group)
        else:
            for _ in range(group):
                v = (rng.next() % 255) - 127
                out.append(v & 0xFF)
    return out


def serialize(model_id, seed, nhwc_layer=None):
    rng = Rng(seed)
    recs, data = [], bytearray()
    for idx, _name, kind, cin, cout, k in LAYERS:
        if kind == "dw":
            w_len, fan_in = cout * k * k, k * k
        elif kind == "dense":
            w_len, fan_in = cout * cin, cin
        else:
            w_len, fan_in = cout * cin * k * k, cin * k * k
        w = gen_weights(rng, w_len)
        bias = [((rng.next() % 2001) - 1000) for _ in range(cout)]
        mult, shift = quant(fan_in, 0.4)
        layout = 0
        if idx == nhwc_layer:
            # Same weights, stored [O][kh][kw][I] instead of [O][I][kh][kw].
            nhwc = bytearray(w_len)
            for o in range(cout):
                for i in range(cin):
                    for y in range(k):
                        for x in range(k):
                            nhwc[((o * k + y) * k + x) * cin + i] = w[((o * cin + i) * k + y) * k + x]
            w, layout = nhwc, 1
        blob = struct.pack("<%di" % cout, *bias) + bytes(w)
        blob += bytes((-len(blob)) % 4)
        recs.append(struct.pack("<HBBIIii", idx, layout, 0, w_len, 4 * cout, mult, shift))
        data += blob
    hdr_len = 16 + 20 * len(recs)
    total = hdr_len + len(data)
    hdr = struct.pack("<IHHII", 0x574B4C4D, 1, len(recs), total, model_id)
    return hdr + b"".join(recs) + bytes(data)


def rle(raw):
    """PackBits-like: t<128: t+1 literals follow; t>=128: next byte x (t-126)."""
    out, i, n = bytearray(), 0, len(raw)
    while i < n:
        run = 1
        while i + run < n and run < 129 and raw[i + run] == raw[i]:
            run += 1
        if run >= 2:
            out += bytes((run + 126, raw[i]))
            i += run
            continue
        j = i
        while j < n and j - i < 128 and not (j + 1 < n and raw[j + 1] == raw[j]):
            j += 1
        if j == i:
            j = i + 1
        out.append(j - i - 1)
        out += raw[i:j]
        i = j
    return bytes(out)


def unrle(comp):
    out, i = bytearray(), 0
    while i < len(comp):
        t = comp[i]
        if t < 128:
            out += comp[i + 1:i + 2 + t]
            i += 2 + t
        else:
            out += bytes([comp[i + 1]]) * (t - 126)
            i += 2
    return bytes(out)


def c_array(name, data):
    lines = ["const uint8_t %s[%d] __attribute__((aligned(4))) = {" % (name, len(data))]
    for i in range(0, len(data), 16):
        lines.append("    " + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",")
    lines.append("};")
    return "\n".join(lines)


def main():
    out = sys.argv[1]
    hdr = [
        "/* Generated by firmware/tools/gen_model.py - do not edit. */",
        "#ifndef MODEL_DATA_H",
        "#define MODEL_DATA_H",
        "#include <stdint.h>",
    ]
    parts = [
        "/* Generated by firmware/tools/gen_model.py - do not edit. */",
        "#include <stdint.h>",
        "#include \"model_data.h\"",
    ]
    for mname, mid, seed in (("model_wake", 1, 0x1234567), ("model_cmd", 2, 0x7654321)):
        raw = serialize(mid, seed)
        nhwc = serialize(mid, seed, REORDER_LAYER)
        comp = rle(raw)
        assert unrle(comp) == raw
        assert len(nhwc) == len(raw)
        parts.append(c_array(mname + "_raw", raw))
        parts.append(c_array(mname + "_nhwc", nhwc))
        parts.append(c_array(mname + "_rle", comp))
        up = mname.upper()
        hdr.append("#define %s_RAW_LEN %du" % (up, len(raw)))
        hdr.append("#define %s_RLE_LEN %du" % (up, len(comp)))
        for kind, n in (("raw", len(raw)), ("nhwc", len(nhwc)), ("rle", len(comp))):
            hdr.append("extern const uint8_t %s_%s[%d];" % (mname, kind, n))
        print("%s: raw %d bytes, rle %d bytes (%.0f%%)" % (mname, len(raw), len(comp),
                                                            100.0 * len(comp) / len(raw)))
    rng = Rng(0xC0FFEE)
    c, h, w = INPUT_SHAPE
    # A smooth "spectrogram" with noise, so activations are not all saturated.
    inp = bytearray()
    for y in range(h):
        for x in range(w):
            v = int(60 * math.sin(y / 4.0) * math.cos(x / 3.0)) + (rng.next() % 21) - 10
            inp.append(v & 0xFF)
    parts.append(c_array("g_input_features", inp))
    hdr.append("extern const uint8_t g_input_features[%d];" % len(inp))
    hdr.append("#endif")
    with open(out, "w") as f:
        f.write("\n\n".join(parts) + "\n")
    with open(out[:-2] + ".h", "w") as f:
        f.write("\n".join(hdr) + "\n")


if __name__ == "__main__":
    main()
