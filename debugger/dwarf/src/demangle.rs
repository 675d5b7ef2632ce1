//! C++ and Rust names as people write them. The ELF's symbols carry linkage names
//! (`_ZN6tinyml11Interpreter6InvokeEi`, `_ZN8firmware6engine11graph_build17h0123456789abcdefE`,
//! `_RNvNtCs1234_8firmware6engine11graph_build`); users and reports use the demangled form
//! (`tinyml::Interpreter::Invoke(int)`, `firmware::engine::graph_build`). C++ goes through
//! gimli-rs's `cpp_demangle` (maintained beside addr2line): DWARF's `DW_AT_name` plus its parent
//! scopes would give `tinyml::Interpreter::Invoke` but not the parameter list that tells overloads
//! apart. Rust goes through `rustc-demangle`, both manglings: legacy (Itanium-shaped, recognised
//! by its `17h` + 16 hex digits hash element, which C++ never has) and v0 (`_R`). Rust names are
//! shown without the hash and the crate disambiguators, as in the source.
//!
//! A function is found by its linkage name, its full demangled name, its demangled name without
//! the parameter list when that is unique (`tinyml::Model::Open`), or a unique `::`-suffix of
//! either (`Interpreter::Invoke(int)`, `Model::Open`), the way gdb takes names:
//!
//! - names at one address are one function: GCC emits a class's complete and base constructors
//!   (`C1`, `C2`) and destructors (`D1`, `D2`) as aliases, which all demangle to
//!   `edge::Interpreter::~Interpreter()`;
//! - a virtual destructor also has a deleting variant (`D0`) at an address of its own, which
//!   destroys through the complete one and then frees: the name stands for the complete
//!   destructor (`D1`), which every destruction runs;
//! - a parameter list without qualifiers also finds a `const` (or `volatile`, `&`, `&&`)
//!   method, unless an unqualified overload has exactly that name;
//! - overloads asked for without their parameters are ambiguous: [`Lookup::Ambiguous`] lists
//!   them, for the error to show.

/// The demangled form of a linkage name, `None` for names that are not mangled C++ or Rust.
pub fn demangle(name: &str) -> Option<String> {
    if is_rust(name) {
        let sym = rustc_demangle::try_demangle(name).ok()?;
        // `{:#}`: without the legacy hash and v0's crate disambiguators.
        return Some(format!("{sym:#}"));
    }
    if !name.starts_with("_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    sym.demangle().ok()
}

/// Whether `name` is a Rust symbol: v0 (`_R`), or legacy (`_ZN…E` whose last path element is
/// the 17-character hash `h` + 16 hex digits, possibly followed by an LLVM `.suffix`).
fn is_rust(name: &str) -> bool {
    if name.starts_with("_R") {
        return true;
    }
    if !name.starts_with("_ZN") {
        return false;
    }
    // The hash element, then `E`, then at most a `.suffix` (legacy path elements may contain
    // `..` themselves, so the suffix is found after the hash, not at the first dot).
    name.rfind("17h").is_some_and(|i| {
        let rest = &name[i + 3..];
        rest.len() >= 17
            && rest[..16].bytes().all(|c| c.is_ascii_hexdigit())
            && rest[16..].starts_with('E')
            && (rest.len() == 17 || rest[17..].starts_with('.'))
    })
}

/// Whether a (demangled) function only passes an allocation on: C++'s `operator new`/`delete`,
/// and Rust's standard `alloc` and `core` crates (`alloc::boxed::Box<T>::new`,
/// `alloc::raw_vec::RawVecInner<A>::finish_grow`, `<alloc::vec::Vec<T> as Clone>::clone`,
/// `__rust_alloc`). An allocation site names the first function past them.
pub fn is_allocation_glue(name: &str) -> bool {
    let std = |p: &str| p.starts_with("alloc::") || p.starts_with("core::");
    if let Some(imp) = name.strip_prefix('<') {
        // `<Type as Trait>::method`: glue when the impl is the standard library's, i.e. the
        // trait is `alloc`'s own (`SpecFromElem`) or the type is a standard or primitive one
        // (`<i8 as core::clone::Clone>`); a user type implementing `core::default::Default`
        // is user code.
        let (ty, rest) = imp.split_once(" as ").unwrap_or((imp, ""));
        let primitive = !ty.contains("::");
        return rest.starts_with("alloc::") || std(ty) || (primitive && std(rest));
    }
    name.starts_with("operator new")
        || name.starts_with("operator delete")
        || std(name)
        || name.starts_with("__rust_")
        || name.starts_with("__rdl_")
}

/// `name` with its parameter list (and any qualifiers after it) removed: the text before the
/// first `(` outside template arguments. `operator()` keeps its own parentheses.
pub fn without_params(name: &str) -> &str {
    let mut depth = 0i32;
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b'(' if depth == 0 => {
                if name[..i].ends_with("operator") && name[i..].starts_with("()") {
                    i += 2;
                    continue;
                }
                return &name[..i];
            }
            _ => {}
        }
        i += 1;
    }
    name
}

