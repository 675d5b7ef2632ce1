//! Wide runs: `memlife audit` over a list of targets (the `[[matrix]]` of a memlife.toml, or
//! several `--config` files), `-j N` of them at a time, each in a memlife child process of its
//! own ([`child`]), the part `--shard I/N` names ([`list`]), and one merged JUnit, one summary
//! and a table at the end ([`merge`]).

mod child;
pub mod list;
mod merge;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::cli::AuditArgs;
use child::{Ending, Files};
use list::Target;
use merge::{Outcome, RunInfo, RunState, Verdict};

/// The list to audit when the flags ask for a wide run, else `None` (one audit, as before).
pub fn targets(args: &AuditArgs) -> Result<Option<Vec<Target>>> {
    if args.one_target {
        return Ok(None);
    }
    let wide_flags =
        args.jobs.is_some() || args.shard.is_some() || args.target_timeout.is_some() || args.expect;
    let configs = if args.config.is_empty() {
        memlife_plan::default_config().into_iter().collect()
    } else {
        args.config.clone()
    };
    let targets = match configs.as_slice() {
        [] if wide_flags => bail!(
            "-j, --shard, --target-timeout and --expect run a list: give a memlife.toml with \
             [[matrix]] entries or several --config files"
        ),
        [] => return Ok(None),
        [one] => {
            let entries = list::matrix(one)?;
            if !entries.is_empty() {
                entries
            } else if wide_flags {
                list::from_configs(&configs)?
            } else {
                return Ok(None);
            }
        }
        _ => list::from_configs(&configs)?,
    };
    Ok(Some(targets))
}

/// Flags that name one audit's outputs or target and mean nothing for a list.
fn refuse_single_flags(args: &AuditArgs) -> Result<()> {
    let t = &args.target;
    for (given, flag, instead) in [
        (
            t.gdb.is_some(),
            "--gdb",
            "name each target's GDB server in its memlife.toml",
        ),
        (
            t.snapshot.is_some(),
            "--snapshot",
            "audit snapshots one at a time",
        ),
        (
            args.report.is_some(),
            "--report",
            "each target's report is OUT/NAME/report/",
        ),
        (
            args.trace.is_some(),
            "--trace",
            "each target's trace is OUT/NAME/trace.json",
        ),
        (
            args.baseline.is_some(),
            "--baseline",
            "compare OUT/NAME/audit.json with memlife diff",
        ),
        (
            matches!(
                t.serial,
                Some(crate::cli::SerialChoice::File(_) | crate::cli::SerialChoice::Stdio)
            ),
            "--serial",
            "each target's serial output is OUT/NAME/serial.txt (--serial none discards them all)",
        ),
    ] {
        if given {
            bail!("{flag} is for one audit, not a list: {instead}");
        }
    }
    Ok(())
}

