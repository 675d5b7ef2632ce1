//! The two model images in flash: per-layer int8 weights, generated at compile time from a
//! seed (the same bytes on every build), and the input the engine runs them on.

/// Layers of the network (each a dense-like op over the activations).
pub const LAYERS: usize = 8;
/// Weight bytes per layer.
pub const LAYER_WEIGHTS: [usize; LAYERS] = [2048, 3072, 4096, 2048, 3072, 4096, 2048, 1024];
/// All weight bytes of one image.
pub const WEIGHTS_TOTAL: usize = {
    let mut total = 0;
    let mut i = 0;
    while i < LAYERS {
        total += LAYER_WEIGHTS[i];
        i += 1;
    }
    total
};
/// Activations per layer (i32 each).
pub const ACTIVATIONS: usize = 256;

/// A serialized model: its name and its weights, layer after layer.
#[allow(dead_code)] // `name` is for a debugger
pub struct ModelImage {
    pub name: &'static str,
    pub bytes: &'static [u8; WEIGHTS_TOTAL],
}

const fn generate(seed: u32) -> [u8; WEIGHTS_TOTAL] {
    let mut out = [0u8; WEIGHTS_TOTAL];
    let mut state = seed;
    let mut i = 0;
    while i < WEIGHTS_TOTAL {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        out[i] = (state >> 24) as u8;
        i += 1;
    }
    out
}

static WAKE_BYTES: [u8; WEIGHTS_TOTAL] = generate(0x5741_4b45);
static COMMAND_BYTES: [u8; WEIGHTS_TOTAL] = generate(0x434d_4421);

/// The first model of each lifecycle.
pub static WAKE_WORD: ModelImage = ModelImage {
    name: "wake_word",
    bytes: &WAKE_BYTES,
};
/// The model `model_switch` loads.
pub static COMMAND_WORD: ModelImage = ModelImage {
    name: "command_word",
    bytes: &COMMAND_BYTES,
};

/// Offset of layer `i`'s weights in an image.
pub fn layer_offset(i: usize) -> usize {
    LAYER_WEIGHTS[..i].iter().sum()
}
