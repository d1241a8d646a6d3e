//! The viewing side: connect, say hello, read the header, then read
//! snapshots on a thread of their own and keep the newest for the view.

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::address::{Address, Connection};
use super::protocol::{End, Hello, ServerLine, FORMAT, VERSION};
use crate::commands::live::{Feed, Moment, Status};

/// How long connecting and the server's first line may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
use super::protocol::MAX_LINE;

/// A stream being read.
pub struct Subscription {
    /// The streamed run's argv.
    pub command: Vec<String>,
    latest: Arc<Mutex<Latest>>,
    /// How many snapshots [`Subscription::feed`] has passed on.
    fed: AtomicU64,
}

/// What the reader thread has received so far.
#[derive(Default, Clone)]
pub struct Latest {
    /// The newest moment.
    pub moment: Option<Moment>,
    /// Snapshots received.
    pub received: u64,
    /// How the stream ended, once it has.
    pub over: Option<Over>,
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Over {
    /// The run ended; the last snapshot arrived.
    Ended(End),
    /// The stream broke off before the run ended (why).
    Lost(String),
}

impl Subscription {
    /// Connects to the server at `address` and reads its header; `token`
    /// when the server has one.
    pub fn connect(address: &Address, token: Option<String>) -> Result<Subscription> {
        let mut connection = Connection::connect(address, ANSWER_TIMEOUT).map_err(|e| {
            anyhow::anyhow!("{e:#}; is `emuprof run --serve {address} PROGRAM` running?")
        })?;
        let mut hello = serde_json::to_vec(&Hello {
            version: VERSION,
            token,
        })?;
        hello.push(b'\n');
        connection
            .send_all(&hello)
            .with_context(|| format!("cannot greet {address}"))?;
        connection.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        let mut reader = BufReader::new(connection);
        let first = read_line(&mut reader)
            .with_context(|| format!("no answer from {address}"))?
            .with_context(|| format!("{address} closed the connection without a word"))?;
        let command = match serde_json::from_slice::<ServerLine>(&first) {
            Ok(ServerLine::Header {
                format,
                version,
                command,
                ..
            }) if format == FORMAT && version == VERSION => command,
            Ok(ServerLine::Header {
                format, version, ..
            }) => bail!("{address} streams {format} version {version}; this emuprof reads {FORMAT} version {VERSION}"),
            Ok(ServerLine::Refused { reason }) => bail!("{address} refused the viewer: {reason}"),
            _ => bail!("{address} is not an emuprof stream"),
        };
        reader.get_ref().set_read_timeout(None)?;
        let latest = Arc::new(Mutex::new(Latest::default()));
        let shared = Arc::clone(&latest);
        let argv = command.clone();
        std::thread::spawn(move || {
            let over = read_snapshots(reader, &argv, &shared);
            if let Ok(mut latest) = shared.lock() {
                latest.over = Some(over);
            }
        });
        Ok(Subscription {
            command,
            latest,
            fed: AtomicU64::new(0),
        })
    }

    /// What was received so far.
    pub fn latest(&self) -> Latest {
        self.latest.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// What the view shows now: the newest moment not yet taken, and whether
    /// the stream is over (said once with its last moment).
    pub fn feed(&self) -> Feed {
        let latest = self.latest();
        let fed = self.fed.swap(latest.received, Ordering::Relaxed);
        let moment = latest.moment.filter(|_| latest.received > fed);
        match latest.over {
            None => Feed::Running(moment),
            Some(over) => {
                let status = match over {
                    Over::Ended(_) => Status::Finished,
                    Over::Lost(why) => Status::Lost(why),
                };
                Feed::Over(moment, status)
            }
        }
    }
}

/// Reads snapshots into `latest` until the last one or a failure.
fn read_snapshots(mut reader: impl BufRead, command: &[String], latest: &Mutex<Latest>) -> Over {
    loop {
        let line = match read_line(&mut reader) {
            Ok(Some(line)) => line,
            Ok(None) => {
                return Over::Lost("the server closed the stream before the run ended".into())
            }
            Err(e) => return Over::Lost(format!("reading the stream failed: {e}")),
        };
        let snapshot = match serde_json::from_slice::<ServerLine>(&line) {
            Ok(ServerLine::Snapshot(snapshot)) => snapshot,
            Ok(_) => continue,
            Err(e) => return Over::Lost(format!("the server sent a line that is not JSON: {e}")),
        };
        let moment = match snapshot.to_moment(command) {
            Ok(moment) => moment,
            Err(e) => return Over::Lost(format!("the server sent an inconsistent snapshot: {e}")),
        };
        let Ok(mut latest) = latest.lock() else {
            return Over::Lost("the view failed".into());
        };
        latest.moment = Some(moment);
        latest.received += 1;
        if let Some(end) = snapshot.end {
            return Over::Ended(end);
        }
    }
}

/// One line without its newline; `None` at the end of the stream; an
/// error for a line longer than [`MAX_LINE`] (read no further).
fn read_line(reader: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    reader
        .by_ref()
        .take(MAX_LINE + 1)
        .read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.len() as u64 > MAX_LINE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the server sent a line longer than {} MiB, the most emuprof view reads (a call \
                 tree too large to watch live: view the profile file after the run)",
                MAX_LINE >> 20
            ),
        ));
    }
    if line.pop() != Some(b'\n') {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the stream ended in the middle of a line",
        ));
    }
    Ok(Some(line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A stream whose header is followed by one snapshot line of 64 MiB
    /// and one byte (generated as it is read): the reader gives up after
    /// the limit with a line saying what happened, instead of growing with
    /// the line.
    #[test]
    fn an_oversized_snapshot_line_ends_the_stream_with_a_reason() {
        let line = std::io::repeat(b' ').take(MAX_LINE + 1);
        let stream = b"{\"type\":\"snapshot\",".chain(line).chain(&b"}\n"[..]);
        let latest = Mutex::new(Latest::default());
        let over = read_snapshots(BufReader::new(stream), &[], &latest);
        let Over::Lost(why) = over else {
            panic!("{over:?}")
        };
        assert_eq!(
            why,
            "reading the stream failed: the server sent a line longer than 64 MiB, the most \
             emuprof view reads (a call tree too large to watch live: view the profile file \
             after the run)"
        );
        assert_eq!(latest.lock().map(|l| l.received).ok(), Some(0));
    }

    #[test]
    fn lines_up_to_the_limit_are_read() {
        let mut stream = BufReader::new(&b"{}\nabc"[..]);
        assert_eq!(read_line(&mut stream).ok(), Some(Some(b"{}".to_vec())));
        assert!(read_line(&mut stream).is_err(), "a line cut short");
    }
}