/// Runs the list and returns the exit code (0 all passed or as expected, 1 a check failed or a
/// verdict was not the expected one, 2 a target had a tool error).
pub fn run(args: &AuditArgs, verbose: u8, targets: Vec<Target>) -> Result<ExitCode> {
    let started = Instant::now();
    refuse_single_flags(args)?;
    let listed = targets.len();
    let targets = match args.shard {
        Some(shard) => shard.select(targets),
        None => targets,
    };
    // Every target has a script before anything runs: a usage error is found at once.
    let jobs: Vec<(Target, PathBuf)> = targets
        .into_iter()
        .map(|t| {
            let script = t.script.clone().or_else(|| args.script.clone());
            match script {
                Some(s) => Ok((t, s)),
                None => bail!(
                    "target `{}` has no script: give SCRIPT or `script = ...` in its [[matrix]] entry",
                    t.name
                ),
            }
        })
        .collect::<Result<_>>()?;
    let exe = std::env::current_exe().context("cannot find the memlife executable")?;
    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let junit_path = args.junit.clone().unwrap_or_else(|| out.join("junit.xml"));
    let summary_path = args
        .json
        .clone()
        .unwrap_or_else(|| out.join("summary.json"));
    let parallel = usize::from(args.jobs.unwrap_or(1).max(1));
    let mut info = RunInfo {
        jobs: parallel,
        shard: args.shard.map(|s| s.to_string()),
        listed,
        seconds: 0.0,
        expect: args.expect,
    };
    write_outputs(&junit_path, &summary_path, &[], &info, RunState::Running)?;

    let total = jobs.len();
    let queue = Mutex::new(jobs.into_iter().enumerate().collect::<VecDeque<_>>());
    let done: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..parallel.min(total) {
            s.spawn(|| {
                loop {
                    if memlife_core::interrupt::requested() {
                        break;
                    }
                    let next = queue.lock().ok().and_then(|mut q| q.pop_front());
                    let Some((i, (target, script))) = next else {
                        break;
                    };
                    let outcome = audit_one(&exe, verbose, args, target, script);
                    if let Ok(mut d) = done.lock() {
                        d.push((i, outcome));
                        let (_, o) = &d[d.len() - 1];
                        eprintln!(
                            "[{}/{total}] {}: {} ({:.1} s)",
                            d.len(),
                            o.target.name,
                            o.verdict.word(),
                            o.seconds
                        );
                    }
                }
            });
        }
    });
    let mut outcomes = done.into_inner().unwrap_or_default();
    outcomes.sort_by_key(|(i, _)| *i);
    let outcomes: Vec<Outcome> = outcomes.into_iter().map(|(_, o)| o).collect();
    info.seconds = started.elapsed().as_secs_f64();
    // A SIGTERM that arrives after the last target ended still makes memlife exit 130: the
    // summary says so rather than a verdict the exit status contradicts.
    let state = if memlife_core::interrupt::requested() {
        RunState::Interrupted
    } else {
        RunState::Finished
    };
    write_outputs(&junit_path, &summary_path, &outcomes, &info, state)?;
    merge::print_table(&outcomes, &info, &[junit_path, summary_path])?;
    if outcomes.len() < total {
        bail!(
            "interrupted: {} of {total} targets were audited (the summary lists them)",
            outcomes.len()
        );
    }
    Ok(ExitCode::from(merge::exit_code(&outcomes, args.expect)))
}

fn write_outputs(
    junit: &Path,
    summary: &Path,
    outcomes: &[Outcome],
    info: &RunInfo,
    state: RunState,
) -> Result<()> {
    let xml = if state != RunState::Running {
        merge::junit(outcomes, info.seconds)
    } else {
        merge::unfinished_junit()
    };
    memlife_render::write_atomic(junit, xml.as_bytes())
        .with_context(|| format!("cannot write {}", junit.display()))?;
    let json = serde_json::to_string_pretty(&merge::summary(outcomes, info, state))?;
    memlife_render::write_atomic(summary, json.as_bytes())
        .with_context(|| format!("cannot write {}", summary.display()))?;
    Ok(())
}

/// One target, start to end, in its child.
fn audit_one(
    exe: &Path,
    verbose: u8,
    args: &AuditArgs,
    target: Target,
    script: PathBuf,
) -> Outcome {
    let started = Instant::now();
    let files = Files {
        dir: args.out.join(&target.name),
    };
    let cmd = child::command(exe, verbose, args, &target, &script, &files);
    let ending = child::run(cmd, &files, args.target_timeout);
    let (verdict, exit, error, own_junit) = match ending {
        Ending::Exited(status) => match status.code() {
            Some(0) => (Verdict::Pass, Some(0), None, true),
            Some(1) => (Verdict::Fail, Some(1), None, true),
            code => {
                let why = last_error(&files.stderr()).unwrap_or_else(|| match code {
                    Some(c) => format!("memlife exited with {c}"),
                    None => "memlife was killed by a signal".to_string(),
                });
                (Verdict::Error, code, Some(why), code.is_some())
            }
        },
        Ending::TimedOut(limit) => (
            Verdict::Error,
            None,
            Some(format!(
                "ran over --target-timeout {limit} s and was stopped"
            )),
            false,
        ),
        Ending::NotStarted(why) => (Verdict::Error, None, Some(why), false),
    };
    Outcome {
        target,
        script,
        dir: files.dir,
        verdict,
        exit,
        seconds: started.elapsed().as_secs_f64(),
        error,
        own_junit,
    }
}

/// How much of a child's stderr is searched for its error: its end, where the error is printed.
const STDERR_TAIL: u64 = 64 * 1024;

