//! Frameworks as anchors: the framework functions a lifecycle role's application function
//! calls. On a TensorFlow Lite Micro firmware, build is the application function that calls
//! `MicroInterpreter::AllocateTensors`, run the one that calls `MicroInterpreter::Invoke`, load
//! the one that reads the model with `tflite::GetModel` (a header function, inlined: found in
//! DWARF's inlined-subroutine entries; the function that also calls `AllocateTensors` builds,
//! it does not load), release the one that destroys the interpreter. Whatever the functions'
//! names, and never the framework's own functions, which the anchors' callers are not.

use memlife_dwarf::Symbols;

use super::callgraph::CallGraph;

/// A framework function whose application caller plays a role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    /// The role its caller plays.
    pub role: &'static str,
    /// The framework function (demangled, without parameters).
    pub callee: &'static str,
    /// Why, in init's comments.
    pub says: &'static str,
}

/// TensorFlow Lite Micro's anchors, in the 2020 layout and current TFLM alike, in namespace
/// `tflite` (TFLM until 2026-08) and `tflite::micro` (tflite-micro of 2026-10, whose
/// `GetModel` stays in `tflite` with the flatbuffer schema).
pub const TFLM: &[Anchor] = &[
    Anchor {
        role: "build",
        callee: "tflite::MicroInterpreter::AllocateTensors",
        says: "calls tflite::MicroInterpreter::AllocateTensors",
    },
    Anchor {
        role: "build",
        callee: "tflite::micro::MicroInterpreter::AllocateTensors",
        says: "calls tflite::micro::MicroInterpreter::AllocateTensors",
    },
    Anchor {
        role: "run",
        callee: "tflite::MicroInterpreter::Invoke",
        says: "calls tflite::MicroInterpreter::Invoke",
    },
    Anchor {
        role: "run",
        callee: "tflite::micro::MicroInterpreter::Invoke",
        says: "calls tflite::micro::MicroInterpreter::Invoke",
    },
    Anchor {
        role: "load",
        callee: "tflite::GetModel",
        says: "reads the model (tflite::GetModel)",
    },
    Anchor {
        role: "release",
        callee: "tflite::MicroInterpreter::~MicroInterpreter",
        says: "destroys the interpreter (tflite::MicroInterpreter::~MicroInterpreter)",
    },
    Anchor {
        role: "release",
        callee: "tflite::micro::MicroInterpreter::~MicroInterpreter",
        says: "destroys the interpreter (tflite::micro::MicroInterpreter::~MicroInterpreter)",
    },
];

/// An application function that calls an anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// The caller (an index into the call graph).
    pub function: usize,
    /// The anchor it calls.
    pub anchor: &'static Anchor,
}

/// Whether the image has TensorFlow Lite Micro's interpreter (in `tflite` or `tflite::micro`).
pub fn has_tflm(graph: &CallGraph) -> bool {
    graph.functions().iter().any(|f| {
        f.name.starts_with("tflite::MicroInterpreter::")
            || f.name.starts_with("tflite::micro::MicroInterpreter::")
    })
}

/// The application functions (`is_app`) that call each anchor, directly or with it inlined.
pub fn hits(graph: &CallGraph, symbols: &Symbols, is_app: &dyn Fn(usize) -> bool) -> Vec<Hit> {
    if !has_tflm(graph) {
        return Vec::new();
    }
    let mut out: Vec<Hit> = Vec::new();
    let mut add = |function: usize, anchor: &'static Anchor| {
        let hit = Hit { function, anchor };
        if is_app(function) && !out.contains(&hit) {
            out.push(hit);
        }
    };
    for anchor in TFLM {
        add_callers(graph, symbols, anchor.callee, &mut |f| add(f, anchor));
    }
    without_builders_as_loaders(out)
}

/// Calls `add` with every function that calls `callee` or has it inlined.
fn add_callers(graph: &CallGraph, symbols: &Symbols, callee: &str, add: &mut dyn FnMut(usize)) {
    let targets = graph.named(callee);
    for &t in &targets {
        for &caller in graph.callers(t) {
            add(caller);
        }
    }
    if targets.is_empty() {
        // Inlined everywhere (GetModel is a header function).
        for instance in symbols.inlined_instances(callee) {
            let into = instance
                .address
                .and_then(|a| symbols.function_at(a))
                .and_then(|s| graph.at(s.address));
            if let Some(f) = into {
                add(f);
            }
        }
    }
}

/// The function that builds the interpreter reads the model too (`GetModel` for the
/// constructor): it is the builder, not a loader.
fn without_builders_as_loaders(mut hits: Vec<Hit>) -> Vec<Hit> {
    let builders: Vec<usize> = hits
        .iter()
        .filter(|h| h.anchor.role == "build")
        .map(|h| h.function)
        .collect();
    hits.retain(|h| h.anchor.role != "load" || !builders.contains(&h.function));
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_interpreter_anchor_is_there_in_both_namespaces() {
        for a in TFLM
            .iter()
            .filter(|a| a.callee.starts_with("tflite::Micro"))
        {
            let micro = a.callee.replacen("tflite::", "tflite::micro::", 1);
            assert!(
                TFLM.iter().any(|b| b.role == a.role && b.callee == micro),
                "{micro} missing"
            );
        }
    }

    #[test]
    fn the_builder_reads_the_model_but_is_not_the_loader() {
        let anchor = |role: &str| TFLM.iter().find(|a| a.role == role).unwrap();
        // 1 = LoadModel (GetModel), 2 = BuildInterpreter (GetModel and AllocateTensors).
        let hits = vec![
            Hit {
                function: 1,
                anchor: anchor("load"),
            },
            Hit {
                function: 2,
                anchor: anchor("load"),
            },
            Hit {
                function: 2,
                anchor: anchor("build"),
            },
        ];
        let kept: Vec<(usize, &str)> = without_builders_as_loaders(hits)
            .iter()
            .map(|h| (h.function, h.anchor.role))
            .collect();
        assert_eq!(kept, [(1, "load"), (2, "build")]);
    }
}
