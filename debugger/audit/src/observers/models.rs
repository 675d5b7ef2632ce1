//! Which model each cycle ran, where the firmware alternates between models (a device that runs
//! a keyword model one cycle and a gesture model the next; the TFLM firmware's three models in
//! turn), so that a leak in one model's cycles is told per model ("24 B per cycle of
//! micro_speech, every 3rd cycle") instead of averaged over every cycle.
//!
//! What tells the models apart is an argument of a lifecycle call, `[lifecycle] model`:
//! - `"auto"` (the default): the first argument of the cycle's first `load` call (or, without
//!   a load role, of its first call of the start role) that points into the firmware's
//!   read-only memory: a model descriptor or a model's bytes in flash. The argument is chosen
//!   at the first call that has one, and kept. A pointer into RAM (an engine object, a buffer)
//!   is no key: it is the same every cycle, or different every cycle.
//! - `"ROLE"` or `"ROLE:N"`: argument N (0-based, 0 by default, at most 3) of the cycle's first
//!   call of ROLE, whatever its value (a pointer, an index).
//! - `"none"`: cycles are not keyed.
//!
//! A key is named once, from the firmware: the NUL-terminated string it points to; else the
//! string the word it points to points to (a descriptor whose first member is the model's
//! name, as `struct { const char *name; ... }`); else the data symbol it is in (`g_model`,
//! `kModels+36`); else the number.
//!
//! A cycle's loss is leak.rhai's measure: free bytes at the end of the cycle before it (after
//! its last release, else at the next cycle's start) less those at its own end; the audit's
//! first cycle, and the first after a reset or a failure run, have none. Each model keeps the
//! count of its cycles, their spacing, and the total, largest and smallest loss: bounded
//! whatever the run's length. A key that takes more than [`MAX_MODELS`] values is no model
//! key: keying stops. The report lists the models only when there were at least two.

use memlife_report::model::ModelCycles;

use crate::session::Regs;

/// Most distinct models kept; more values than this is no model key.
pub const MAX_MODELS: usize = 64;

/// The longest model name read from the firmware.
const MAX_NAME: usize = 48;

/// What tells the models apart (`[lifecycle] model`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ModelKey {
    /// A load call's first argument into read-only memory (see the module doc).
    #[default]
    Auto,
    /// Cycles are not keyed.
    Off,
    /// Argument `arg` of the cycle's first call of `role`.
    Arg {
        /// The role.
        role: String,
        /// The argument, 0-based.
        arg: usize,
    },
}

impl ModelKey {
    /// Reads `auto`, `none`, `ROLE` or `ROLE:N`.
    pub fn parse(text: &str) -> Result<ModelKey, String> {
        let text = text.trim();
        match text {
            "auto" | "" => return Ok(ModelKey::Auto),
            "none" => return Ok(ModelKey::Off),
            _ => {}
        }
        let (role, arg) = match text.split_once(':') {
            Some((role, n)) => {
                let arg = n.trim().parse::<usize>().ok().filter(|a| *a < 4).ok_or_else(|| {
                    format!(
                        "[lifecycle] model = \"{text}\": the argument after `:` is 0 to 3 (the four argument registers)"
                    )
                })?;
                (role.trim(), arg)
            }
            None => (text, 0),
        };
        if role.is_empty() {
            return Err(format!(
                "[lifecycle] model = \"{text}\": name a role (\"load\", \"load:1\"), or \"auto\" or \"none\""
            ));
        }
        Ok(ModelKey::Arg {
            role: role.to_string(),
            arg,
        })
    }

    /// The role whose call gives the key, of the roles `present` (in lifecycle order) with
    /// `start` the one that begins cycles; `None` when cycles are not keyed.
    pub fn role<'a>(&'a self, present: &[&'a str], start: &'a str) -> Option<&'a str> {
        match self {
            ModelKey::Off => None,
            ModelKey::Auto => Some(if present.contains(&"load") {
                "load"
            } else {
                start
            }),
            ModelKey::Arg { role, .. } => present.contains(&role.as_str()).then_some(role),
        }
    }
}

impl std::str::FromStr for ModelKey {
    type Err = String;

