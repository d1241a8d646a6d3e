//! Which `Host` and `Origin` headers `emuprof view` answers.
//!
//! A page served on loopback is still reachable from any web site the user
//! visits, through DNS rebinding: `evil.example` resolves to `127.0.0.1`
//! once the page is loaded, and its script reads the profile (command
//! line, source paths, function names) from the same origin. Such requests
//! carry the attacker's name in `Host`. So on a loopback address only
//! requests naming the page by a loopback name are answered: `Host` must be
//! `localhost`, `127.0.0.1`, `[::1]` or the bound address, with the served
//! port when a port is given; a request without `Host` (not a browser) is
//! answered. An `Origin` header, which browsers send on cross-origin API
//! calls, must be `http://` and such a host. Served on another address
//! (`--allow-remote`), the page is open to the network anyway and every
//! host is answered.

use std::net::SocketAddr;

/// The `Host`/`Origin` values the server at one address accepts.
#[derive(Debug, Clone, Copy)]
pub struct Hosts {
    served: SocketAddr,
}

impl Hosts {
    /// The hosts accepted by a page served at `served`.
    pub fn serving(served: SocketAddr) -> Hosts {
        Hosts { served }
    }

    /// Whether a request with these headers (absent: `None`) is answered.
    pub fn accepts(&self, host: Option<&str>, origin: Option<&str>) -> bool {
        if !self.served.ip().is_loopback() {
            return true;
        }
        let host_ok = host.is_none_or(|h| self.names_this_page(h.trim()));
        let origin_ok = origin.is_none_or(|o| {
            o.trim()
                .strip_prefix("http://")
                .is_some_and(|h| self.names_this_page(h))
        });
        host_ok && origin_ok
    }

    /// Whether `host` (`name` or `name:port`) is a loopback name of this page.
    fn names_this_page(&self, host: &str) -> bool {
        let (name, port) = match host.rsplit_once(':') {
            Some((name, port)) if !name.is_empty() && !port.contains(']') => (name, Some(port)),
            _ => (host, None),
        };
        let port_ok = port.is_none_or(|p| p.parse::<u16>().ok() == Some(self.served.port()));
        let ip = self.served.ip();
        let bound = match ip {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        };
        let name = name.to_ascii_lowercase();
        let name_ok = matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]") || name == bound;
        port_ok && name_ok
    }
}

#[cfg(test)]
mod tests {
    use super::Hosts;

    #[test]
    fn only_loopback_names_of_the_served_port_are_answered() {
        let hosts = Hosts::serving("127.0.0.1:8123".parse().expect("address"));
        for good in [
            "127.0.0.1:8123",
            "localhost:8123",
            "LOCALHOST",
            "[::1]:8123",
            "127.0.0.1",
        ] {
            assert!(hosts.accepts(Some(good), None), "{good}");
        }
        assert!(hosts.accepts(None, None), "no Host: not a browser");
        for bad in [
            "evil.example:8123",
            "evil.example",
            "127.0.0.1:80",
            "127.0.0.1.evil.example:8123",
            "localhost:8123@evil",
            "",
        ] {
            assert!(!hosts.accepts(Some(bad), None), "{bad}");
        }
        assert!(hosts.accepts(Some("127.0.0.1:8123"), Some("http://127.0.0.1:8123")));
        assert!(!hosts.accepts(Some("127.0.0.1:8123"), Some("http://evil.example:8123")));
        assert!(!hosts.accepts(Some("127.0.0.1:8123"), Some("null")));
        let remote = Hosts::serving("0.0.0.0:8123".parse().expect("address"));
        assert!(remote.accepts(Some("my-server:8123"), Some("http://my-server:8123")));
    }
}
