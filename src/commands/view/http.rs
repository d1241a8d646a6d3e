//! A minimal HTTP/1.1 server for `emuprof view`: GET only, one request per
//! connection, bounded request heads and read timeouts. Responses come from a
//! fixed routing function, never from the file system, so no path can reach
//! outside what the page serves. A request whose `Host` or `Origin` names
//! another site gets 403 (see `origin`).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::origin::Hosts;

/// The longest request head (request line and headers) accepted.
const MAX_HEAD_BYTES: u64 = 16 * 1024;
/// How long a client may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections handled at once; more wait in the listen queue.
const MAX_CONNECTIONS: usize = 16;

/// A response: status, content type and body.
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Content-Type header.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl Response {
    /// A 200 response.
    pub fn ok(content_type: &'static str, body: Vec<u8>) -> Response {
        Response {
            status: 200,
            content_type,
            body,
        }
    }

    /// An error response with a plain-text message.
    pub fn error(status: u16, message: &str) -> Response {
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{message}\n").into_bytes(),
        }
    }
}

/// A parsed request target: path and query string.
pub struct Request<'a> {
    /// The path, e.g. `/api/data`.
    pub path: &'a str,
    /// The query string without `?`, possibly empty.
    pub query: &'a str,
}

impl Request<'_> {
    /// The value of query parameter `key`, if present.
    pub fn param(&self, key: &str) -> Option<&str> {
        self.query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }
}

/// Accepts connections forever, answering each with `route` on its own thread
/// (at most [`MAX_CONNECTIONS`] at once).
pub fn serve<F>(listener: &TcpListener, hosts: Hosts, route: F) -> io::Result<()>
where
    F: Fn(&Request) -> Response + Sync,
{
    let active = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            while active.load(Ordering::Acquire) >= MAX_CONNECTIONS {
                std::thread::sleep(Duration::from_millis(5));
            }
            active.fetch_add(1, Ordering::AcqRel);
            let (route, active) = (&route, &active);
            scope.spawn(move || {
                // A client that goes away mid-request is not our problem.
                let _ = handle(stream, hosts, route);
                active.fetch_sub(1, Ordering::AcqRel);
            });
        }
    });
    Ok(())
}

fn handle<F>(stream: TcpStream, hosts: Hosts, route: &F) -> io::Result<()>
where
    F: Fn(&Request) -> Response,
{
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut reader = BufReader::new((&stream).take(MAX_HEAD_BYTES));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    // Read the rest of the head; an unterminated head is too long or cut off.
    let mut complete = false;
    let mut line = String::new();
    let (mut host, mut origin) = (None, None);
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        if line == "\r\n" || line == "\n" {
            complete = true;
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = Some(value.trim().to_string());
            if name.eq_ignore_ascii_case("host") {
                host = value;
            } else if name.eq_ignore_ascii_case("origin") {
                origin = value;
            }
        }
    }
    let response = match parse_request_line(&request_line) {
        _ if !complete => Response::error(431, "request head too large or incomplete"),
        _ if !hosts.accepts(host.as_deref(), origin.as_deref()) => Response::error(
            403,
            "this page answers only requests for its own loopback address; open the URL \
             emuprof view printed",
        ),
        Some(("GET", request)) => route(&request),
        Some(_) => Response::error(405, "only GET is served"),
        None => Response::error(400, "bad request"),
    };
    write_response(&stream, &response)
}

fn parse_request_line(line: &str) -> Option<(&str, Request<'_>)> {
    let mut parts = line.trim_end().split(' ');
    let method = parts.next()?;
    let target = parts.next()?;
    let version = parts.next()?;
    if !version.starts_with("HTTP/1.") || parts.next().is_some() || !target.starts_with('/') {
        return None;
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    Some((method, Request { path, query }))
}

fn write_response(mut stream: &TcpStream, response: &Response) -> io::Result<()> {
    let reason = match response.status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    };
    write!(
        stream,
        "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        response.status,
        response.content_type,
        response.body.len()
    )?;
    stream.write_all(&response.body)?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_parse_into_path_and_query() {
        let (method, request) = parse_request_line("GET /api/data?threshold=2.5 HTTP/1.1\r\n")
            .expect("valid request line");
        assert_eq!(method, "GET");
        assert_eq!(request.path, "/api/data");
        assert_eq!(request.param("threshold"), Some("2.5"));
        assert!(parse_request_line("GET http://x/ HTTP/1.1").is_none());
        assert!(parse_request_line("garbage").is_none());
    }
}