/// Whether `full` is `wanted` or ends with `::wanted`.
fn is_scoped(full: &str, wanted: &str) -> bool {
    full == wanted
        || full
            .strip_suffix(wanted)
            .is_some_and(|head| head.ends_with("::"))
}

/// A function symbol a user's name is looked for among.
#[derive(Debug, Clone, Copy)]
pub struct Candidate<'a> {
    /// Its position in the caller's symbol list.
    pub index: usize,
    /// The linkage name (`_ZN6tinyml11InterpreterD1Ev`).
    pub mangled: &'a str,
    /// Its demangled form.
    pub demangled: &'a str,
    /// Its address (the Thumb bit cleared), which tells aliases from overloads.
    pub address: u64,
}

/// What a user's function name stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// One function: the index of the candidate to use.
    Found(usize),
    /// Several functions at different addresses: their demangled names, each once, sorted.
    Ambiguous(Vec<String>),
    /// No function by that name.
    Missing,
}

/// The trailing qualifiers a parameter list may carry (`() const`, `() &&`).
const QUALIFIERS: [&str; 4] = [" const", " volatile", " &&", " &"];

/// `name` without the qualifiers after its parameter list.
fn unqualified(name: &str) -> &str {
    let mut name = name;
    while let Some(rest) = QUALIFIERS.iter().find_map(|q| name.strip_suffix(q)) {
        name = rest;
    }
    name
}

/// Which constructor or destructor variant a linkage name is (`C1`, `C2`, `D0`, `D1`, `D2`):
/// the last `C<n>E` / `D<n>E` of the mangled nested name.
fn structor_variant(mangled: &str) -> Option<(u8, u8)> {
    let bytes = mangled.as_bytes();
    (1..bytes.len().saturating_sub(1))
        .rev()
        .find(|&i| {
            matches!(bytes[i - 1], b'C' | b'D')
                && matches!(bytes[i], b'0'..=b'2')
                && bytes[i + 1] == b'E'
        })
        .map(|i| (bytes[i - 1], bytes[i] - b'0'))
}

/// The one address among several that a constructor's or destructor's name stands for: every
/// candidate a variant of one structor, the deleting destructor (`D0`) left out, one address
/// left.
fn complete_structor(matches: &[Candidate]) -> Option<usize> {
    let first = matches.first()?;
    if matches.iter().any(|c| c.demangled != first.demangled) {
        return None;
    }
    let mut kept = Vec::new();
    for c in matches {
        match structor_variant(c.mangled)? {
            (b'D', 0) => {}
            _ => kept.push(c),
        }
    }
    let one = kept.first()?;
    kept.iter()
        .all(|c| c.address == one.address)
        .then_some(one.index)
}