    fn from_str(text: &str) -> Result<ModelKey, String> {
        ModelKey::parse(text)
    }
}

/// How a model is named and told apart from memory: the firmware's read-only data, and the
/// target's memory for the rest.
pub trait ModelMemory {
    /// Whether `addr` is in the firmware's read-only memory (flash).
    fn is_const(&self, addr: u64) -> bool;
    /// Up to `len` bytes at `addr`, or `None` when they cannot be read.
    fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>>;
    /// The data symbol holding `addr`, and the offset of `addr` in it.
    fn symbol_at(&self, addr: u64) -> Option<(String, u64)>;
}

/// The models seen, and the state their losses need.
#[derive(Debug, Default)]
pub struct Models {
    key: ModelKey,
    /// With [`ModelKey::Auto`]: the argument chosen, once one pointed into read-only memory.
    auto_arg: Option<usize>,
    /// Per model, in the order first seen, with whether its spacing varied.
    seen: Vec<(ModelCycles, bool)>,
    /// Free bytes at the end of the last cycle observed, for the next one's loss.
    last_free: Option<u64>,
    /// Cycles observed (keyed or not).
    cycles: u64,
    /// Keying stopped: the key took more values than there can be models.
    given_up: bool,
}

impl Models {
    /// Keys cycles as `key` says.
    pub fn new(key: ModelKey) -> Self {
        Models {
            key,
            ..Models::default()
        }
    }

    /// How cycles are keyed.
    pub fn key(&self) -> &ModelKey {
        &self.key
    }

    /// The key of a call of the keyed role with these registers (its arguments), or `None`.
    pub fn key_of(&mut self, regs: &Regs, mem: &dyn ModelMemory) -> Option<u64> {
        if self.given_up {
            return None;
        }
        match &self.key {
            ModelKey::Off => None,
            ModelKey::Arg { arg, .. } => Some(regs.arg(*arg)),
            ModelKey::Auto => {
                let arg = match self.auto_arg {
                    Some(a) => a,
                    None => {
                        let a = (0..4).find(|i| mem.is_const(regs.arg(*i)))?;
                        self.auto_arg = Some(a);
                        a
                    }
                };
                Some(regs.arg(arg)).filter(|v| mem.is_const(*v))
            }
        }
    }

    /// The name of the model `key` stands for (read from the firmware the first time).
    pub fn name_of(&mut self, key: u64, mem: &mut dyn ModelMemory) -> String {
        if let Some((m, _)) = self.seen.iter().find(|(m, _)| m.key == key) {
            return m.name.clone();
        }
        name_from(key, mem)
    }

    /// Cycle `index` completed, of the model `model` (key and name) when it was keyed, with
    /// `free` bytes free at its end.
    pub fn cycle_done(&mut self, index: u64, model: Option<(u64, String)>, free: u64) {
        self.cycles += 1;
        let loss = self.last_free.replace(free).map(|before| {
            i64::try_from(before).unwrap_or(i64::MAX) - i64::try_from(free).unwrap_or(i64::MAX)
        });
        let Some((key, name)) = model.filter(|_| !self.given_up) else {
            return;
        };
        if !self.seen.iter().any(|(m, _)| m.key == key) {
            if self.seen.len() >= MAX_MODELS {
                tracing::warn!(
                    "the model key took more than {MAX_MODELS} values: it tells no models apart, and cycles are not keyed by model"
                );
                self.seen.clear();
                self.given_up = true;
                return;
            }
            self.seen.push((
                ModelCycles {
                    name,
                    key,
                    first_cycle: index,
                    ..ModelCycles::default()
                },
                false,
            ));
        }
        let Some((m, irregular)) = self.seen.iter_mut().find(|(m, _)| m.key == key) else {
            return;
        };
        if m.cycles > 0 {
            let spacing = index.saturating_sub(m.last_cycle);
            match m.every {
                None if !*irregular => m.every = Some(spacing),
                Some(e) if e != spacing => {
                    m.every = None;
                    *irregular = true;
                }
                _ => {}
            }
        }
        m.cycles += 1;
        m.last_cycle = index;
        if let Some(loss) = loss {
            m.most = if m.measured == 0 {
                loss
            } else {
                m.most.max(loss)
            };
            m.least = if m.measured == 0 {
                loss
            } else {
                m.least.min(loss)
            };
            m.measured += 1;
            m.lost = m.lost.saturating_add(loss);
        }
    }

