//! The messages of pprof's `profile.proto`, generated at build time from the
//! published file (`analysis/proto/`, see its README) by prost-build: the
//! field numbers and types are the format's own, never typed by hand.
#![allow(missing_docs, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/perftools.profiles.rs"));
