//! Exports to the tools people already use.
//!
//! | format | module | read by |
//! |---|---|---|
//! | Graphviz DOT call graph / diff call graph | [`dot`], [`diff_dot`] | Graphviz (`emuprof export -f svg` runs `dot -Tsvg`) |
//! | the call graph as SVG laid out in-process, when Graphviz is missing or too slow | [`layered_svg`] | `emuprof view`, any browser |
//! | Callgrind | [`callgrind`] | `callgrind_annotate`, KCachegrind, QCachegrind |
//! | folded stacks | [`folded`] | inferno, `flamegraph.pl`, speedscope |
//! | flame graph / differential flame graph SVG | [`flamegraph`] | any browser |
//! | pprof (gzipped protobuf) | [`pprof`] | `go tool pprof`, Grafana Pyroscope, speedscope, Perfetto |
//! | speedscope evented JSON (exact call tree) | [`speedscope`] | speedscope |
//! | the data of `emuprof view`'s page (JSON) | [`view`] | emuprof's own browser view |
//!
//! The stack-based formats share [`stacks`] (recursion folding, inline frames);
//! line- and instruction-level data comes from
//! [`crate::instructions::InstructionCosts`]. Every exporter writes to any
//! `W: Write`.

mod acyclic;
pub mod callgrind;
pub mod diff_dot;
pub mod dot;
pub mod firefox;
pub mod flamegraph;
pub mod folded;
pub mod layered_svg;
pub mod pprof;
pub mod pprof_proto;
pub mod speedscope;
pub mod stacks;
pub mod view;
