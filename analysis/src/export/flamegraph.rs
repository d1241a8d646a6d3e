//! Flame graphs (SVG) from folded stacks, and differential flame graphs
//! comparing two profiles.
//!
//! Because emuprof's stacks come from the exact call tree, a frame's width is the
//! exact number of instructions run in that calling context and below, not a
//! sampling estimate. Colours are chosen from a hash of the function name, so a
//! function keeps its colour between graphs, and the output is deterministic.
//! Every frame carries a `<title>` tooltip: `name (N instructions, P%)`.
//!
//! A differential flame graph draws the *after* profile's stacks and colours each
//! frame by how its **self** cost (instructions run in that calling context
//! itself, not in its callees) changed against *before*: red where it grew,
//! blue where it shrank (Brendan Gregg's red/blue differential flame graphs).
//! Colouring by self change points at the frames where the work changed; an
//! inclusive colouring would make every caller of a changed frame, the root
//! first, at least as red. The tooltip gives both changes, inclusive and self,
//! as shares of the *after* total.
//!
//! Opened in a browser, the SVG is interactive (our own script, embedded):
//! click a frame to zoom into it (its ancestors stay, faded), click the root
//! or "Reset zoom" to zoom out; "Search" takes a regular expression,
//! highlights the matching frames and shows the share of the total they
//! cover. The SVG is as wide as the window it is shown in (`width="100%"`
//! with a fixed `viewBox`).
//!
//! The SVG is written here rather than with the `inferno` crate: inferno is
//! CDDL-licensed, which does not mix with Unicorn's GPL in one binary; the
//! script is our own for the same reason.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::folded::FoldedStack;
use crate::report::format::grouped;

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

const WIDTH: f64 = 1200.0;
const PAD: f64 = 10.0;
const FRAME_HEIGHT: f64 = 16.0;
const TOP: f64 = 48.0;
const CHAR_WIDTH: f64 = 7.0;
/// The interactions (zoom, search), embedded in every SVG.
const SEARCH_SCRIPT: &str = include_str!("flamegraph.js");

/// One frame of the merged stack tree.
#[derive(Default)]
struct Frame {
    total: u64,
    /// Self cost: of the stacks ending at this frame.
    self_total: u64,
    /// Inclusive cost in the *before* profile (differential graphs).
    before: f64,
    /// Self cost in the *before* profile (differential graphs).
    self_before: f64,
    children: BTreeMap<String, Frame>,
}

impl Frame {
    fn add(&mut self, stack: &str, instructions: u64) {
        self.total += instructions;
        let mut node = self;
        for name in stack.split(';').filter(|n| !n.is_empty()) {
            node = node.children.entry(name.to_string()).or_default();
            node.total += instructions;
        }
        node.self_total += instructions;
    }

    fn add_before(&mut self, stack: &str, instructions: f64) {
        self.before += instructions;
        let mut node = self;
        for name in stack.split(';').filter(|n| !n.is_empty()) {
            match node.children.get_mut(name) {
                Some(child) => {
                    child.before += instructions;
                    node = child;
                }
                None => return,
            }
        }
        node.self_before += instructions;
    }

    /// The change of the frame's self cost from *before*.
    fn self_change(&self) -> f64 {
        self.self_total as f64 - self.self_before
    }

    fn depth(&self) -> usize {
        1 + self.children.values().map(Frame::depth).max().unwrap_or(0)
    }
}

fn tree(stacks: &[FoldedStack]) -> io::Result<Frame> {
    let mut root = Frame::default();
    for s in stacks {
        root.add(&s.stack, s.instructions);
    }
    if root.total == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no stack has any cost: nothing to draw",
        ));
    }
    Ok(root)
}

/// Writes the flame graph SVG of `stacks`. Fails (with an I/O error of kind
/// `InvalidData`) when there are no stacks with a cost.
pub fn write_flamegraph<W: Write>(
    stacks: &[FoldedStack],
    options: &FlameGraphOptions,
    out: W,
) -> io::Result<()> {
    let root = tree(stacks)?;
    render(&root, None, options, out)
}

