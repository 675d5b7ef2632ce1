//! [`MonitorCommand`]: a `monitor` line parsed once from the bytes gdb sends, against one table
//! ([`COMMANDS`]) that lists each command's words, its arguments and its help line; `monitor
//! help` is generated from the same table, so a command and its help cannot drift apart.
//!
//! Parsing never touches the target. The bytes are refused when they are not UTF-8, longer than
//! [`MAX_LINE`], or when an argument holds a control, bidirectional or zero-width character
//! (they name files and functions); words are separated by ASCII whitespace.

/// The longest `monitor` line accepted, in bytes (gdb's packets are shorter already; this bounds
/// what an error echoes back).
pub const MAX_LINE: usize = 1024;

/// Which view of the heap `monitor heap` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeapView {
    /// The table `memlife heap` prints.
    Table,
    /// Only the block list.
    Blocks,
    /// The JSON of `memlife heap --json`.
    Json,
}

/// One `monitor` command, with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MonitorCommand {
    /// `help` (or nothing): the command list.
    Help,
    /// `heap`, `heap blocks`, `heap json`.
    Heap(HeapView),
    /// `allocator`: the allocator detected and its entry points.
    Allocator,
    /// `tasks`: every FreeRTOS task, as `memlife tasks` prints it.
    Tasks,
    /// `dump [PATH]`.
    Dump {
        /// Under the dump directory; `None`: `memlife-dump-N.json`.
        path: Option<String>,
    },
    /// `dump-on SYMBOL [PATH]`.
    DumpOn {
        /// The function at whose entry the dumps are written.
        symbol: String,
        /// Under the dump directory, `{n}` counting; `None`: `memlife-SYMBOL-{n}.json`.
        path: Option<String>,
    },
    /// `dump-off SYMBOL`.
    DumpOff {
        /// The function given to `dump-on`.
        symbol: String,
    },
    /// `phases`: the phases the audits of this session recorded.
    Phases,
    /// `report DIR`: the last audit's HTML report.
    Report {
        /// Under the dump directory.
        dir: String,
    },
    /// `audit FILE`: a Rhai script run on the target.
    Audit {
        /// A `.rhai` file inside a script directory.
        script: String,
    },
    /// `reset`, `reset halt`.
    Reset {
        /// Halt at the reset vector rather than run.
        halt: bool,
    },
    /// `shutdown`: end the server after this session.
    Shutdown,
}

impl MonitorCommand {
    /// Whether the command still means something after the firmware ended (before `reset`).
    pub fn works_when_ended(&self) -> bool {
        matches!(
            self,
            MonitorCommand::Help | MonitorCommand::Reset { .. } | MonitorCommand::Shutdown
        )
    }
}

/// One row of the table: the words that name a command, the arguments after them, the help
/// text, and how the arguments make the command.
pub struct Spec {
    /// The command's words (`heap blocks`).
    pub words: &'static str,
    /// Required arguments, by the name the help shows.
    pub required: &'static [&'static str],
    /// An optional last argument.
    pub optional: Option<&'static str>,
    /// The help text, one entry per line.
    pub help: &'static [&'static str],
    /// The command, from exactly the arguments given (their count already checked).
    build: fn(&[&str]) -> MonitorCommand,
}

impl Spec {
    /// `dump-on SYMBOL [PATH]`.
    pub fn usage(&self) -> String {
        let mut u = self.words.to_string();
        for a in self.required {
            u.push(' ');
            u.push_str(a);
        }
        if let Some(o) = self.optional {
            u.push_str(&format!(" [{o}]"));
        }
        u
    }
}

/// The argument at `i`, owned (the count was checked before `build`).
fn arg(args: &[&str], i: usize) -> String {
    args.get(i).map(|s| (*s).to_string()).unwrap_or_default()
}

fn opt(args: &[&str], i: usize) -> Option<String> {
    args.get(i).map(|s| (*s).to_string())
}

