//! Headless Chromium for the tests of the HTML pages (`memlife audit --report`, `memlife diff
//! --report`): find it, load a page, collect its console messages, look at the screenshot.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{run_with_timeout, stderr};

/// Chromium, or `None` when it is missing and MEMLIFE_ALLOW_NO_CHROMIUM is set (said loudly);
/// missing without it fails the test: `make test` installs it.
pub fn require_chromium() -> Option<PathBuf> {
    if let Some(b) = chromium() {
        return Some(b);
    }
    if std::env::var_os("MEMLIFE_ALLOW_NO_CHROMIUM").is_some() {
        eprintln!(
            "\n*** SKIPPED: chromium not found and MEMLIFE_ALLOW_NO_CHROMIUM is set; the page was NOT opened in a browser ***\n"
        );
        return None;
    }
    panic!(
        "chromium is not installed (`apt-get install chromium`, which `make test` does); set MEMLIFE_ALLOW_NO_CHROMIUM=1 to skip"
    );
}

/// Proves the console capture works: a page that logs an error must be caught, or a clean
/// console proves nothing.
pub fn check_console_capture(browser: &Path, dir: &Path, profile: &Path) {
    let control = dir.join("control.html");
    std::fs::write(
        &control,
        "<html><body><p>control</p><script>console.error('memlife-control')</script></body></html>",
    )
    .unwrap();
    let console = screenshot(
        browser,
        &control,
        &dir.join("control.png"),
        profile,
        "400,300",
    );
    assert!(
        console.iter().any(|l| l.contains("memlife-control")),
        "the console capture does not work: {console:?}"
    );
}

/// Chromium, or why not.
pub fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|c| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join(c))
                    .find(|p| p.is_file())
            })
        })
}

/// Loads `page` in headless Chromium and screenshots it; returns the console lines.
pub fn screenshot(
    browser: &Path,
    page: &Path,
    png: &Path,
    profile: &Path,
    size: &str,
) -> Vec<String> {
    let mut cmd = std::process::Command::new(browser);
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--window-size={size}"))
    .arg(format!("--screenshot={}", png.display()))
    .arg(format!("file://{}", page.display()));
    let out = run_with_timeout(cmd, Duration::from_secs(120));
    assert!(png.is_file(), "no screenshot:\n{}", stderr(&out));
    // Chromium logs every console message of the page as `...:CONSOLE...] "text", source: ...`.
    stderr(&out)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect()
}

/// The pixels of an RGB(A) PNG and the bytes per pixel.
fn decode(png: &Path) -> (Vec<u8>, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(png).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    buf.truncate(info.buffer_size());
    (buf, channels)
}

/// How many pixels of an RGB(A) PNG `keep` (given its R, G, B) holds for.
pub fn count_pixels(png: &Path, keep: impl Fn(u8, u8, u8) -> bool) -> usize {
    let (data, channels) = decode(png);
    data.chunks(channels)
        .filter(|p| keep(p[0], p[1], p[2]))
        .count()
}

/// How many pixels are CSS colour `hex` (`#rrggbb`), give or take `tolerance` per channel.
pub fn count_colour(png: &Path, hex: &str, tolerance: u8) -> usize {
    let c = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap();
    let want = [(c >> 16) as u8, (c >> 8) as u8, c as u8];
    count_pixels(png, |r, g, b| {
        [r, g, b]
            .iter()
            .zip(want)
            .all(|(x, w)| x.abs_diff(w) <= tolerance)
    })
}

/// (pixels, non-white pixels, distinct colours) of an RGB(A) PNG.
pub fn pixels(png: &Path) -> (usize, usize, usize) {
    let (data, channels) = decode(png);
    let mut colours = std::collections::HashSet::new();
    let mut ink = 0;
    let mut total = 0;
    for px in data.chunks(channels) {
        total += 1;
        if px[0] < 235 || px[1] < 235 || px[2] < 235 {
            ink += 1;
        }
        colours.insert((px[0] >> 3, px[1] >> 3, px[2] >> 3));
    }
    (total, ink, colours.len())
}
