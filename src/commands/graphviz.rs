//! Rendering DOT to SVG with Graphviz `dot -Tsvg` (the library only writes DOT).

use std::io::Write;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// Renders DOT text to SVG; says how to install Graphviz when `dot` is not on
/// `PATH`, and passes on its stderr when it rejects the input.
pub fn svg(dot: &[u8]) -> Result<Vec<u8>> {
    let mut child = match Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!(
            "Graphviz `dot` was not found on PATH; install Graphviz (e.g. `apt install graphviz`) \
             or export DOT and render it elsewhere"
        ),
        Err(e) => return Err(e).context("cannot start Graphviz `dot`"),
    };
    // Feed stdin from a thread so a large graph cannot deadlock on full pipes.
    let mut stdin = child.stdin.take().context("no stdin pipe to dot")?;
    let input = dot.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let output = child
        .wait_with_output()
        .context("waiting for Graphviz `dot`")?;
    let written = writer
        .join()
        .map_err(|_| anyhow::anyhow!("writing to dot panicked"))?;
    if !output.status.success() {
        bail!(
            "Graphviz `dot -Tsvg` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    written.context("writing the graph to Graphviz `dot`")?;
    Ok(output.stdout)
}
