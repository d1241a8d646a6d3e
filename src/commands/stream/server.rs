//! The serving side: viewers attach, each gets the header and then the newest
//! snapshot whenever it has taken the previous one.
//!
//! Everything here runs on emuprof's main thread, never on the guest's or the
//! call tree's, and never waits on a viewer: sockets are written with
//! `MSG_DONTWAIT | MSG_NOSIGNAL`, read without blocking. A viewer holds at
//! most one line in flight (shared, not copied); while it is still taking
//! that line, newer snapshots replace each other and only the newest is sent
//! next (latest wins), so a slow viewer sees fewer snapshots, each whole and
//! consistent, and a vanished one is dropped at its first failed write.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::address::{Connection, Listener};
use super::protocol::{Hello, ServerLine, MAX_LINE, VERSION};

/// Viewers served at once; more are refused.
const MAX_VIEWERS: usize = 16;
/// Connections waiting for their hello line at once: when one more comes,
/// the one that has waited longest is dropped, so connections that never
/// say hello (another user's, on a shared address) cannot keep viewers out.
const MAX_WAITING: usize = 16;
/// Time a viewer has to send its hello line.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest hello line accepted.
const MAX_HELLO: usize = 4096;
/// A viewer that has been taking one line for longer than this is behind:
/// it gets no wait for the last snapshot.
const BEHIND: Duration = Duration::from_millis(250);

/// The listener, the attached viewers and the newest line for them.
pub struct Publisher {
    listener: Listener,
    token: Option<String>,
    header: Arc<[u8]>,
    latest: Option<(u64, Arc<[u8]>)>,
    viewers: Vec<Viewer>,
}

struct Viewer {
    connection: Connection,
    /// Bytes of the hello line so far; `None` once greeted.
    hello: Option<Vec<u8>>,
    /// When the wait for the hello began, then when the line in flight did.
    since: Instant,
    /// The line being sent and how much of it went out.
    sending: Option<(Arc<[u8]>, usize)>,
    /// Sequence number of the last snapshot handed to `sending`.
    sent: u64,
    /// Drop the viewer once `sending` is out (after a refusal).
    closing: bool,
}

impl Publisher {
    /// Serves the stream whose header is `header` on `listener`; viewers must
    /// say `token` when there is one.
    pub fn new(listener: Listener, header: &ServerLine, token: Option<String>) -> Publisher {
        Publisher {
            listener,
            token,
            header: header.to_bytes().into(),
            latest: None,
            viewers: Vec::new(),
        }
    }

    /// Viewers that were greeted and are being served.
    pub fn viewers(&self) -> usize {
        self.viewers
            .iter()
            .filter(|v| v.hello.is_none() && !v.closing)
            .count()
    }

    /// Makes `line` (a snapshot numbered `seq`) the one viewers get next.
    /// A line longer than [`MAX_LINE`] is not sent (viewers keep the
    /// snapshot they have).
    pub fn publish(&mut self, seq: u64, line: Vec<u8>) {
        if line.len() as u64 <= MAX_LINE {
            self.latest = Some((seq, line.into()));
        }
    }

    /// Accepts new viewers, reads hello lines and sends what each viewer's
    /// socket takes now. Never waits.
    pub fn pump(&mut self) {
        while let Ok(Some(connection)) = self.listener.accept() {
            if connection.set_nonblocking().is_err() {
                continue;
            }
            let mut viewer = Viewer {
                connection,
                hello: Some(Vec::new()),
                since: Instant::now(),
                sending: None,
                sent: 0,
                closing: false,
            };
            self.make_room_to_wait();
            if self.viewers() >= MAX_VIEWERS {
                viewer.refuse("too many viewers");
            }
            self.viewers.push(viewer);
        }
        let (token, header, latest) = (&self.token, &self.header, &self.latest);
        self.viewers.retain_mut(|viewer| {
            viewer
                .serve(token.as_deref(), header, latest.as_ref())
                .is_ok()
        });
    }

    /// Drops the connection that has waited longest for its hello when
    /// [`MAX_WAITING`] are waiting.
    fn make_room_to_wait(&mut self) {
        let waiting = |v: &Viewer| v.hello.is_some() && !v.closing;
        if self.viewers.iter().filter(|v| waiting(v)).count() < MAX_WAITING {
            return;
        }
        let oldest = self
            .viewers
            .iter()
            .enumerate()
            .filter(|(_, v)| waiting(v))
            .min_by_key(|(_, v)| v.since)
            .map(|(i, _)| i);
        if let Some(i) = oldest {
            self.viewers.remove(i);
        }
    }

    /// Whether every greeted viewer has been sent the newest line.
    pub fn drained(&self) -> bool {
        let newest = self.latest.as_ref().map_or(0, |(seq, _)| *seq);
        self.viewers
            .iter()
            .all(|v| v.hello.is_some() || v.closing || (v.sending.is_none() && v.sent == newest))
    }