/// Writes a differential flame graph: the shape of `after`, coloured by the
/// change of each frame's self cost from `before`.
pub fn write_diff_flamegraph<W: Write>(
    before: &[FoldedStack],
    after: &[FoldedStack],
    options: &FlameGraphOptions,
    out: W,
) -> io::Result<()> {
    let mut root = tree(after)?;
    let before_total: u64 = before.iter().map(|s| s.instructions).sum();
    let scale = if options.normalize && before_total > 0 {
        root.total as f64 / before_total as f64
    } else {
        1.0
    };
    for s in before {
        root.add_before(&s.stack, s.instructions as f64 * scale);
    }
    let mut max_change: f64 = 0.0;
    max_self_change(&root, &mut max_change);
    render(&root, Some(max_change.max(1.0)), options, out)
}

/// The largest self change, grown or shrunk, of `frame` and the frames below.
fn max_self_change(frame: &Frame, max: &mut f64) {
    *max = max.max(frame.self_change().abs());
    for child in frame.children.values() {
        max_self_change(child, max);
    }
}

fn render<W: Write>(
    root: &Frame,
    diff: Option<f64>,
    options: &FlameGraphOptions,
    mut out: W,
) -> io::Result<()> {
    let depth = root.depth();
    let height = TOP + depth as f64 * FRAME_HEIGHT + PAD * 2.0;
    let per_instruction = (WIDTH - 2.0 * PAD) / root.total as f64;
    writeln!(
        out,
        r#"<?xml version="1.0" encoding="UTF-8" standalone="no"?>"#
    )?;
    writeln!(
        out,
        r#"<svg version="1.1" width="100%" viewBox="0 0 {WIDTH} {height}" data-width="{WIDTH}" data-pad="{PAD}" xmlns="http://www.w3.org/2000/svg">"#
    )?;
    writeln!(out, "<style>text {{ font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }} .title {{ font-size: 17px; }} .button {{ cursor: pointer; fill: #444; }} g.frame {{ cursor: pointer; }}</style>")?;
    writeln!(
        out,
        r##"<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="#f8f8f0"/>"##
    )?;
    writeln!(
        out,
        r#"<text class="title" x="{}" y="24" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        escape(&options.title)
    )?;
    if let Some(sub) = &options.subtitle {
        writeln!(
            out,
            r#"<text x="{}" y="40" text-anchor="middle">{}</text>"#,
            WIDTH / 2.0,
            escape(sub)
        )?;
    }
    writeln!(
        out,
        r#"<text id="unzoom" class="button" x="{PAD}" y="24" style="display: none">Reset zoom</text>"#
    )?;
    writeln!(
        out,
        r#"<text id="search" class="button" x="{}" y="24" text-anchor="end">Search</text>"#,
        WIDTH - PAD
    )?;
    writeln!(
        out,
        r#"<text id="matched" x="{}" y="40" text-anchor="end"></text>"#,
        WIDTH - PAD
    )?;
    let mut ctx = Drawing {
        out: &mut out,
        total: root.total,
        per_instruction,
        height,
        diff,
        min_width: options.min_width,
    };
    ctx.frame("all", root, PAD, 0)?;
    writeln!(
        out,
        "<script type=\"text/ecmascript\"><![CDATA[\n{SEARCH_SCRIPT}]]></script>"
    )?;
    writeln!(out, "</svg>")
}

struct Drawing<'a, W: Write> {
    out: &'a mut W,
    total: u64,
    per_instruction: f64,
    height: f64,
    diff: Option<f64>,
    min_width: f64,
}