/// Every command: the one place that says what exists, what it takes and what it does.
pub const COMMANDS: &[Spec] = &[
    Spec {
        words: "help",
        required: &[],
        optional: None,
        help: &["this list"],
        build: |_| MonitorCommand::Help,
    },
    Spec {
        words: "heap",
        required: &[],
        optional: None,
        help: &["the heap table (as `memlife heap` prints it)"],
        build: |_| MonitorCommand::Heap(HeapView::Table),
    },
    Spec {
        words: "heap blocks",
        required: &[],
        optional: None,
        help: &["only the block list"],
        build: |_| MonitorCommand::Heap(HeapView::Blocks),
    },
    Spec {
        words: "heap json",
        required: &[],
        optional: None,
        help: &["the heap as JSON (as `memlife heap --json`)"],
        build: |_| MonitorCommand::Heap(HeapView::Json),
    },
    Spec {
        words: "allocator",
        required: &[],
        optional: None,
        help: &["the allocator memlife detected and its entry points"],
        build: |_| MonitorCommand::Allocator,
    },
    Spec {
        words: "tasks",
        required: &[],
        optional: None,
        help: &["every FreeRTOS task (as `memlife tasks` prints it)"],
        build: |_| MonitorCommand::Tasks,
    },
    Spec {
        words: "dump",
        required: &[],
        optional: Some("PATH"),
        help: &["write the heap JSON to PATH (default memlife-dump-N.json)"],
        build: |a| MonitorCommand::Dump { path: opt(a, 0) },
    },
    Spec {
        words: "dump-on",
        required: &["SYMBOL"],
        optional: Some("PATH"),
        help: &[
            "write a dump every time the target stops at SYMBOL's entry,",
            "before gdb hears of the stop; {n} in PATH counts the dumps",
            "(default memlife-SYMBOL-{n}.json); memlife continues on its own",
            "when gdb has no breakpoint there; ends after --max-dumps dumps",
            "and when this gdb client leaves",
        ],
        build: |a| MonitorCommand::DumpOn {
            symbol: arg(a, 0),
            path: opt(a, 1),
        },
    },
    Spec {
        words: "dump-off",
        required: &["SYMBOL"],
        optional: None,
        help: &["stop dumping at SYMBOL"],
        build: |a| MonitorCommand::DumpOff { symbol: arg(a, 0) },
    },
    Spec {
        words: "phases",
        required: &[],
        optional: None,
        help: &["the lifecycle phases recorded in this session"],
        build: |_| MonitorCommand::Phases,
    },
    Spec {
        words: "report",
        required: &["DIR"],
        optional: None,
        help: &["write the last audit's HTML report to DIR/index.html"],
        build: |a| MonitorCommand::Report { dir: arg(a, 0) },
    },
    Spec {
        words: "audit",
        required: &["FILE"],
        optional: None,
        help: &[
            "run a Rhai audit script (as `memlife audit`, dumps under",
            "memlife-out/) and record its phases; the interrupt byte",
            "(0x03) stops it, and so does --audit-deadline",
        ],
        build: |a| MonitorCommand::Audit { script: arg(a, 0) },
    },
    Spec {
        words: "reset",
        required: &[],
        optional: None,
        help: &[
            "reset the target and let it run (after the firmware exited:",
            "start it again)",
        ],
        build: |_| MonitorCommand::Reset { halt: false },
    },
    Spec {
        words: "reset halt",
        required: &[],
        optional: None,
        help: &["reset the target and halt it at the reset vector"],
        build: |_| MonitorCommand::Reset { halt: true },
    },
    Spec {
        words: "shutdown",
        required: &[],
        optional: None,
        help: &["end memlife serve after this gdb session (the target runs on)"],
        build: |_| MonitorCommand::Shutdown,
    },
];

/// Why a `monitor` line is not a command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The bytes are not UTF-8.
    #[error("the monitor command is not UTF-8 text")]
    NotUtf8,
    /// Longer than [`MAX_LINE`].
    #[error("the monitor command is {len} bytes long; at most {MAX_LINE} are accepted")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// No command starts with these words.
    #[error("unknown monitor command `{0}`; `monitor help` lists them")]
    Unknown(String),
    /// An argument is missing.
    #[error("`{command}` needs {missing}: `monitor {usage}`")]
    Missing {
        /// The command's words.
        command: &'static str,
        /// The first argument missing.
        missing: &'static str,
        /// How the command is given.
        usage: String,
    },
    /// More arguments than the command takes.
    #[error("`{command}` takes no more than that (`{extra}` is one too many): `monitor {usage}`")]
    Extra {
        /// The command's words.
        command: &'static str,
        /// The first argument too many.
        extra: String,
        /// How the command is given.
        usage: String,
    },
    /// An argument with a control, bidirectional or zero-width character.
    #[error(
        "an argument of `{command}` holds a control, bidirectional or zero-width character (`{}`)",
        memlife_core::text::printable(.argument)
    )]
    HiddenCharacter {
        /// The command's words.
        command: &'static str,
        /// The argument, as sent.
        argument: String,
    },
}

