//! emuprof's own messages on stderr, written so that a closed or broken
//! stderr (`emuprof ... 2>&1 | head -0`) never panics: write errors such as
//! `EPIPE` are ignored, as a message nobody can read is no reason to lose a
//! profile. Control characters in them (from a hostile binary's symbol
//! names) are escaped, see [`emuprof::terminal_text`].
//!
//! `main.rs` declares this module first with `#[macro_use]`, so these
//! `eprint!`/`eprintln!` shadow the standard library's (which panic on a
//! failed write) in every module of the binary.

/// Like `std::eprint!`, ignoring write errors.
macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut err = emuprof::terminal_text::EscapeControls::new(std::io::stderr());
        let _ = write!(err, $($arg)*);
        let _ = err.flush();
    }};
}

/// Like `std::eprintln!`, ignoring write errors.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let mut err = emuprof::terminal_text::EscapeControls::new(std::io::stderr());
        let _ = writeln!(err, $($arg)*);
        let _ = err.flush();
    }};
}