/// The child's last `error:` line, without the prefix. Only the file's end is read (a `-vvv`
/// log grows with the target's events), lossily (one stray byte must not hide the message).
fn last_error(stderr: &Path) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(stderr).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(STDERR_TAIL)))
        .ok()?;
    let mut bytes = Vec::new();
    file.take(STDERR_TAIL).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn audit_args<S: Into<std::ffi::OsString> + Clone>(args: &[S]) -> AuditArgs {
        match Cli::try_parse_from(args.iter().cloned()).unwrap().command {
            Command::Audit(a) => *a,
            _ => panic!("not audit"),
        }
    }

    #[test]
    fn a_child_of_an_entry_without_config_audits_its_one_target() {
        // An entry without `config` takes its settings from the matrix file itself (README):
        // its child gets that file as --config and must not read its [[matrix]] as a list.
        let dir = std::env::temp_dir().join(format!("memlife-wide-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.toml");
        std::fs::write(&file, "[[matrix]]\nname = \"a\"\nelf = \"a.elf\"\n").unwrap();
        let args = audit_args(&[
            "memlife",
            "audit",
            "s.rhai",
            "--config",
            file.to_str().unwrap(),
            "--keep-cycles",
            "3",
            "--walk",
            "sparse",
            "--fail-on-skip",
        ]);
        let mut list = targets(&args).unwrap().unwrap();
        let target = list.pop().unwrap();
        assert_eq!(target.config, file);
        let files = child::Files {
            dir: dir.join("out").join(&target.name),
        };
        let cmd = child::command(
            Path::new("memlife"),
            0,
            &args,
            &target,
            Path::new("s.rhai"),
            &files,
        );
        assert_eq!(cmd.program, Path::new("memlife"));
        let argv: Vec<std::ffi::OsString> =
            std::iter::once("memlife".into()).chain(cmd.args).collect();
        let child = audit_args(&argv);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(targets(&child).unwrap().is_none());
        // The run's flags reach the child.
        assert_eq!(child.keep_cycles, Some(memlife_plan::KeepCycles::Count(3)));
        assert_eq!(child.heap.walk, Some(memlife_heap::WalkStrategy::Sparse));
        assert!(child.fail_on_skip);
    }

    /// The matrix file's `fail_on_skip = true` reaches every entry's child as the flag does,
    /// the one whose settings are another file too.
    #[test]
    fn the_matrix_files_fail_on_skip_reaches_every_child() {
        let dir = std::env::temp_dir().join(format!("memlife-wide-skip-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.toml");
        let children = |text: &str| {
            std::fs::write(&file, text).unwrap();
            let args = audit_args(&[
                "memlife",
                "audit",
                "s.rhai",
                "--config",
                file.to_str().unwrap(),
            ]);
            targets(&args)
                .unwrap()
                .unwrap()
                .iter()
                .map(|target| {
                    let files = child::Files {
                        dir: dir.join("out").join(&target.name),
                    };
                    let cmd = child::command(
                        Path::new("memlife"),
                        0,
                        &args,
                        target,
                        Path::new("s.rhai"),
                        &files,
                    );
                    let argv: Vec<std::ffi::OsString> =
                        std::iter::once("memlife".into()).chain(cmd.args).collect();
                    audit_args(&argv).fail_on_skip
                })
                .collect::<Vec<bool>>()
        };
        let entries = "[[matrix]]\nname = \"a\"\nelf = \"a.elf\"\n\
                       [[matrix]]\nname = \"b\"\nconfig = \"b.toml\"\n";
        assert_eq!(
            children(&format!("fail_on_skip = true\n{entries}")),
            [true, true]
        );
        assert_eq!(children(entries), [false, false]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_childs_error_is_found_after_a_long_log_with_stray_bytes() {
        let file = std::env::temp_dir().join(format!("memlife-stderr-{}", std::process::id()));
        let mut log = vec![0xffu8, b'\n'];
        log.extend(b"DEBUG polled\n".repeat(20_000));
        log.extend(b"error: the firmware hung\nmemlife: done\n");
        std::fs::write(&file, &log).unwrap();
        let found = last_error(&file);
        let _ = std::fs::remove_file(&file);
        assert_eq!(found.as_deref(), Some("the firmware hung"));
    }
}