    /// The heap starts over (a reset) or what happened since the last cycle was not one (a
    /// failure run): the next cycle's loss cannot be measured.
    pub fn break_sequence(&mut self) {
        self.last_free = None;
    }

    /// Cycles observed.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The models, when the firmware alternated between at least two.
    pub fn report(&self) -> Vec<ModelCycles> {
        if self.seen.len() < 2 {
            return Vec::new();
        }
        self.seen.iter().map(|(m, _)| m.clone()).collect()
    }
}

/// A printable NUL-terminated string of 2 to [`MAX_NAME`] characters at `addr`.
fn string_at(addr: u64, mem: &mut dyn ModelMemory) -> Option<String> {
    let bytes = mem.read(addr, MAX_NAME + 1)?;
    let end = bytes.iter().position(|b| *b == 0)?;
    let text = bytes.get(..end)?;
    (end >= 2 && text.iter().all(|b| b.is_ascii_graphic() || *b == b' '))
        .then(|| String::from_utf8_lossy(text).into_owned())
}

/// The name of a key (see the module doc).
fn name_from(key: u64, mem: &mut dyn ModelMemory) -> String {
    if key > 0xffff {
        if let Some(s) = string_at(key, mem) {
            return s;
        }
        let word = mem
            .read(key, 4)
            .and_then(|b| b.try_into().ok())
            .map(|b: [u8; 4]| u64::from(u32::from_le_bytes(b)));
        if let Some(s) = word.filter(|w| *w > 0xffff).and_then(|w| string_at(w, mem)) {
            return s;
        }
        if let Some((symbol, offset)) = mem.symbol_at(key) {
            return if offset == 0 {
                symbol
            } else {
                format!("{symbol}+{offset}")
            };
        }
        return format!("{key:#010x}");
    }
    format!("model {key}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Flash at 0x0800_0000 with three descriptors whose first word points to a name, and
    /// RAM elsewhere.
    struct Flash(Vec<(u64, Vec<u8>)>);

    impl ModelMemory for Flash {
        fn is_const(&self, addr: u64) -> bool {
            (0x0800_0000..0x0810_0000).contains(&addr)
        }
        fn read(&mut self, addr: u64, len: usize) -> Option<Vec<u8>> {
            self.0.iter().find_map(|(a, bytes)| {
                let off = usize::try_from(addr.checked_sub(*a)?).ok()?;
                let end = (off + len).min(bytes.len());
                bytes.get(off..end).map(<[u8]>::to_vec)
            })
        }
        fn symbol_at(&self, addr: u64) -> Option<(String, u64)> {
            (0x0800_2000..0x0800_2100)
                .contains(&addr)
                .then(|| ("g_model".into(), addr - 0x0800_2000))
        }
    }

    fn flash() -> Flash {
        let mut descriptors = Vec::new();
        for ptr in [0x0800_1100u32, 0x0800_1110, 0x0800_1120] {
            descriptors.extend_from_slice(&ptr.to_le_bytes());
            descriptors.extend_from_slice(&[0; 12]);
        }
        let names = b"hello_world\0\0\0\0\0micro_speech\0\0\0\0magic_wand\0".to_vec();
        Flash(vec![
            (0x0800_1000, descriptors),
            (0x0800_1100, names),
            (0x0800_2000, vec![0x1c, 0, 0, 0, b'T', b'F', b'L', b'3']),
        ])
    }

    fn regs(args: [u64; 4]) -> Regs {
        Regs {
            pc: 0,
            sp: 0,
            lr: 0,
            args,
        }
    }

    #[test]
    fn the_key_is_spelt_auto_none_or_a_roles_argument() {
        assert_eq!(ModelKey::parse("auto"), Ok(ModelKey::Auto));
        assert_eq!(ModelKey::parse("none"), Ok(ModelKey::Off));
        assert_eq!(
            ModelKey::parse("load:1"),
            Ok(ModelKey::Arg {
                role: "load".into(),
                arg: 1
            })
        );
        assert_eq!(
            ModelKey::parse("switch"),
            Ok(ModelKey::Arg {
                role: "switch".into(),
                arg: 0
            })
        );
        for bad in ["load:4", "load:x", ":1"] {
            assert!(ModelKey::parse(bad).is_err(), "{bad}");
        }
        let present = ["build", "run"];
        assert_eq!(ModelKey::Auto.role(&present, "build"), Some("build"));
        assert_eq!(ModelKey::Auto.role(&["load", "run"], "run"), Some("load"));
        assert_eq!(
            ModelKey::parse("switch").unwrap().role(&present, "build"),
            None
        );
    }

    #[test]
    fn auto_keys_by_the_first_argument_in_flash_and_names_it_from_the_firmware() {
        let mut mem = flash();
        let mut models = Models::new(ModelKey::Auto);
        // A load(engine in RAM, descriptor in flash): the second argument.
        let key = models.key_of(&regs([0x2000_0100, 0x0800_1010, 0, 0]), &mem);
        assert_eq!(key, Some(0x0800_1010));
        assert_eq!(models.name_of(0x0800_1010, &mut mem), "micro_speech");
        // The argument stays the chosen one: a RAM value there is no key.
        assert_eq!(
            models.key_of(&regs([0x0800_1000, 0x2000_0000, 0, 0]), &mem),
            None
        );
        // A model's bytes named by its symbol; a string argument is its own name.
        assert_eq!(models.name_of(0x0800_2000, &mut mem), "g_model");
        assert_eq!(models.name_of(0x0800_1100, &mut mem), "hello_world");
        assert_eq!(models.name_of(0x0800_2004, &mut mem), "g_model+4");
        assert_eq!(models.name_of(2, &mut mem), "model 2");
        assert_eq!(models.name_of(0x0800_3000, &mut mem), "0x08003000");
    }

    #[test]
    fn a_leak_in_one_models_cycles_is_that_models_with_its_spacing() {
        let mut models = Models::new(ModelKey::Auto);
        // Three models in turn; the second loses 24 B each time.
        let mut free = 1000;
        for index in 1..=9u64 {
            let m = (index - 1) % 3;
            if m == 1 {
                free -= 24;
            }
            models.cycle_done(index, Some((m, format!("m{m}"))), free);
        }
        let report = models.report();
        assert_eq!(report.len(), 3);
        let leaking = &report[1];
        assert_eq!(
            (
                leaking.cycles,
                leaking.first_cycle,
                leaking.last_cycle,
                leaking.every
            ),
            (3, 2, 8, Some(3))
        );
        assert_eq!(
            (leaking.measured, leaking.lost, leaking.most, leaking.least),
            (3, 72, 24, 24)
        );
        // The first cycle of the audit has nothing to measure against.
        assert_eq!((report[0].measured, report[0].lost), (2, 0));
        assert_eq!(
            leaking.leak_text(models.cycles()).as_deref(),
            Some("24 B per cycle of m1 (every 3rd cycle)")
        );
        // One model only: nothing to report.
        let mut one = Models::new(ModelKey::Auto);
        one.cycle_done(1, Some((5, "a".into())), 100);
        one.cycle_done(2, Some((5, "a".into())), 100);
        assert!(one.report().is_empty());
    }

    #[test]
    fn an_irregular_spacing_is_none_and_too_many_values_are_no_model() {
        let mut models = Models::new(ModelKey::Auto);
        for (index, key) in [(1, 1), (2, 2), (3, 1), (4, 1), (5, 2)] {
            models.cycle_done(index, Some((key, format!("k{key}"))), 100);
        }
        let r = models.report();
        assert_eq!((r[0].every, r[1].every), (None, Some(3)));
        let mut buffers = Models::new(ModelKey::Auto);
        for index in 0..=MAX_MODELS as u64 {
            buffers.cycle_done(index + 1, Some((index, "x".into())), 100);
        }
        assert!(buffers.report().is_empty());
        buffers.cycle_done(100, Some((1, "x".into())), 100);
        assert!(buffers.report().is_empty(), "given up for good");
    }
}
