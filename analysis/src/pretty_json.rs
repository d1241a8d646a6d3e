//! The one JSON writer of this crate (profiles, reports, diffs and limit
//! checks): serde_json's pretty layout (two-space indent, `"key": value`),
//! byte for byte, with each line break and its indent written as one slice
//! where serde_json's `PrettyFormatter` writes the indent two bytes at a time.

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

use crate::error::Result;

/// Writes `value` as pretty JSON followed by a newline.
pub(crate) fn write_pretty_json<W: Write, T: Serialize>(out: W, value: &T) -> Result<()> {
    let mut out = io::BufWriter::new(out);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
    value.serialize(&mut serializer)?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// `,` then a line break and the indent of [`INDENTS`] levels.
const BREAKS: &[u8; 2 + 2 * INDENTS] = &{
    let mut bytes = [b' '; 2 + 2 * INDENTS];
    bytes[0] = b',';
    bytes[1] = b'\n';
    bytes
};

/// Levels of indent written as one slice; deeper ones are written level by
/// level.
const INDENTS: usize = 32;

/// serde_json's `PrettyFormatter` with an indent of two spaces.
#[derive(Default)]
struct Pretty {
    depth: usize,
    has_value: bool,
}

impl Pretty {
    /// A line break (after a comma unless `first`) and the current indent.
    fn line<W: ?Sized + Write>(&self, writer: &mut W, first: bool) -> io::Result<()> {
        let from = usize::from(first);
        if self.depth <= INDENTS {
            return writer.write_all(&BREAKS[from..2 + 2 * self.depth]);
        }
        writer.write_all(&BREAKS[from..2])?;
        for _ in 0..self.depth {
            writer.write_all(b"  ")?;
        }
        Ok(())
    }

    /// The start of an array or object, one level deeper.
    fn open<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(bracket)
    }

    /// The end of an array or object opened at the level above.
    fn close<W: ?Sized + Write>(&mut self, writer: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line(writer, true)?;
        }
        writer.write_all(bracket)
    }
}

impl Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(writer, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.open(writer, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.close(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        writer: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(writer, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nested arrays `depth` deep around `{"k": [1, {}, []]}`.
    fn nested(depth: usize) -> serde_json::Value {
        let mut value = serde_json::json!({"k": [1, {}, [], "a\"b", {"x": null}], "e": {}});
        for _ in 0..depth {
            value = serde_json::json!([value, 2]);
        }
        value
    }

    #[test]
    fn the_layout_is_serde_jsons_pretty_layout() {
        for depth in [0, 1, 5, INDENTS - 2, INDENTS, INDENTS + 3] {
            let value = nested(depth);
            let mut ours = Vec::new();
            write_pretty_json(&mut ours, &value).expect("writes");
            let mut theirs = serde_json::to_vec_pretty(&value).expect("writes");
            theirs.push(b'\n');
            assert_eq!(
                String::from_utf8(ours).expect("utf-8"),
                String::from_utf8(theirs).expect("utf-8"),
                "depth {depth}"
            );
        }
    }
}
