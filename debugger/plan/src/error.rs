//! [`PlanError`]: why an audit plan cannot be made; [`NameError`] and [`NameCheckError`]: which
//! name the settings give is not in the firmware (`crate::names` checks them). Every one is the
//! user's to fix (exit code 2), and its message says what and where.

/// Why memlife.toml and the flags do not make a plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A settings file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A settings file says something memlife cannot use.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong (with line and column when the file's syntax is).
        message: String,
    },
    /// The flags and the file together leave something out, or contradict each other.
    #[error("{0}")]
    Usage(String),
    /// A name the settings give is not in the firmware (the message names the nearest one).
    #[error(transparent)]
    NotInFirmware(#[from] NameCheckError),
}

/// What the roles are, for messages.
const ROLE_LIST: &str = "load, build, run, switch, release or one in [phases]";

/// A name the settings give that the firmware or memlife does not have. `place` is where it was
/// given (`[phases] load`, `[trace] scope`), `hint` the nearest valid name
/// (`; did you mean `nn_open`?`) or nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// A function that must be in the ELF is not.
    #[error("{place}: no function `{name}` in the ELF{hint}")]
    NoFunction {
        /// Where it was given.
        place: String,
        /// The name.
        name: String,
        /// The nearest function.
        hint: String,
    },
    /// A scoped role's caller is not a function of the ELF.
    #[error("[phases] {role}: caller `{name}` is not a function in the ELF{hint}")]
    NoCaller {
        /// The scoped role.
        role: String,
        /// The caller given.
        name: String,
        /// The nearest function.
        hint: String,
    },
    /// A scope given to a role that has no function.
    #[error("[phases] {role}: a scope without a function")]
    ScopeWithoutFunction {
        /// The role.
        role: String,
    },
    /// A `[spans]` key or `[trace] scope` name that is neither a role nor a function.
    #[error("{place} `{name}` is neither a role ({ROLE_LIST}) nor a function in the ELF{hint}")]
    NeitherRoleNorFunction {
        /// `[spans]` or `[trace] scope:`.
        place: &'static str,
        /// The name.
        name: String,
        /// The nearest role or function.
        hint: String,
    },
    /// A `[labels]` key that is neither a role nor a function.
    #[error("[labels] `{name}` is neither a role nor a function in the ELF{hint}")]
    UnknownLabelKey {
        /// The key.
        name: String,
        /// The nearest role or function.
        hint: String,
    },
    /// A `[components]` key that is neither a function nor a `file:line` site.
    #[error("[components] `{name}` is neither a function in the ELF nor a `file:line` site{hint}")]
    UnknownComponentKey {
        /// The key.
        name: String,
        /// The nearest function.
        hint: String,
    },
    /// A `[components]` entry whose component name is empty.
    #[error("[components] `{key}`: the component name is empty")]
    EmptyComponent {
        /// The key.
        key: String,
    },
    /// A `[lifecycle]` setting that must name a role does not.
    #[error("[lifecycle] {setting}: `{name}` is not a role ({ROLE_LIST}){hint}")]
    NotARole {
        /// `cycle_starts` or `model`.
        setting: &'static str,
        /// The name.
        name: String,
        /// The nearest role.
        hint: String,
    },
    /// A label both read as a string and indexing a names table.
    #[error(
        "[labels.{key}]: `string = true` and `names` exclude each other (the argument is either the name or an index into names)"
    )]
    LabelStringAndNames {
        /// The label's key.
        key: String,
    },
    /// A label reading an argument memlife does not read.
    #[error("[labels.{key}] arg = {arg}: memlife reads the first four arguments (0 to 3)")]
    LabelArgument {
        /// The label's key.
        key: String,
        /// The argument given.
        arg: usize,
    },
    /// A global that must be in the ELF is not.
    #[error("{place}: no global `{name}` in the ELF")]
    NoGlobal {
        /// `[tensors]` or `[labels.KEY] names`.
        place: String,
        /// The name.
        name: String,
    },
}

/// Where a name was given, for [`check_against`](crate::names::check_against)'s error: the
/// file alone, or the file or a flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameCheckError {
    /// A function or role, which memlife.toml or a flag (`--phase`, `--span`) may give.
    #[error("memlife.toml or flags: {0}")]
    Function(NameError),
    /// A global, which only memlife.toml gives.
    #[error("memlife.toml: {0}")]
    Global(NameError),
}
