//! The model lifecycle, as in the C firmware's engine: `model_load`, `graph_build` (one
//! `op_init` per layer), `inference_run` (one `op_invoke` per layer), `model_switch` and
//! `model_release`. Every allocation goes through `alloc` (`Vec`, `Box`) to the global
//! allocator. The lifecycle functions are `#[inline(never)]` so a debugger can stop at them by
//! their Rust names (`firmware::engine::graph_build`); the engine lives in `main`'s frame and is
//! passed by reference, so the compiler cannot turn the layer index into a constant or move it
//! out of the second argument register.
//!
//! The scenarios (cargo features) change one thing each:
//! * `load-peak`: the image is loaded "compressed": a RAM copy of the file, the inflated image
//!   and the per-layer weights are live at once (chunked otherwise: one 512-byte staging buffer).
//! * `leak-on-switch`: `model_switch` takes an error path on unload that forgets the op contexts.
//! * `fragmentation`: the first build indexes the weights through short-lived windows and keeps
//!   one small record per window for good, scattered over the heap.

// One heap block per op context and per record, as a C engine would malloc them.
#![allow(clippy::vec_box)]

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use crate::model::{ACTIVATIONS, LAYER_WEIGHTS, LAYERS, ModelImage, layer_offset};

/// Staging buffer of the chunked load.
const LOAD_CHUNK: usize = 512;

/// One layer's prepared state (what `op_init` builds).
#[allow(dead_code)] // read by a debugger, not by the engine
pub struct OpContext {
    pub layer: u32,
    pub multiplier: i32,
    pub shift: u32,
    pub bias: [i32; 16],
}

/// Per-window record of the fragmentation scenario's index: kept for good.
#[allow(dead_code)] // read by a debugger, not by the engine
pub struct IndexRecord {
    pub window: u32,
    pub checksum: u32,
    pub length: u32,
    /// Byte histogram of the window, in 32 buckets of 5 counters: larger than any hole the
    /// load leaves below (its 512-byte staging buffer), so first fit puts it after its window.
    pub histogram: [[u32; 5]; 32],
}

/// The engine's state between lifecycle calls.
#[derive(Default)]
pub struct Engine {
    pub model: Option<&'static ModelImage>,
    pub weights: Vec<Box<[i8]>>,
    pub contexts: Vec<Box<OpContext>>,
    pub activations: Vec<i32>,
    pub output_crc: u32,
}

/// Engine errors; main exits with the engine code on any.
#[derive(Debug)]
pub struct EngineError;

/// The fragmentation scenario's index records, kept across lifecycles.
static mut INDEX: Option<Vec<Box<IndexRecord>>> = None;

/// Loads `model`'s weights onto the heap (phase "load").
#[inline(never)]
pub fn model_load(engine: &mut Engine, model: &'static ModelImage) -> Result<(), EngineError> {
    load_weights(engine, model)
}

#[inline(never)]
fn load_weights(engine: &mut Engine, model: &'static ModelImage) -> Result<(), EngineError> {
    if !engine.weights.is_empty() {
        return Err(EngineError);
    }
    let mut weights = Vec::with_capacity(LAYERS);
    if cfg!(feature = "load-peak") {
        // Zone 1: the file in RAM; zone 2: the inflated image; zone 3: the layers.
        let file: Vec<u8> = model.bytes.to_vec();
        let inflated: Vec<u8> = file.iter().map(|b| b ^ 0x5a).collect();
        for (i, &len) in LAYER_WEIGHTS.iter().enumerate() {
            let at = layer_offset(i);
            let layer: Box<[i8]> = inflated[at..at + len]
                .iter()
                .map(|&b| (b ^ 0x5a) as i8)
                .collect();
            weights.push(layer);
        }
        drop(inflated);
        drop(file);
    } else {
        let mut chunk = vec![0u8; LOAD_CHUNK];
        for (i, &len) in LAYER_WEIGHTS.iter().enumerate() {
            let mut layer = vec![0i8; len].into_boxed_slice();
            let at = layer_offset(i);
            for (n, out) in layer.chunks_mut(LOAD_CHUNK).enumerate() {
                let src = &model.bytes[at + n * LOAD_CHUNK..at + n * LOAD_CHUNK + out.len()];
                flash_read(&mut chunk[..out.len()], src);
                for (o, &b) in out.iter_mut().zip(chunk.iter()) {
                    *o = b as i8;
                }
            }
            weights.push(layer);
        }
    }
    engine.weights = weights;
    engine.model = Some(model);
    Ok(())
}

/// Stands in for an SPI-flash read: a debugger sees each chunk fetch.
#[inline(never)]
fn flash_read(dst: &mut [u8], src: &[u8]) {
    dst.copy_from_slice(src);
}

/// The fragmentation scenario: on the first build only, index the weights through scratch
/// windows, all live at once, and keep one small record per window for good. Each record
/// lands right after its window, so once the windows are freed the records stay scattered over
/// the heap, and every later lifecycle has to fit between them.
#[inline(never)]
fn index_weights(engine: &Engine) {
    const WINDOWS: usize = 13;
    const WINDOW: usize = 4096;
    let index = &raw mut INDEX;
    // SAFETY: single-threaded firmware; INDEX is only touched here.
    let index = unsafe { &mut *index };
    if index.is_some() {
        return;
    }
    let mut windows: Vec<Vec<u8>> = Vec::with_capacity(WINDOWS);
    let mut records = Vec::with_capacity(WINDOWS);
    for w in 0..WINDOWS {
        let layer = &engine.weights[w % LAYERS];
        let mut window: Vec<u8> = Vec::with_capacity(WINDOW);
        window.extend(layer.iter().cycle().take(WINDOW).map(|&b| b as u8));
        let checksum = window
            .iter()
            .fold(0u32, |a, &b| a.rotate_left(5) ^ u32::from(b));
        let mut record = Box::new(IndexRecord {
            window: w as u32,
            checksum,
            length: WINDOW as u32,
            histogram: [[0; 5]; 32],
        });
        for &b in &window {
            record.histogram[usize::from(b >> 3)][usize::from(b & 7) % 5] += 1;
        }
        records.push(record);
        windows.push(window);
    }
    drop(windows);
    *index = Some(records);
}

