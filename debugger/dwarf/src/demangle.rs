//! C++ names as people write them. The ELF's symbols carry Itanium-ABI linkage names
//! (`_ZN6tinyml11Interpreter6InvokeEi`); users and reports use the demangled form
//! (`tinyml::Interpreter::Invoke(int)`). Demangling is gimli-rs's `cpp_demangle`, the demangler
//! made for this (maintained beside addr2line): DWARF's `DW_AT_name` plus its parent scopes would
//! give `tinyml::Interpreter::Invoke` but not the parameter list that tells overloads apart.
//!
//! A function is found by its linkage name, its full demangled name, its demangled name without
//! the parameter list when that is unique (`tinyml::Model::Open`), or a unique `::`-suffix of
//! either (`Interpreter::Invoke(int)`, `Model::Open`). Overloads asked for without their
//! parameters are ambiguous and not found; the error's nearest name shows the full ones.

/// The demangled form of a linkage name, `None` for names that are not mangled C++.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    sym.demangle().ok()
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

/// The index (into `names`, demangled names with their position) of the one function a user's
/// name stands for, by the rules of the module docs; `None` when none or several match.
pub fn find<'a>(
    names: impl Iterator<Item = (usize, &'a str)> + Clone,
    wanted: &str,
) -> Option<usize> {
    let unique = |pred: &dyn Fn(&str) -> bool| {
        let mut hits = names.clone().filter(|(_, n)| pred(n));
        let first = hits.next()?;
        hits.next().is_none().then_some(first.0)
    };
    if wanted.contains('(') {
        unique(&|n| is_scoped(n, wanted))
    } else {
        unique(&|n| is_scoped(without_params(n), wanted))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const NAMES: [&str; 4] = [
        "_ZN6tinyml11Interpreter6InvokeEi",
        "_ZN6tinyml11Interpreter6InvokeEv",
        "_ZN6tinyml5Model4OpenERKNS_10ModelImageE",
        "_ZN3app5SetupERKN6tinyml10ModelImageERKNS0_10OpResolverE",
    ];

    #[test]
    fn demangles_methods_namespaces_and_overloads() {
        let d: Vec<String> = NAMES.iter().map(|n| demangle(n).unwrap()).collect();
        assert_eq!(d[0], "tinyml::Interpreter::Invoke(int)");
        assert_eq!(d[1], "tinyml::Interpreter::Invoke()");
        assert_eq!(without_params(&d[2]), "tinyml::Model::Open");
        assert_eq!(demangle("model_load"), None);
        let idx = |w: &str| find(d.iter().map(String::as_str).enumerate(), w);
        assert_eq!(idx("tinyml::Interpreter::Invoke(int)"), Some(0));
        assert_eq!(idx("Interpreter::Invoke()"), Some(1));
        assert_eq!(idx("tinyml::Model::Open"), Some(2));
        assert_eq!(idx("Model::Open"), Some(2));
        assert_eq!(idx("app::Setup"), Some(3));
        // Overloads asked for without parameters are ambiguous; a partial word is not a scope.
        assert_eq!(idx("Interpreter::Invoke"), None);
        assert_eq!(idx("Open"), Some(2));
        assert_eq!(idx("el::Open"), None);
        assert_eq!(without_params("Foo::operator()(int)"), "Foo::operator()");
        assert_eq!(
            without_params("std::vector<int (*)(int)>::size() const"),
            "std::vector<int (*)(int)>::size"
        );
    }
}
