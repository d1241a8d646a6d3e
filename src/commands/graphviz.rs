//! Rendering DOT to SVG with Graphviz `dot -Tsvg` (the library only writes DOT).
//!
//! `dot` runs with a time limit: a graph it cannot lay out in time is an
//! error that says how to draw less, never a hang. It dies with emuprof
//! (`PR_SET_PDEATHSIG`), so stopping `emuprof view` leaves no `dot` behind.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// How long `dot` may take by default.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(8);

/// Renders DOT text to SVG within `limit`; says how to install Graphviz when
/// `dot` is not on `PATH`, passes on its stderr when it rejects the input,
/// and kills it when it runs out of time.
pub fn svg(dot: &[u8], limit: Duration) -> Result<Vec<u8>> {
    let mut command = Command::new("dot");
    command
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe and touches no memory of ours; it
    // only asks the kernel to kill the child when its parent goes away.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "Graphviz `dot` was not found on PATH; install Graphviz (e.g. `apt install graphviz`) \
             or export DOT and render it elsewhere"
        ),
        Err(e) => return Err(e).context("cannot start Graphviz `dot`"),
    };
    // Feed stdin and drain stdout/stderr from threads so a large graph cannot
    // deadlock on full pipes while this thread watches the clock.
    let mut stdin = child.stdin.take().context("no stdin pipe to dot")?;
    let input = dot.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let mut stdout = child.stdout.take().context("no stdout pipe from dot")?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        stdout.read_to_end(&mut bytes).map(|_| bytes)
    });
    let mut stderr = child.stderr.take().context("no stderr pipe from dot")?;
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().context("waiting for Graphviz `dot`")? {
            break status;
        }
        if started.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "Graphviz `dot` did not lay out the call graph within {} s and was stopped; \
                 draw fewer nodes (--max-nodes, --max-edges, a higher --threshold) or export \
                 --format dot and render it elsewhere",
                limit.as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = reader
        .join()
        .map_err(|_| anyhow::anyhow!("reading from dot panicked"))?
        .context("reading the SVG from Graphviz `dot`")?;
    let messages = errors.join().unwrap_or_default();
    let written = writer
        .join()
        .map_err(|_| anyhow::anyhow!("writing to dot panicked"))?;
    if !status.success() {
        bail!(
            "Graphviz `dot -Tsvg` failed ({status}): {}",
            messages.trim()
        );
    }
    written.context("writing the graph to Graphviz `dot`")?;
    Ok(output)
}
