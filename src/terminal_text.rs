//! Text meant for a terminal, with control characters made visible.
//!
//! Symbol names come from the profiled binary, which can be hostile: a name
//! holding `ESC [ 2 J` would clear the user's screen when a report prints it,
//! and worse sequences exist. Every text report, the run summary and
//! emuprof's own messages go through [`EscapeControls`], which writes C0
//! controls other than newline and tab, DEL, and the C1 controls (U+0080 to
//! U+009F, which some terminals also obey) as `\xNN` / `\u{NN}`. Ordinary text,
//! UTF-8 included, passes through unchanged.

use std::io::{self, Write};

/// A writer that escapes control characters on their way to `inner`.
#[derive(Debug)]
pub struct EscapeControls<W: Write> {
    inner: W,
    /// A `0xC2` byte seen at the end of the last write: the start of a C1
    /// control or of an ordinary character, decided by the next byte.
    pending_c2: bool,
}

impl<W: Write> EscapeControls<W> {
    /// Escapes what is written before passing it to `inner`.
    pub fn new(inner: W) -> EscapeControls<W> {
        EscapeControls {
            inner,
            pending_c2: false,
        }
    }
}

impl<W: Write> Write for EscapeControls<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut out = Vec::with_capacity(buf.len());
        for &byte in buf {
            if std::mem::take(&mut self.pending_c2) {
                if (0x80..=0x9f).contains(&byte) {
                    out.extend_from_slice(format!("\\u{{{byte:x}}}").as_bytes());
                    continue;
                }
                out.push(0xc2);
            }
            match byte {
                0xc2 => self.pending_c2 = true,
                b'\n' | b'\t' => out.push(byte),
                0x00..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{byte:02x}").as_bytes()),
                _ => out.push(byte),
            }
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if std::mem::take(&mut self.pending_c2) {
            self.inner.write_all(&[0xc2])?;
        }
        self.inner.flush()
    }
}

/// `text` with its control characters escaped (see [`EscapeControls`]).
pub fn escape_controls(text: &str) -> String {
    let mut w = EscapeControls::new(Vec::with_capacity(text.len()));
    // Writing to a Vec cannot fail.
    let _ = w.write_all(text.as_bytes());
    let _ = w.flush();
    String::from_utf8_lossy(&w.inner).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_text_passes() {
        assert_eq!(
            escape_controls("a\x1b[2Jb\u{9b}c\u{7f}\tdé→\n"),
            "a\\x1b[2Jb\\u{9b}c\\x7f\tdé→\n"
        );
    }

    #[test]
    fn a_c1_control_split_across_writes_is_still_escaped() {
        let mut w = EscapeControls::new(Vec::new());
        w.write_all(b"x\xc2").unwrap();
        w.write_all(b"\x9by\xc2").unwrap();
        w.write_all(b"\xa0").unwrap();
        w.flush().unwrap();
        assert_eq!(w.inner, b"x\\u{9b}y\xc2\xa0");
    }
}
