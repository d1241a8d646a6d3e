//! The network-transparent stream: `emuprof run --serve ADDR` publishes the
//! growing profile, `emuprof view ADDR` draws it with the live view.
//!
//! The format (newline-delimited JSON, versioned) is in [`protocol`] and
//! `docs/stream.md`; the serving side ([`serve`], [`server`]) never waits on
//! a viewer, so the guest runs as fast with viewers as without.

mod address;
mod client;
mod protocol;
mod serve;
mod server;

pub use address::Address;
pub use client::{Over, Subscription};
pub use serve::{profile_serving, ServeArgs};

use anyhow::Result;

use crate::commands::live::{self, Screen};
use crate::exit_code;

/// The environment variable that holds a stream's token, for `--serve` and
/// `view` alike (a command line is visible to other users, the environment
/// is not).
pub const TOKEN_VARIABLE: &str = "EMUPROF_STREAM_TOKEN";

/// Connects to the stream at `address` (`token`, else $EMUPROF_STREAM_TOKEN).
pub fn subscribe(address: &Address, token: Option<String>) -> Result<Subscription> {
    let token = token.or_else(|| std::env::var(TOKEN_VARIABLE).ok());
    Subscription::connect(address, token)
}

/// `emuprof view ADDR`: draws the run streamed at `address` until it ends
/// and the user leaves, then says in one line how it ended.
pub fn view(address: &Address, token: Option<String>) -> Result<i32> {
    let subscription = subscribe(address, token)?;
    live::require_terminal(
        "emuprof view ADDR",
        "run it in a terminal (docs/stream.md describes the stream for other readers)",
    )?;
    let mut screen = Screen::open(
        format!("emuprof view {address}"),
        format!("streamed run: {}", subscription.command.join(" ")),
    )?;
    let shown = live::show(&mut screen, || subscription.feed(), || true);
    screen.close()?;
    shown?;
    Ok(match subscription.latest().over {
        Some(Over::Ended(end)) => {
            eprintln!("emuprof: the run at {address} ended: {}", end.stop);
            0
        }
        Some(Over::Lost(why)) => {
            eprintln!("emuprof: lost the stream from {address}: {why}");
            exit_code::EMUPROF_FAILED
        }
        None => {
            eprintln!("emuprof: left the view; the run at {address} goes on");
            0
        }
    })
}