/// Whether `c` may not stand in an argument.
fn hidden(c: char) -> bool {
    c.is_control() || memlife_core::text::is_deceptive(c)
}

impl MonitorCommand {
    /// Parses the bytes of a `monitor` line (a `qRcmd` payload, decoded).
    pub fn parse(bytes: &[u8]) -> Result<MonitorCommand, ParseError> {
        if bytes.len() > MAX_LINE {
            return Err(ParseError::TooLong { len: bytes.len() });
        }
        let line = std::str::from_utf8(bytes).map_err(|_| ParseError::NotUtf8)?;
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        if words.is_empty() {
            return Ok(MonitorCommand::Help);
        }
        // The longest command whose words start the line (`heap blocks` before `heap`).
        let spec = COMMANDS
            .iter()
            .filter(|s| {
                let n = s.words.split(' ').count();
                words.len() >= n && s.words.split(' ').eq(words[..n].iter().copied())
            })
            .max_by_key(|s| s.words.len())
            .ok_or_else(|| ParseError::Unknown(line.trim().to_string()))?;
        let args = &words[spec.words.split(' ').count()..];
        if let Some(missing) = spec.required.get(args.len()) {
            return Err(ParseError::Missing {
                command: spec.words,
                missing,
                usage: spec.usage(),
            });
        }
        let most = spec.required.len() + usize::from(spec.optional.is_some());
        if let Some(extra) = args.get(most) {
            return Err(ParseError::Extra {
                command: spec.words,
                extra: (*extra).to_string(),
                usage: spec.usage(),
            });
        }
        if let Some(bad) = args.iter().find(|a| a.chars().any(hidden)) {
            return Err(ParseError::HiddenCharacter {
                command: spec.words,
                argument: (*bad).to_string(),
            });
        }
        Ok((spec.build)(args))
    }
}

