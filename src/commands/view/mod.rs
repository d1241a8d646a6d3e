//! `emuprof view PROFILE`: an interactive call graph in the browser, served
//! from emuprof itself (no CDN, no third-party script).
//!
//! The graph is the DOT export laid out by Graphviz `dot` on the server; the
//! page (`assets/`, emuprof's own HTML, CSS and JavaScript, compiled into the
//! binary) draws the display tree, the flame graph and the detail pane from
//! [`ViewData`] and [`FunctionCode`].

mod http;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use emuprof_analysis::export::dot::{self, DotOptions};
use emuprof_analysis::export::view::{FunctionCode, ViewData};
use emuprof_analysis::instructions::InstructionCosts;
use emuprof_analysis::{CallGraph, Profile};

use super::annotate::CodeArgs;
use super::profile_file;
use http::{Request, Response};

/// Serve an interactive call graph of a profile on a local web page.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The profile (written by `emuprof run`).
    pub profile: PathBuf,
    /// TCP port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Address to listen on. Anything but loopback exposes the profile to the
    /// network without authentication and needs --allow-remote.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// Allow a --bind address that is not loopback.
    #[arg(long)]
    pub allow_remote: bool,
    /// Open the page in the default browser (xdg-open).
    #[arg(long)]
    pub open: bool,
    /// Binary and inline options (source lines and instructions of the detail pane).
    #[command(flatten)]
    pub code: CodeArgs,
    /// Only one thread.
    #[command(flatten)]
    pub thread: profile_file::ThreadArg,
}

/// The threshold (percent) the page starts with.
const DEFAULT_THRESHOLD: f64 = 0.5;

/// Serves the page until emuprof is interrupted.
pub fn run(args: ViewArgs) -> Result<i32> {
    if !args.bind.is_loopback() && !args.allow_remote {
        bail!(
            "--bind {} is not a loopback address; the page has no authentication, \
             add --allow-remote to serve it to the network anyway",
            args.bind
        );
    }
    let profile = profile_file::read_thread(&args.profile, &args.thread)?;
    let costs = args.code.optional_costs(&profile)?;
    let listener = TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .with_context(|| format!("cannot listen on {}:{}", args.bind, args.port))?;
    let address = listener.local_addr()?;
    let host = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    let url = format!("http://{}/", SocketAddr::new(host, address.port()));
    println!(
        "emuprof: serving {} at {url} (Ctrl-C stops)",
        args.profile.display()
    );
    if args.open {
        open_browser(&url);
    }
    let graph = CallGraph::new(&profile);
    let page = Page {
        graph: &graph,
        costs: costs.as_ref(),
    };
    http::serve(&listener, |request| page.route(request))?;
    Ok(0)
}

/// Asks the desktop to open `url`; a failure is a note, the server keeps running.
fn open_browser(url: &str) {
    if let Err(err) = std::process::Command::new("xdg-open").arg(url).spawn() {
        eprintln!("emuprof: note: cannot run xdg-open ({err}); open {url} yourself");
    }
}

/// What the page's requests are answered from.
struct Page<'p> {
    graph: &'p CallGraph<'p>,
    costs: Option<&'p InstructionCosts>,
}

impl Page<'_> {
    fn route(&self, request: &Request) -> Response {
        match request.path {
            "/" | "/index.html" => asset(
                "text/html; charset=utf-8",
                include_str!("assets/index.html"),
            ),
            "/view.css" => asset("text/css; charset=utf-8", include_str!("assets/view.css")),
            "/view.js" => asset(
                "text/javascript; charset=utf-8",
                include_str!("assets/view.js"),
            ),
            "/api/data" => self.data(threshold(request)),
            "/api/graph.svg" => self.svg(threshold(request)),
            path => match path.strip_prefix("/api/code/") {
                Some(id) => self.code(id),
                None => Response::error(404, "no such page"),
            },
        }
    }

    fn data(&self, threshold: f64) -> Response {
        json(&ViewData::new(self.graph, threshold))
    }

    fn svg(&self, threshold: f64) -> Response {
        let mut options = DotOptions::default();
        options.prune.threshold_percent = threshold;
        let mut dot_text = Vec::new();
        let svg = dot::write_dot(self.graph, &options, &mut dot_text)
            .map_err(anyhow::Error::from)
            .and_then(|()| super::graphviz::svg(&dot_text));
        match svg {
            Ok(svg) => Response::ok("image/svg+xml", svg),
            Err(err) => Response::error(500, &err.to_string()),
        }
    }

    fn code(&self, id: &str) -> Response {
        let profile: &Profile = self.graph.profile;
        let Some(function) = id
            .parse::<usize>()
            .ok()
            .and_then(|i| profile.functions.get(i))
        else {
            return Response::error(404, "no such function");
        };
        let Some(costs) = self.costs else {
            return Response::error(
                404,
                "the profiled binary was not found; start emuprof view with --binary PATH \
                 for source lines and instructions",
            );
        };
        let read = |path: &str| std::fs::read_to_string(Path::new(path)).ok();
        json(&FunctionCode::new(costs, &function.name, &read))
    }
}

/// The `threshold` query parameter, clamped to 0..=100.
fn threshold(request: &Request) -> f64 {
    request
        .param("threshold")
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|t| t.is_finite())
        .map_or(DEFAULT_THRESHOLD, |t| t.clamp(0.0, 100.0))
}

fn asset(content_type: &'static str, text: &'static str) -> Response {
    Response::ok(content_type, text.as_bytes().to_vec())
}

fn json<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => Response::ok("application/json", body),
        Err(err) => Response::error(500, &err.to_string()),
    }
}