/// The function a user's name stands for, by the rules of the module docs.
pub fn find<'a>(names: impl Iterator<Item = Candidate<'a>> + Clone, wanted: &str) -> Lookup {
    let matching = |pred: &dyn Fn(&str) -> bool| -> Vec<Candidate<'a>> {
        names.clone().filter(|c| pred(c.demangled)).collect()
    };
    let mut matches = if wanted.contains('(') {
        let exact = matching(&|n| is_scoped(n, wanted));
        if exact.is_empty() && unqualified(wanted) == wanted {
            matching(&|n| is_scoped(unqualified(n), wanted))
        } else {
            exact
        }
    } else {
        matching(&|n| is_scoped(without_params(n), wanted))
    };
    let Some(first) = matches.first().copied() else {
        return Lookup::Missing;
    };
    if matches.iter().all(|c| c.address == first.address) {
        return Lookup::Found(first.index);
    }
    if let Some(index) = complete_structor(&matches) {
        return Lookup::Found(index);
    }
    let mut names: Vec<String> = matches.drain(..).map(|c| c.demangled.to_string()).collect();
    names.sort();
    names.dedup();
    Lookup::Ambiguous(names)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    const NAMES: [&str; 4] = [
        "_ZN6tinyml11Interpreter6InvokeEi",
        "_ZN6tinyml11Interpreter6InvokeEv",
        "_ZN6tinyml5Model4OpenERKNS_10ModelImageE",
        "_ZN3app5SetupERKN6tinyml10ModelImageERKNS0_10OpResolverE",
    ];

    /// Candidates at distinct addresses, in order (the names' own index).
    fn candidates(d: &[String]) -> impl Iterator<Item = Candidate<'_>> + Clone {
        d.iter().enumerate().map(|(index, n)| Candidate {
            index,
            mangled: "",
            demangled: n,
            address: 0x1000 + 4 * index as u64,
        })
    }

    fn found(lookup: Lookup) -> Option<usize> {
        match lookup {
            Lookup::Found(i) => Some(i),
            _ => None,
        }
    }

    /// GCC's structors of two classes (`nm` of the C++ firmware): aliases share an address,
    /// the deleting destructor has its own.
    const STRUCTORS: [(&str, u64); 7] = [
        (
            "_ZN6tinyml11InterpreterC1ERKNS_5ModelERKNS_10OpResolverE",
            0x40c,
        ),
        (
            "_ZN6tinyml11InterpreterC2ERKNS_5ModelERKNS_10OpResolverE",
            0x40c,
        ),
        ("_ZN6tinyml11InterpreterD1Ev", 0x434),
        ("_ZN6tinyml11InterpreterD2Ev", 0x434),
        ("_ZN6tinyml3ops6Conv2DD0Ev", 0xed4),
        ("_ZN6tinyml3ops6Conv2DD1Ev", 0xa58),
        ("_ZN6tinyml3ops6Conv2DD2Ev", 0xa58),
    ];

    #[test]
    fn constructors_and_destructors_are_found_by_their_demangled_names() {
        let d: Vec<String> = STRUCTORS
            .iter()
            .map(|(n, _)| demangle(n).unwrap())
            .collect();
        let names = || {
            STRUCTORS
                .iter()
                .zip(&d)
                .enumerate()
                .map(|(index, ((m, a), n))| Candidate {
                    index,
                    mangled: m,
                    demangled: n,
                    address: *a,
                })
        };
        let at = |w: &str| match find(names(), w) {
            Lookup::Found(i) => Some(STRUCTORS[i].1),
            other => panic!("{w}: {other:?}"),
        };
        // Aliases (C1/C2, D1/D2) are one function, with or without the parameter list.
        assert_eq!(at("tinyml::Interpreter::~Interpreter"), Some(0x434));
        assert_eq!(at("tinyml::Interpreter::~Interpreter()"), Some(0x434));
        assert_eq!(at("Interpreter::~Interpreter"), Some(0x434));
        assert_eq!(at("tinyml::Interpreter::Interpreter"), Some(0x40c));
        // A virtual destructor's deleting variant (D0) runs the complete one: D1 is chosen.
        assert_eq!(at("tinyml::ops::Conv2D::~Conv2D"), Some(0xa58));
        assert_eq!(at("Conv2D::~Conv2D()"), Some(0xa58));
        assert_eq!(
            structor_variant("_ZN6tinyml3ops6Conv2DD0Ev"),
            Some((b'D', 0))
        );
        assert_eq!(structor_variant("_ZN6tinyml5Model4OpenEv"), None);
    }

    #[test]
    fn const_methods_are_found_with_or_without_the_qualifier_and_overloads_are_listed() {
        let d: Vec<String> = [
            "tinyml::Tensor::bytes() const",
            "tinyml::Tensor::data()",
            "tinyml::Tensor::data() const",
            "tinyml::Tensor::shape(int) const",
            "tinyml::Tensor::shape(int, int)",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let idx = |w: &str| found(find(candidates(&d), w));
        assert_eq!(idx("Tensor::bytes() const"), Some(0));
        assert_eq!(idx("Tensor::bytes()"), Some(0));
        assert_eq!(idx("tinyml::Tensor::bytes"), Some(0));
        // The unqualified overload has exactly that name; the const one needs its qualifier.
        assert_eq!(idx("Tensor::data()"), Some(1));
        assert_eq!(idx("Tensor::data() const"), Some(2));
        assert_eq!(idx("Tensor::shape(int)"), Some(3));
        assert_eq!(
            find(candidates(&d), "Tensor::shape"),
            Lookup::Ambiguous(vec![
                "tinyml::Tensor::shape(int) const".to_string(),
                "tinyml::Tensor::shape(int, int)".to_string()
            ])
        );
        assert_eq!(find(candidates(&d), "Tensor::size"), Lookup::Missing);
    }

    #[test]
    fn demangles_rust_legacy_and_v0_without_hashes() {
        assert_eq!(
            demangle("_ZN8firmware6engine11graph_build17h0123456789abcdefE").as_deref(),
            Some("firmware::engine::graph_build")
        );
        // An LLVM suffix after the hash is kept out of the name.
        assert_eq!(
            demangle("_ZN8firmware6engine7op_init17hfedcba9876543210E.llvm.123").as_deref(),
            Some("firmware::engine::op_init")
        );
        assert_eq!(
            demangle(
                "_ZN79_$LT$embedded_alloc..tlsf..Heap$u20$as$u20$core..alloc..global..GlobalAlloc$GT$5alloc17h73d8663ffa917a9dE"
            )
            .as_deref(),
            Some("<embedded_alloc::tlsf::Heap as core::alloc::global::GlobalAlloc>::alloc")
        );
        // v0 (rustc -C symbol-mangling-version=v0, the firmware of firmware/rust).
        assert_eq!(
            demangle("_RNvNtCsqTDXggCcZs_8firmware6engine11graph_build").as_deref(),
            Some("firmware::engine::graph_build")
        );
        let v0 = "_RNvXs1_NtCscPJcJ8TioI_14embedded_alloc4tlsfNtB5_4HeapNtNtNtCsaFjvQsOnSLx_4core5alloc6global11GlobalAlloc5alloc";
        assert_eq!(
            demangle(v0).as_deref(),
            Some("<embedded_alloc::tlsf::Heap as core::alloc::global::GlobalAlloc>::alloc")
        );
        // C++ names without a hash element stay C++.
        assert_eq!(
            demangle("_ZN6tinyml11Interpreter6InvokeEi").as_deref(),
            Some("tinyml::Interpreter::Invoke(int)")
        );
        let d = [
            demangle("_ZN8firmware6engine11graph_build17h0123456789abcdefE").unwrap(),
            demangle("_RNvNtCsqTDXggCcZs_8firmware6engine7op_init").unwrap(),
        ];
        let idx = |w: &str| found(find(candidates(&d), w));
        assert_eq!(idx("firmware::engine::graph_build"), Some(0));
        assert_eq!(idx("graph_build"), Some(0));
        assert_eq!(idx("engine::op_init"), Some(1));
    }

    #[test]
    fn allocation_glue_is_cpp_new_delete_and_rusts_alloc_and_core() {
        for glue in [
            "operator new(unsigned int)",
            "operator delete(void*, unsigned int)",
            "alloc::alloc::exchange_malloc",
            "alloc::raw_vec::RawVecInner<A>::finish_grow",
            "<alloc::vec::Vec<T> as alloc::vec::spec_from_iter::SpecFromIter<T,I>>::from_iter",
            "core::iter::traits::iterator::Iterator::collect",
            "__rust_alloc",
            "<i8 as alloc::vec::spec_from_elem::SpecFromElem>::from_elem",
            "<u8 as core::clone::Clone>::clone",
        ] {
            assert!(is_allocation_glue(glue), "{glue}");
        }
        for site in [
            "firmware::engine::op_init",
            "<firmware::engine::Engine as core::default::Default>::default",
            "allocator::make",
            "model_load",
        ] {
            assert!(!is_allocation_glue(site), "{site}");
        }
    }

    #[test]
    fn demangles_methods_namespaces_and_overloads() {
        let d: Vec<String> = NAMES.iter().map(|n| demangle(n).unwrap()).collect();
        assert_eq!(d[0], "tinyml::Interpreter::Invoke(int)");
        assert_eq!(d[1], "tinyml::Interpreter::Invoke()");
        assert_eq!(without_params(&d[2]), "tinyml::Model::Open");
        assert_eq!(demangle("model_load"), None);
        let idx = |w: &str| found(find(candidates(&d), w));
        assert_eq!(idx("tinyml::Interpreter::Invoke(int)"), Some(0));
        assert_eq!(idx("Interpreter::Invoke()"), Some(1));
        assert_eq!(idx("tinyml::Model::Open"), Some(2));
        assert_eq!(idx("Model::Open"), Some(2));
        assert_eq!(idx("app::Setup"), Some(3));
        // Overloads asked for without parameters are ambiguous; a partial word is not a scope.
        assert_eq!(
            find(candidates(&d), "Interpreter::Invoke"),
            Lookup::Ambiguous(vec![
                "tinyml::Interpreter::Invoke()".to_string(),
                "tinyml::Interpreter::Invoke(int)".to_string()
            ])
        );
        assert_eq!(idx("Open"), Some(2));
        assert_eq!(idx("el::Open"), None);
        assert_eq!(without_params("Foo::operator()(int)"), "Foo::operator()");
        assert_eq!(
            without_params("std::vector<int (*)(int)>::size() const"),
            "std::vector<int (*)(int)>::size"
        );
    }
}
