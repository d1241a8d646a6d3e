//! Flame graphs (interactive SVG, drawn by the inferno crate) from folded stacks,
//! and differential flame graphs comparing two profiles.
//!
//! Because emuprof's stacks come from the exact call tree, a frame's width is the
//! exact number of instructions run in that calling context and below, not a
//! sampling estimate. Colours are chosen by function name (`hash`), so a function
//! keeps its colour between graphs, and the output is deterministic.
//!
//! A differential flame graph draws the *after* profile's stacks and colours each
//! frame by how its self cost changed against *before*: red where it grew, blue
//! where it shrank (Brendan Gregg's red/blue differential flame graphs); a frame's
//! tooltip gives the change as a share of the *after* total.

use std::io::{self, Write};

use inferno::differential;
use inferno::flamegraph::{self, color::BasicPalette, color::Palette};

use super::folded::{write_folded, FoldedStack};

/// Options of the flame graph exports.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FlameGraphOptions {
    /// Title at the top. Default: `emuprof`.
    pub title: String,
    /// Line under the title (e.g. the command). Default: none.
    pub subtitle: Option<String>,
    /// Frames narrower than this many pixels are left out. Default: 0.1.
    pub min_width: f64,
    /// Differential graphs: scale *before* to the total of *after* first, so
    /// that colours show the shape of the change rather than its overall size.
    /// Default: false.
    pub normalize: bool,
}

impl Default for FlameGraphOptions {
    fn default() -> FlameGraphOptions {
        FlameGraphOptions {
            title: "emuprof".into(),
            subtitle: None,
            min_width: 0.1,
            normalize: false,
        }
    }
}

impl FlameGraphOptions {
    fn inferno(&self) -> flamegraph::Options<'static> {
        let mut options = flamegraph::Options::default();
        options.title = self.title.clone();
        options.subtitle = self.subtitle.clone();
        options.count_name = "instructions".into();
        options.min_width = self.min_width;
        options.hash = true;
        options.deterministic = true;
        options.colors = Palette::Basic(BasicPalette::Hot);
        options
    }
}

/// Writes the flame graph SVG of `stacks`. Fails (with an I/O error of kind
/// `InvalidData`) when there are no stacks with a cost.
pub fn write_flamegraph<W: Write>(
    stacks: &[FoldedStack],
    options: &FlameGraphOptions,
    out: W,
) -> io::Result<()> {
    let lines: Vec<String> = stacks
        .iter()
        .map(|s| format!("{} {}", s.stack, s.instructions))
        .collect();
    flamegraph::from_lines(
        &mut options.inferno(),
        lines.iter().map(String::as_str),
        out,
    )
}

/// Writes a differential flame graph: the shape of `after`, coloured by the
/// change of each frame's self cost from `before`.
pub fn write_diff_flamegraph<W: Write>(
    before: &[FoldedStack],
    after: &[FoldedStack],
    options: &FlameGraphOptions,
    out: W,
) -> io::Result<()> {
    let mut before_text = Vec::new();
    write_folded(before, &mut before_text)?;
    let mut after_text = Vec::new();
    write_folded(after, &mut after_text)?;
    let mut both = Vec::new();
    let diff_options = differential::Options {
        normalize: options.normalize,
        strip_hex: false,
    };
    differential::from_readers(diff_options, &before_text[..], &after_text[..], &mut both)?;
    flamegraph::from_reader(&mut options.inferno(), &both[..], out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(stack: &str, instructions: u64) -> FoldedStack {
        FoldedStack {
            stack: stack.into(),
            instructions,
        }
    }

    fn frame_titles(svg: &[u8]) -> Vec<String> {
        let text = std::str::from_utf8(svg).expect("SVG is UTF-8");
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let document = roxmltree::Document::parse_with_options(text, options)
            .expect("the SVG is well-formed XML");
        document
            .descendants()
            .filter(|n| n.has_tag_name("title"))
            .filter_map(|n| n.text().map(str::to_string))
            .collect()
    }

    #[test]
    fn flamegraph_is_xml_with_a_frame_per_function() {
        let stacks = [
            stack("main", 10),
            stack("main;work", 80),
            stack("main;work;leaf", 10),
        ];
        let mut svg = Vec::new();
        write_flamegraph(&stacks, &FlameGraphOptions::default(), &mut svg).expect("renders");
        let titles = frame_titles(&svg);
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with("work (90 instructions, 90.00%)")),
            "{titles:?}"
        );
        assert!(
            titles
                .iter()
                .any(|t| t.starts_with("all (100 instructions")),
            "{titles:?}"
        );
    }

    #[test]
    fn same_input_gives_the_same_svg() {
        let stacks = [stack("main;a", 3), stack("main;b", 4)];
        let render = || {
            let mut svg = Vec::new();
            write_flamegraph(&stacks, &FlameGraphOptions::default(), &mut svg).expect("renders");
            svg
        };
        assert_eq!(render(), render());
    }

    #[test]
    fn diff_flamegraph_shows_the_change() {
        let before = [stack("main;work", 100)];
        let after = [stack("main;work", 150)];
        let mut svg = Vec::new();
        write_diff_flamegraph(&before, &after, &FlameGraphOptions::default(), &mut svg)
            .expect("renders");
        let titles = frame_titles(&svg);
        assert!(
            titles
                .iter()
                .any(|t| t.contains("work") && t.contains("+33.33%")),
            "{titles:?}"
        );
    }

    #[test]
    fn no_stacks_is_an_error_not_a_panic() {
        let mut svg = Vec::new();
        assert!(write_flamegraph(&[], &FlameGraphOptions::default(), &mut svg).is_err());
    }
}