/// `monitor help`: every command of [`COMMANDS`], its arguments and its help.
pub fn help() -> String {
    const COLUMN: usize = 27;
    let mut out = String::from("memlife monitor commands:\n");
    for spec in COMMANDS {
        let mut lines = spec.help.iter();
        let first = lines.next().copied().unwrap_or_default();
        out.push_str(&format!("  {:<COLUMN$}{first}\n", spec.usage()));
        for more in lines {
            out.push_str(&format!("  {:<COLUMN$}{more}\n", ""));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(s: &str) -> Result<MonitorCommand, ParseError> {
        MonitorCommand::parse(s.as_bytes())
    }

    #[test]
    fn valid_help() {
        assert_eq!(parse("help"), Ok(MonitorCommand::Help));
        assert_eq!(parse(""), Ok(MonitorCommand::Help));
        assert_eq!(parse(" \t\n"), Ok(MonitorCommand::Help));
    }

    #[test]
    fn valid_heap_views() {
        assert_eq!(parse("heap"), Ok(MonitorCommand::Heap(HeapView::Table)));
        assert_eq!(
            parse("heap blocks"),
            Ok(MonitorCommand::Heap(HeapView::Blocks))
        );
        assert_eq!(
            parse("  heap\t json \n"),
            Ok(MonitorCommand::Heap(HeapView::Json))
        );
    }

    #[test]
    fn valid_allocator() {
        assert_eq!(parse("allocator"), Ok(MonitorCommand::Allocator));
    }

    #[test]
    fn valid_tasks() {
        assert_eq!(parse("tasks"), Ok(MonitorCommand::Tasks));
        assert_eq!(parse(" tasks\t"), Ok(MonitorCommand::Tasks));
    }

    #[test]
    fn valid_dump() {
        assert_eq!(parse("dump"), Ok(MonitorCommand::Dump { path: None }));
        assert_eq!(
            parse("dump d/x.json"),
            Ok(MonitorCommand::Dump {
                path: Some("d/x.json".into())
            })
        );
    }

    #[test]
    fn valid_dump_on_and_off() {
        assert_eq!(
            parse("dump-on model_release"),
            Ok(MonitorCommand::DumpOn {
                symbol: "model_release".into(),
                path: None
            })
        );
        assert_eq!(
            parse("dump-on model_release rel-{n}.json"),
            Ok(MonitorCommand::DumpOn {
                symbol: "model_release".into(),
                path: Some("rel-{n}.json".into())
            })
        );
        assert_eq!(
            parse("dump-off model_release"),
            Ok(MonitorCommand::DumpOff {
                symbol: "model_release".into()
            })
        );
    }

    #[test]
    fn valid_phases_report_audit() {
        assert_eq!(parse("phases"), Ok(MonitorCommand::Phases));
        assert_eq!(
            parse("report out"),
            Ok(MonitorCommand::Report { dir: "out".into() })
        );
        assert_eq!(
            parse("audit scripts/leak.rhai"),
            Ok(MonitorCommand::Audit {
                script: "scripts/leak.rhai".into()
            })
        );
    }

    #[test]
    fn valid_reset_and_shutdown() {
        assert_eq!(parse("reset"), Ok(MonitorCommand::Reset { halt: false }));
        assert_eq!(
            parse("reset halt"),
            Ok(MonitorCommand::Reset { halt: true })
        );
        assert_eq!(parse("shutdown"), Ok(MonitorCommand::Shutdown));
    }

    #[test]
    fn invalid_unknown_commands() {
        for line in [
            "no_such_cmd",
            "HEAP",
            "heapjson",
            "dump_on x",
            "\u{e9}\u{ff}",
        ] {
            assert!(
                matches!(parse(line), Err(ParseError::Unknown(_))),
                "{line:?}: {:?}",
                parse(line)
            );
        }
        // The line comes back (escaped when shown) so the user sees what was sent.
        let e = parse("\u{1b}[2J").unwrap_err();
        assert_eq!(e, ParseError::Unknown("\u{1b}[2J".into()));
        assert!(e.to_string().contains("`monitor help` lists them"));
    }

    #[test]
    fn invalid_missing_arguments() {
        for (line, missing) in [
            ("dump-on", "SYMBOL"),
            ("dump-off", "SYMBOL"),
            ("report", "DIR"),
            ("audit", "FILE"),
        ] {
            match parse(line) {
                Err(ParseError::Missing { missing: m, .. }) => assert_eq!(m, missing, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
        assert!(
            parse("dump-on")
                .unwrap_err()
                .to_string()
                .contains("monitor dump-on SYMBOL [PATH]")
        );
    }

    #[test]
    fn invalid_extra_arguments() {
        for line in [
            "help me",
            "heap blocks json",
            "heap foo",
            "allocator x",
            "tasks json",
            "dump a b",
            "dump-on f p extra",
            "dump-off f g",
            "phases 1",
            "report a b",
            "audit a.rhai b.rhai",
            "reset now",
            "reset halt now",
            "shutdown now",
        ] {
            assert!(
                matches!(parse(line), Err(ParseError::Extra { .. })),
                "{line:?}: {:?}",
                parse(line)
            );
        }
    }

    #[test]
    fn invalid_not_utf8() {
        assert_eq!(
            MonitorCommand::parse(b"dump \xff\xfe.json"),
            Err(ParseError::NotUtf8)
        );
        assert_eq!(MonitorCommand::parse(b"\xc3"), Err(ParseError::NotUtf8));
    }

    #[test]
    fn invalid_control_and_invisible_characters_in_arguments() {
        for line in [
            "dump a\u{1b}[2J.json",
            "dump evil\u{202e}nosj.exe",
            "dump he\u{200b}ap.json",
            "dump-on model_release x\u{7}.json",
            "dump-off \u{200d}f",
            "report r\u{0}",
            "audit a\u{85}.rhai",
            "dump \u{2066}x",
        ] {
            let e = parse(line).unwrap_err();
            assert!(
                matches!(e, ParseError::HiddenCharacter { .. }),
                "{line:?}: {e:?}"
            );
            assert!(
                !e.to_string()
                    .chars()
                    .any(|c| c.is_control() || memlife_core::text::is_deceptive(c)),
                "{e}"
            );
        }
    }

    #[test]
    fn invalid_overlong() {
        let long = format!("dump {}", "a".repeat(MAX_LINE));
        assert_eq!(parse(&long), Err(ParseError::TooLong { len: MAX_LINE + 5 }));
        let just = format!("dump {}", "a".repeat(MAX_LINE - 5));
        assert!(parse(&just).is_ok());
    }

    /// Every command of the table is in the help, with its arguments, and parses back from its
    /// usage with placeholder arguments.
    #[test]
    fn help_is_generated_from_the_table() {
        let text = help();
        for spec in COMMANDS {
            assert!(text.contains(&format!("  {} ", spec.usage())), "{text}");
            for line in spec.help {
                assert!(text.contains(line), "{line}");
            }
            let mut line = spec.words.to_string();
            for _ in spec.required {
                line.push_str(" x");
            }
            assert!(parse(&line).is_ok(), "{line}");
        }
        assert!(
            text.contains("  dump-on SYMBOL [PATH]      write a dump"),
            "{text}"
        );
    }
}