    /// Before the last snapshot: drops every viewer that is behind (still
    /// taking a line handed to it more than [`BEHIND`] ago: it has been
    /// skipping snapshots already, so it is cut off rather than waited for)
    /// or not yet greeted, and returns how many viewers remain.
    pub fn cut_behind(&mut self) -> usize {
        self.pump();
        self.viewers.retain(|v| {
            v.hello.is_none() && !v.closing && !(v.sending.is_some() && v.since.elapsed() > BEHIND)
        });
        self.viewers.len()
    }

    /// Sends `line`, the last snapshot (numbered `seq`), waiting at most
    /// `limit` for the viewers to take it, and closes every connection.
    pub fn finish(mut self, seq: u64, line: Vec<u8>, limit: Duration) {
        self.publish(seq, line);
        self.drain(limit);
    }

    /// Sleeps until a viewer arrives, says something or can take more of its
    /// line, `also` becomes readable, or `timeout` passes (`None`: no limit).
    /// A full socket does not wake it, so a stalled viewer costs nothing.
    pub fn wait(&self, timeout: Option<Duration>, also: BorrowedFd) {
        let entry = |fd: RawFd, events: libc::c_short| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        let mut fds = vec![
            entry(self.listener.as_raw_fd(), libc::POLLIN),
            entry(also.as_raw_fd(), libc::POLLIN),
        ];
        for viewer in &self.viewers {
            let out = if viewer.sending.is_some() {
                libc::POLLOUT
            } else {
                0
            };
            fds.push(entry(viewer.connection.as_raw_fd(), libc::POLLIN | out));
        }
        let millis = timeout.map_or(-1, |t| t.as_millis().clamp(1, 60_000) as libc::c_int);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfd entries for the
        // duration of the call, and every descriptor in it is open (owned by
        // `self` or borrowed for the call). An error (EINTR) just ends the wait.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
    }

