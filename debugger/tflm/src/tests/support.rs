//! What the unit tests build: flatbuffers (a small writer of our own, enough for the TFLite
//! schema fields the reader uses) and RAM images laid out word by word.

use memlife_core::Snapshot;

/// A flatbuffer value.
#[derive(Debug, Clone)]
pub enum Fbv {
    Table(Vec<(u16, Fbv)>),
    U8(u8),
    U32(u32),
    I32(i32),
    Str(String),
    VecI32(Vec<i32>),
    VecU8(Vec<u8>),
    VecTable(Vec<Fbv>),
}

fn align(buf: &mut Vec<u8>, to: usize) {
    while !buf.len().is_multiple_of(to) {
        buf.push(0);
    }
}

fn put_u32_at(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` (a table, vector or string) at the end of `buf`; returns where it starts (for a
/// table, the table itself, its vtable just before it). Children follow their parent, so every
/// offset points forward, as the format wants.
fn write(buf: &mut Vec<u8>, v: &Fbv) -> usize {
    match v {
        Fbv::Table(fields) => {
            let slots = fields
                .iter()
                .map(|(i, _)| *i as usize + 1)
                .max()
                .unwrap_or(0);
            // Every field in an 8-byte slot of the table, after the soffset (8 bytes with pad).
            let table_len = 8 + 8 * fields.len();
            align(buf, 4);
            let vt = buf.len();
            buf.extend_from_slice(&((4 + 2 * slots) as u16).to_le_bytes());
            buf.extend_from_slice(&(table_len as u16).to_le_bytes());
            let mut slot_offs = vec![0u16; slots];
            for (k, (i, _)) in fields.iter().enumerate() {
                slot_offs[*i as usize] = (8 + 8 * k) as u16;
            }
            for s in &slot_offs {
                buf.extend_from_slice(&s.to_le_bytes());
            }
            align(buf, 8);
            let table = buf.len();
            buf.extend_from_slice(&((table - vt) as i32).to_le_bytes());
            buf.extend_from_slice(&[0; 4]);
            let mut children = Vec::new();
            for (_, f) in fields {
                let at = buf.len();
                match f {
                    Fbv::U8(x) => buf.extend_from_slice(&[*x, 0, 0, 0, 0, 0, 0, 0]),
                    Fbv::U32(x) => {
                        buf.extend_from_slice(&x.to_le_bytes());
                        buf.extend_from_slice(&[0; 4]);
                    }
                    Fbv::I32(x) => {
                        buf.extend_from_slice(&x.to_le_bytes());
                        buf.extend_from_slice(&[0; 4]);
                    }
                    child => {
                        buf.extend_from_slice(&[0; 8]);
                        children.push((at, child));
                    }
                }
            }
            for (at, child) in children {
                let pos = write(buf, child);
                put_u32_at(buf, at, (pos - at) as u32);
            }
            table
        }
        Fbv::Str(s) => {
            align(buf, 4);
            let at = buf.len();
            buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
            buf.extend_from_slice(s.as_bytes());
            buf.push(0);
            at
        }
        Fbv::VecI32(xs) => {
            align(buf, 4);
            let at = buf.len();
            buf.extend_from_slice(&(xs.len() as u32).to_le_bytes());
            for x in xs {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            at
        }
        Fbv::VecU8(xs) => {
            align(buf, 4);
            let at = buf.len();
            buf.extend_from_slice(&(xs.len() as u32).to_le_bytes());
            buf.extend_from_slice(xs);
            at
        }
        Fbv::VecTable(ts) => {
            align(buf, 4);
            let at = buf.len();
            buf.extend_from_slice(&(ts.len() as u32).to_le_bytes());
            let first = buf.len();
            buf.extend(std::iter::repeat_n(0u8, 4 * ts.len()));
            for (k, t) in ts.iter().enumerate() {
                let slot = first + 4 * k;
                let pos = write(buf, t);
                put_u32_at(buf, slot, (pos - slot) as u32);
            }
            at
        }
        scalar => panic!("a scalar ({scalar:?}) is written inside a table"),
    }
}

/// The bytes of a flatbuffer whose root is `root`, and the offset of the root table in them.
pub fn finish(root: &Fbv) -> (Vec<u8>, usize) {
    let mut buf = vec![0u8; 8];
    let pos = write(&mut buf, root);
    put_u32_at(&mut buf, 0, pos as u32);
    (buf, pos)
}

/// A tensor of a test model: name, `TensorType`, shape, constant data.
pub struct T(pub &'static str, pub u8, pub &'static [i32], pub bool);

/// A TFLite model (schema 3): one subgraph with `tensors`, `inputs`, `outputs`, `ops` (operator
/// code index, inputs, outputs) and `codes` (builtin code, custom name).
pub fn tflite_model(
    tensors: &[T],
    inputs: &[i32],
    outputs: &[i32],
    ops: &[(u32, &[i32], &[i32])],
    codes: &[(i32, Option<&str>)],
) -> (Vec<u8>, usize) {
    // Buffer 0 is the empty sentinel; each constant tensor gets its own buffer with data.
    let mut buffers = vec![Fbv::Table(vec![])];
    let tensors: Vec<Fbv> = tensors
        .iter()
        .map(|T(name, ty, shape, constant)| {
            let mut fields = vec![
                (0, Fbv::VecI32(shape.to_vec())),
                (1, Fbv::U8(*ty)),
                (3, Fbv::Str((*name).into())),
            ];
            if *constant {
                let elems: i32 = shape.iter().product();
                buffers.push(Fbv::Table(vec![(
                    0,
                    Fbv::VecU8(vec![1; elems.max(1) as usize]),
                )]));
                fields.push((2, Fbv::U32(buffers.len() as u32 - 1)));
            }
            Fbv::Table(fields)
        })
        .collect();
    let ops: Vec<Fbv> = ops
        .iter()
        .map(|(code, ins, outs)| {
            Fbv::Table(vec![
                (0, Fbv::U32(*code)),
                (1, Fbv::VecI32(ins.to_vec())),
                (2, Fbv::VecI32(outs.to_vec())),
            ])
        })
        .collect();
    let codes: Vec<Fbv> = codes
        .iter()
        .map(|(builtin, custom)| {
            let mut f = vec![
                (0, Fbv::U8((*builtin).min(127) as u8)),
                (3, Fbv::I32(*builtin)),
            ];
            if let Some(c) = custom {
                f.push((1, Fbv::Str((*c).into())));
            }
            Fbv::Table(f)
        })
        .collect();
    let subgraph = Fbv::Table(vec![
        (0, Fbv::VecTable(tensors)),
        (1, Fbv::VecI32(inputs.to_vec())),
        (2, Fbv::VecI32(outputs.to_vec())),
        (3, Fbv::VecTable(ops)),
    ]);
    finish(&Fbv::Table(vec![
        (0, Fbv::U32(3)),
        (1, Fbv::VecTable(codes)),
        (2, Fbv::VecTable(vec![subgraph])),
        (4, Fbv::VecTable(buffers)),
    ]))
}

/// RAM at `base`, written word by word.
#[derive(Debug, Clone)]
pub struct Image {
    pub base: u64,
    pub bytes: Vec<u8>,
}

impl Image {
    pub fn new(base: u64, size: usize) -> Self {
        Image {
            base,
            bytes: vec![0; size],
        }
    }

    pub fn put(&mut self, addr: u64, data: &[u8]) {
        let off = (addr - self.base) as usize;
        self.bytes[off..off + data.len()].copy_from_slice(data);
    }

    pub fn u32(&mut self, addr: u64, v: u64) {
        self.put(addr, &(v as u32).to_le_bytes());
    }

    pub fn u8(&mut self, addr: u64, v: u8) {
        self.put(addr, &[v]);
    }

    pub fn get_u32(&self, addr: u64) -> u64 {
        let off = (addr - self.base) as usize;
        u64::from(u32::from_le_bytes(
            self.bytes[off..off + 4].try_into().unwrap(),
        ))
    }

    pub fn snapshot(&self) -> Snapshot {
        memlife_testkit::ram::at(self.base, self.bytes.clone())
    }
}