/// Builds the graph: the activation buffer, then one `op_init` per layer (phase "build").
#[inline(never)]
pub fn graph_build(engine: &mut Engine) -> Result<(), EngineError> {
    if engine.weights.len() != LAYERS || !engine.contexts.is_empty() {
        return Err(EngineError);
    }
    if cfg!(feature = "fragmentation") {
        index_weights(engine);
    }
    engine.activations = vec![0; ACTIVATIONS];
    engine.contexts = Vec::with_capacity(LAYERS);
    for i in 0..LAYERS {
        op_init(engine, i)?;
    }
    Ok(())
}

/// Prepares layer `index` (the build phase's per-layer span).
#[inline(never)]
pub fn op_init(engine: &mut Engine, index: usize) -> Result<(), EngineError> {
    prepare(engine, index)
}

/// Layer `index`'s requantisation parameters and per-channel bias, pushed to the contexts.
fn prepare(engine: &mut Engine, index: usize) -> Result<(), EngineError> {
    let w = engine.weights.get(index).ok_or(EngineError)?;
    let mut bias = [0i32; 16];
    for (c, b) in bias.iter_mut().enumerate() {
        *b = i32::from(w[c * 7 % w.len()]) * 16;
    }
    let sum: i32 = w.iter().take(64).map(|&x| i32::from(x)).sum();
    engine.contexts.push(Box::new(OpContext {
        layer: index as u32,
        multiplier: 1 + (sum.unsigned_abs() % 97) as i32,
        shift: 7,
        bias,
    }));
    Ok(())
}

/// Runs the network once over the fixed input; the result's CRC goes to `output_crc`
/// (phase "run").
#[inline(never)]
pub fn inference_run(engine: &mut Engine) -> Result<(), EngineError> {
    if engine.contexts.len() != LAYERS || engine.activations.len() != ACTIVATIONS {
        return Err(EngineError);
    }
    for (j, a) in engine.activations.iter_mut().enumerate() {
        *a = (j as i32 * 37 % 255) - 127;
    }
    for i in 0..LAYERS {
        op_invoke(engine, i)?;
    }
    engine.output_crc = crc32(&engine.activations);
    Ok(())
}

/// Runs layer `index`: a dense-like op into a scratch buffer, requantised back to int8 range.
#[inline(never)]
pub fn op_invoke(engine: &mut Engine, index: usize) -> Result<(), EngineError> {
    let ctx = engine.contexts.get(index).ok_or(EngineError)?;
    let w = engine.weights.get(index).ok_or(EngineError)?;
    let act = &mut engine.activations;
    let mut scratch: Vec<i32> = vec![0; ACTIVATIONS];
    for (j, out) in scratch.iter_mut().enumerate() {
        let mut acc = ctx.bias[j % 16];
        for k in 0..8 {
            let x = act[(j * 7 + k * 13) % ACTIVATIONS];
            acc += x * i32::from(w[(j * 8 + k) % w.len()]);
        }
        *out = acc;
    }
    for (a, &s) in act.iter_mut().zip(scratch.iter()) {
        *a = ((s * ctx.multiplier) >> ctx.shift).clamp(-128, 127);
    }
    Ok(())
}

/// Tears the current model down and loads and builds `model` in its place (phase "switch").
#[inline(never)]
pub fn model_switch(engine: &mut Engine, model: &'static ModelImage) -> Result<(), EngineError> {
    let contexts = core::mem::take(&mut engine.contexts);
    if unload_failed(engine) {
        // The error path: the contexts should be dropped here too, but are forgotten.
        core::mem::forget(contexts);
    } else {
        drop(contexts);
    }
    engine.activations = Vec::new();
    engine.weights = Vec::new();
    engine.model = None;
    load_weights(engine, model)?;
    rebuild(engine)
}

/// Whether unloading reports an error: only in the leak scenario (a stand-in for a driver
/// that fails to power down the accelerator), and the engine carries on anyway.
#[inline(never)]
fn unload_failed(engine: &Engine) -> bool {
    cfg!(feature = "leak-on-switch") && engine.model.is_some()
}

/// `graph_build`'s work for `model_switch`, without its per-layer span.
#[inline(never)]
fn rebuild(engine: &mut Engine) -> Result<(), EngineError> {
    engine.activations = vec![0; ACTIVATIONS];
    engine.contexts = Vec::with_capacity(LAYERS);
    for i in 0..LAYERS {
        prepare(engine, i)?;
    }
    Ok(())
}

/// Frees everything the model holds (phase "release").
#[inline(never)]
pub fn model_release(engine: &mut Engine) -> Result<(), EngineError> {
    if engine.model.is_none() {
        return Err(EngineError);
    }
    engine.contexts = Vec::new();
    engine.activations = Vec::new();
    engine.weights = Vec::new();
    engine.model = None;
    Ok(())
}

/// CRC-32 (IEEE, bitwise) of the activations' low bytes.
fn crc32(values: &[i32]) -> u32 {
    let mut crc = !0u32;
    for &v in values {
        crc ^= u32::from(v as u8);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