    /// Pumps until every viewer has the newest line or `limit` has passed.
    pub fn drain(&mut self, limit: Duration) {
        let start = Instant::now();
        loop {
            self.pump();
            if self.drained() || start.elapsed() >= limit {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Viewer {
    /// Queues a refusal; the viewer is dropped once it is sent.
    fn refuse(&mut self, reason: &str) {
        let line = ServerLine::Refused {
            reason: reason.to_string(),
        };
        self.sending = Some((line.to_bytes().into(), 0));
        self.closing = true;
    }

    /// One step for this viewer; an error drops it.
    fn serve(
        &mut self,
        token: Option<&str>,
        header: &Arc<[u8]>,
        latest: Option<&(u64, Arc<[u8]>)>,
    ) -> io::Result<()> {
        if !self.closing {
            if self.hello.is_some() {
                self.greet(token, header)?;
            } else {
                self.notice_hangup()?;
            }
        }
        if self.hello.is_none() && self.sending.is_none() && !self.closing {
            if let Some((seq, line)) = latest.filter(|(seq, _)| *seq > self.sent) {
                self.sending = Some((Arc::clone(line), 0));
                self.sent = *seq;
                self.since = Instant::now();
            }
        }
        while let Some((line, offset)) = &mut self.sending {
            match self.connection.send_now(&line[*offset..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    *offset += n;
                    if *offset == line.len() {
                        self.sending = None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        if self.closing {
            return Err(io::ErrorKind::ConnectionAborted.into());
        }
        Ok(())
    }

    /// Reads the hello line; once whole, checks it and queues the header or a
    /// refusal.
    fn greet(&mut self, token: Option<&str>, header: &Arc<[u8]>) -> io::Result<()> {
        let Some(hello) = &mut self.hello else {
            return Ok(());
        };
        let mut buf = [0u8; 512];
        loop {
            match self.connection.read(&mut buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => hello.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
            if hello.len() > MAX_HELLO {
                return Err(io::ErrorKind::InvalidData.into());
            }
        }
        let Some(end) = hello.iter().position(|&b| b == b'\n') else {
            if self.since.elapsed() > HELLO_TIMEOUT {
                return Err(io::ErrorKind::TimedOut.into());
            }
            return Ok(());
        };
        let verdict = match serde_json::from_slice::<Hello>(&hello[..end]) {
            Err(_) => Err("the first line is not a hello ({\"version\":1})".to_string()),
            Ok(h) if h.version != VERSION => Err(format!(
                "this server streams version {VERSION}, the viewer reads version {}",
                h.version
            )),
            Ok(h) if !token_matches(token, h.token.as_deref()) => {
                Err("wrong or missing token (emuprof view --token)".to_string())
            }
            Ok(_) => Ok(()),
        };
        self.hello = None;
        match verdict {
            Ok(()) => self.sending = Some((Arc::clone(header), 0)),
            Err(reason) => self.refuse(&reason),
        }
        Ok(())
    }

    /// Reads and discards what a greeted viewer sends; fails when it hung up.
    fn notice_hangup(&mut self) -> io::Result<()> {
        let mut buf = [0u8; 256];
        // A bounded number of reads: a viewer that keeps sending cannot hold
        // the others up.
        for _ in 0..16 {
            match self.connection.read(&mut buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Whether the viewer's token is the server's (always, without one); the
/// comparison takes the same time wherever the first difference is.
fn token_matches(expected: Option<&str>, given: Option<&str>) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    let given = given.unwrap_or("").as_bytes();
    let expected = expected.as_bytes();
    let mut differ = expected.len() != given.len();
    for (i, &b) in expected.iter().enumerate() {
        differ |= given.get(i).is_none_or(|&g| g != b);
    }
    !differ
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::stream::address::Address;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;

    /// A line of `size` bytes that says its number.
    fn line(seq: u64, size: usize) -> Vec<u8> {
        let mut bytes = format!("{{\"seq\":{seq},\"pad\":\"").into_bytes();
        bytes.resize(size, b'x');
        bytes.extend_from_slice(b"\"}\n");
        bytes
    }

    /// Issue 41: connections that never say hello cannot keep a viewer out.
    #[test]
    fn silent_connections_do_not_keep_viewers_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = Listener::bind(&Address::Unix(path.clone())).unwrap();
        let mut publisher = Publisher::new(listener, &ServerLine::header(&[]), None);
        let silent: Vec<UnixStream> = (0..3 * MAX_WAITING)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        publisher.pump();
        let mut viewer = UnixStream::connect(&path).unwrap();
        viewer.write_all(b"{\"version\":1}\n").unwrap();
        publisher.pump();
        publisher.pump();
        assert_eq!(publisher.viewers(), 1, "the viewer was kept out");
        let mut header = String::new();
        BufReader::new(&viewer).read_line(&mut header).unwrap();
        assert!(!header.contains("too many viewers"), "{header}");
        assert!(publisher.viewers.len() <= MAX_WAITING + 1);
        drop(silent);
    }

    #[test]
    fn a_viewer_that_does_not_read_gets_whole_lines_and_the_newest_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = Listener::bind(&Address::Unix(path.clone())).unwrap();
        let mut publisher = Publisher::new(listener, &ServerLine::header(&[]), None);
        let mut viewer = UnixStream::connect(&path).unwrap();
        viewer.write_all(b"{\"version\":1}\n").unwrap();
        // 200 lines of 64 KiB, far more than the socket holds: pump never
        // waits, it sends what fits and skips the rest.
        for seq in 1..=200 {
            publisher.publish(seq, line(seq, 64 * 1024));
            publisher.pump();
        }
        assert_eq!(publisher.viewers(), 1);
        assert!(!publisher.drained(), "the socket is full");
        let mut reader = BufReader::new(viewer.try_clone().unwrap());
        let mut first = String::new();
        reader.read_line(&mut first).unwrap();
        assert!(first.contains("\"type\":\"header\""), "{first}");
        let mut seen = Vec::new();
        while seen.last() != Some(&200) {
            publisher.drain(Duration::from_millis(1));
            let mut text = String::new();
            reader.read_line(&mut text).unwrap();
            let value: serde_json::Value = serde_json::from_str(&text).expect("a whole line");
            seen.push(value["seq"].as_u64().unwrap());
        }
        assert!(seen.len() < 200, "latest wins: snapshots were skipped");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        assert!(publisher.drained());
    }

    #[test]
    fn the_end_does_not_wait_for_a_viewer_that_is_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = Listener::bind(&Address::Unix(path.clone())).unwrap();
        let mut publisher = Publisher::new(listener, &ServerLine::header(&[]), None);
        let mut stalled = UnixStream::connect(&path).unwrap();
        stalled.write_all(b"{\"version\":1}\n").unwrap();
        for seq in 1..=50 {
            publisher.publish(seq, line(seq, 64 * 1024));
            publisher.pump();
        }
        std::thread::sleep(BEHIND * 2);
        assert_eq!(publisher.cut_behind(), 0, "the stalled viewer is behind");
        let start = Instant::now();
        publisher.finish(51, line(51, 1024), Duration::from_secs(10));
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_vanished_viewer_is_dropped_without_a_signal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = Listener::bind(&Address::Unix(path.clone())).unwrap();
        let mut publisher = Publisher::new(listener, &ServerLine::header(&[]), None);
        let mut viewer = UnixStream::connect(&path).unwrap();
        viewer.write_all(b"{\"version\":1}\n").unwrap();
        publisher.pump();
        assert_eq!(publisher.viewers(), 1);
        drop(viewer);
        for seq in 1..=3 {
            publisher.publish(seq, line(seq, 1024));
            publisher.pump();
        }
        assert_eq!(publisher.viewers(), 0);
    }

    #[test]
    fn tokens_must_match_exactly() {
        assert!(token_matches(None, None));
        assert!(token_matches(None, Some("x")));
        assert!(token_matches(Some("abc"), Some("abc")));
        assert!(!token_matches(Some("abc"), Some("abd")));
        assert!(!token_matches(Some("abc"), Some("ab")));
        assert!(!token_matches(Some("abc"), Some("abcd")));
        assert!(!token_matches(Some("abc"), None));
    }
}
