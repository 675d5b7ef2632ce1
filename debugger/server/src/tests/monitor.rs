//! Monitor commands on bytes, run on the bridge over the live fake: what each answers, and what
//! a hostile client's bytes get (an error, never a file outside the dump directory).

use super::Bench;

#[test]
fn heap_views_and_the_allocator() {
    let mut b = Bench::new("views", |_| {});
    let table = b.monitor("heap").unwrap();
    assert!(table.contains("freertos-heap4"), "{table}");
    let json: serde_json::Value = serde_json::from_str(&b.monitor("heap json").unwrap()).unwrap();
    assert!(json["total_free"].as_u64().is_some());
    assert!(!b.monitor("heap blocks").unwrap().is_empty());
    let alloc = b.monitor("allocator").unwrap();
    assert!(alloc.starts_with("allocator  freertos-heap4"), "{alloc}");
    assert!(
        alloc.contains("pvPortMalloc") && alloc.contains("vPortFree"),
        "{alloc}"
    );
}

#[test]
fn dumps_land_in_the_dump_directory_only() {
    let mut b = Bench::new("dumps", |_| {});
    assert_eq!(
        b.monitor("dump").unwrap(),
        "heap dump written to memlife-dump-1.json\n"
    );
    b.monitor("dump sub/d.json").unwrap();
    assert!(b.dir.join("sub/d.json").is_file());
    for (line, words) in [
        ("dump ../up.json", "relative path without `..`"),
        ("dump /tmp/abs.json", "relative path without `..`"),
        (
            "dump a\u{1b}[2J.json",
            "control, bidirectional or zero-width",
        ),
        (
            "dump evil\u{202e}nosj.exe",
            "control, bidirectional or zero-width",
        ),
        (
            "dump z\u{200b}.json",
            "control, bidirectional or zero-width",
        ),
        (
            "dump-on model_release x\u{202e}-{n}.json",
            "control, bidirectional",
        ),
        ("report r\u{200b}", "control, bidirectional"),
    ] {
        let e = b.monitor(line).unwrap_err();
        assert!(e.contains(words), "{line:?}: {e}");
    }
    assert_eq!(b.files(), ["memlife-dump-1.json", "sub"]);
}

#[test]
fn commands_that_cannot_be_done_say_why() {
    let mut b = Bench::new("refusals", |_| {});
    for (line, words) in [
        (
            "dump-on no_such_function",
            "function `no_such_function` is not in the ELF",
        ),
        (
            "dump-off model_release",
            "no dump-on is set for `model_release`",
        ),
        ("report r", "no audit has run in this session"),
        ("no_such_cmd", "unknown monitor command `no_such_cmd`"),
        ("dump-on", "`dump-on` needs SYMBOL"),
        (
            "tasks",
            "no FreeRTOS tasks to read: no FreeRTOS kernel found in the ELF",
        ),
        ("heap json please", "is one too many"),
    ] {
        let e = b.monitor(line).unwrap_err();
        assert!(e.contains(words), "{line}: {e}");
    }
    assert_eq!(
        b.bridge
            .monitor(b"dump \xff.json")
            .map_err(|e| e.to_string()),
        Err("the monitor command is not UTF-8 text".into())
    );
    assert!(b.monitor("phases").unwrap().contains("no phases recorded"));
    assert!(b.files().is_empty());
}

#[test]
fn reset_and_shutdown() {
    let mut b = Bench::new("reset", |_| {});
    assert!(
        b.monitor("reset halt")
            .unwrap()
            .contains("halted at the reset vector")
    );
    assert!(b.monitor("reset").unwrap().contains("running"));
    assert_eq!(b.probe.state().resets, 2);
    assert!(!b.bridge.shutdown_requested());
    b.monitor("shutdown").unwrap();
    assert!(b.bridge.shutdown_requested());
}

/// `monitor audit PATH` says the same for a missing file, a file outside the script
/// directories and a file that is not a script: no host path is told to exist.
#[test]
fn audit_refusals_tell_nothing_about_host_paths() {
    let mut b = Bench::new("audit-paths", |_| {});
    let outside = memlife_testkit::process::tempdir("server-audit-outside");
    std::fs::write(outside.join("real.rhai"), "let x = 1;").unwrap();
    std::fs::write(b.dir.join("notes.txt"), "secret").unwrap();
    let refusal = |b: &mut Bench, p: &std::path::Path| {
        let shown = p.display().to_string();
        b.monitor(&format!("audit {shown}"))
            .unwrap_err()
            .replace(&shown, "PATH")
    };
    let (gone, notes) = (b.dir.join("missing.rhai"), b.dir.join("notes.txt"));
    let missing = refusal(&mut b, &gone);
    assert_eq!(refusal(&mut b, &outside.join("real.rhai")), missing);
    assert_eq!(refusal(&mut b, &outside.join("gone.rhai")), missing);
    assert_eq!(refusal(&mut b, &notes), missing);
    assert_eq!(
        refusal(&mut b, std::path::Path::new("/etc/hostname")),
        missing
    );
    assert!(!missing.contains("secret"), "{missing}");
}