impl<W: Write> Drawing<'_, W> {
    fn frame(&mut self, name: &str, frame: &Frame, x: f64, depth: usize) -> io::Result<()> {
        let width = frame.total as f64 * self.per_instruction;
        if width < self.min_width {
            return Ok(());
        }
        let y = self.height - PAD - (depth as f64 + 1.0) * FRAME_HEIGHT;
        let percent = 100.0 * frame.total as f64 / self.total as f64;
        let percent = if frame.total == self.total {
            "100%".to_string()
        } else {
            format!("{percent:.2}%")
        };
        let (title, fill) = match self.diff {
            None => (
                format!("{name} ({} instructions, {percent})", grouped(frame.total)),
                hot_colour(name),
            ),
            Some(max) => {
                let share = |delta: f64| {
                    let sign = match delta {
                        d if d > 0.0 => "+",
                        d if d < 0.0 => "-",
                        _ => "",
                    };
                    format!("{sign}{:.2}%", (100.0 * delta / self.total as f64).abs())
                };
                (
                    format!(
                        "{name} ({} instructions, {percent}; {}, self {})",
                        grouped(frame.total),
                        share(frame.total as f64 - frame.before),
                        share(frame.self_change())
                    ),
                    diff_colour(frame.self_change() / max),
                )
            }
        };
        writeln!(
            self.out,
            r#"<g class="frame" data-name="{}" data-depth="{depth}"><title>{}</title>"#,
            escape(name),
            escape(&title)
        )?;
        writeln!(
            self.out,
            r#"<rect x="{x:.2}" y="{y:.1}" width="{:.2}" height="{:.1}" fill="{fill}" rx="2" ry="2"/>"#,
            width,
            FRAME_HEIGHT - 1.0
        )?;
        // Every frame has its text element: the script refits it on zoom.
        let fits = ((width - 6.0) / CHAR_WIDTH).floor();
        let label: String = if fits < 3.0 {
            String::new()
        } else if name.chars().count() as f64 <= fits {
            name.to_string()
        } else {
            name.chars()
                .take(fits as usize - 2)
                .chain("..".chars())
                .collect()
        };
        writeln!(
            self.out,
            r#"<text x="{:.2}" y="{:.1}">{}</text>"#,
            x + 3.0,
            y + 11.5,
            escape(&label)
        )?;
        writeln!(self.out, "</g>")?;
        let mut child_x = x;
        for (child_name, child) in &frame.children {
            self.frame(child_name, child, child_x, depth + 1)?;
            child_x += child.total as f64 * self.per_instruction;
        }
        Ok(())
    }
}

/// flamegraph.pl's "hot" palette, picked by a hash of the name.
fn hot_colour(name: &str) -> String {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let v = |shift: u32| ((h >> shift) & 0xff) as f64 / 255.0;
    format!(
        "rgb({},{},{})",
        205 + (50.0 * v(0)) as u32,
        (230.0 * v(8)) as u32,
        (55.0 * v(16)) as u32
    )
}

/// Red for growth, blue for shrinkage, white for no change; `ratio` in -1..=1.
fn diff_colour(ratio: f64) -> String {
    let strength = (ratio.abs().min(1.0) * 200.0) as u32;
    let fade = 255 - strength;
    if ratio > 0.0 {
        format!("rgb(255,{fade},{fade})")
    } else if ratio < 0.0 {
        format!("rgb({fade},{fade},255)")
    } else {
        "rgb(250,250,250)".to_string()
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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

    /// The fill of the frame whose title starts with `name (`.
    fn fill_of(svg: &[u8], name: &str) -> String {
        let text = String::from_utf8_lossy(svg);
        let at = text
            .find(&format!("<title>{name} ("))
            .unwrap_or_else(|| panic!("no frame {name}"));
        let rest = &text[at..];
        let fill = &rest[rest.find("fill=\"").expect("a fill") + 6..];
        fill[..fill.find('"').expect("closing quote")].to_string()
    }

    #[test]
    fn diff_flamegraph_is_coloured_by_self_change() {
        // work's own cost grew by 50; main's own cost did not change, though
        // its inclusive cost grew as much as work's; leaf shrank by 10.
        let before = [
            stack("main", 10),
            stack("main;work", 100),
            stack("main;work;leaf", 40),
        ];
        let after = [
            stack("main", 10),
            stack("main;work", 150),
            stack("main;work;leaf", 30),
        ];
        let mut svg = Vec::new();
        write_diff_flamegraph(&before, &after, &FlameGraphOptions::default(), &mut svg)
            .expect("renders");
        assert_eq!(fill_of(&svg, "main"), "rgb(250,250,250)");
        assert_eq!(fill_of(&svg, "work"), "rgb(255,55,55)");
        assert_eq!(fill_of(&svg, "leaf"), "rgb(215,215,255)");
        let titles = frame_titles(&svg);
        assert!(
            titles.contains(&"main (190 instructions, 100%; +21.05%, self 0.00%)".to_string()),
            "{titles:?}"
        );
        assert!(
            titles.contains(&"work (180 instructions, 94.74%; +21.05%, self +26.32%)".to_string()),
            "{titles:?}"
        );
    }

    #[test]
    fn no_stacks_is_an_error_not_a_panic() {
        let mut svg = Vec::new();
        assert!(write_flamegraph(&[], &FlameGraphOptions::default(), &mut svg).is_err());
    }
}
