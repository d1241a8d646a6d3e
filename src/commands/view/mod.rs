//! `emuprof view PROFILE`: an interactive call graph in the browser, served
//! from emuprof itself (no CDN, no third-party script). `emuprof view ADDR`
//! (a `host:port` or `unix:PATH` that is not a file) draws a run streamed by
//! `emuprof run --serve ADDR` in the terminal instead ([`super::stream`]).
//!
//! The graph is the DOT export laid out by Graphviz `dot` on the server
//! (within `--layout-timeout`; without Graphviz, or when it runs out of
//! time, the same graph laid out in-process by [`write_layered_svg`]); the
//! page (`assets/`, emuprof's own HTML, CSS and JavaScript, compiled into the
//! binary) draws the display tree, the flame graph and the detail pane from
//! [`ViewData`] and [`FunctionCode`].

mod http;
mod origin;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use emuprof_analysis::annotate::calls::LineCalls;
use emuprof_analysis::export::dot::{self, DotOptions};
use emuprof_analysis::export::layered_svg::write_layered_svg;
use emuprof_analysis::export::view::{FunctionCode, ViewData};
use emuprof_analysis::instructions::InstructionCosts;
use emuprof_analysis::{CallGraph, Profile};

use super::annotate::CodeArgs;
use super::graph_budget::{limit, GraphBudget, GraphBudgetArgs};
use super::profile_file;
use super::stream::{Address, Over, Subscription};
use http::{Request, Response};

/// Serve an interactive call graph of a profile on a local web page, or watch a run streamed with --serve.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The profile (written by `emuprof run`), or the address (`host:port`,
    /// `unix:PATH`) of a run streamed with `emuprof run --serve ADDR`, shown
    /// live in the terminal.
    #[arg(value_name = "PROFILE|ADDR")]
    pub profile: PathBuf,
    /// With ADDR: the token the streaming run printed (also
    /// $EMUPROF_STREAM_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// With ADDR: serve the streamed run on the web page (updated while it
    /// runs) instead of drawing it in the terminal.
    #[arg(long)]
    pub web: bool,
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
    /// The call graph's budget.
    #[command(flatten)]
    pub graph: GraphBudgetArgs,
    /// Binary and inline options (source lines and instructions of the detail pane).
    #[command(flatten)]
    pub code: CodeArgs,
    /// Only one thread.
    #[command(flatten)]
    pub part: profile_file::ProfilePart,
}

/// The threshold (percent) the page starts with.
const DEFAULT_THRESHOLD: f64 = 0.5;

/// Serves the page until emuprof is interrupted; with ADDR, views the
/// streamed run in the terminal, or with `--web` serves the page of it.
pub fn run(args: ViewArgs) -> Result<i32> {
    let stream = match args.profile.exists() {
        true => None,
        false => args.profile.to_str().and_then(Address::parse),
    };
    if let (Some(address), false) = (&stream, args.web) {
        return super::stream::view(address, args.token);
    }
    if !args.bind.is_loopback() && !args.allow_remote {
        bail!(
            "--bind {} is not a loopback address; the page has no authentication, \
             add --allow-remote to serve it to the network anyway",
            args.bind
        );
    }
    if let Some(address) = stream {
        let subscription = super::stream::subscribe(&address, args.token.clone())?;
        let page = Page {
            source: Source::Stream(&subscription),
            costs: None,
            graph: args.graph.budget()?,
        };
        return serve_page(&args, &format!("the run streamed at {address}"), &page);
    }
    let profile = profile_file::read_selected(&args.profile, &args.part)?;
    let costs = args.code.optional_costs(&profile)?;
    let graph = CallGraph::new(&profile);
    let page = Page {
        source: Source::File(&graph),
        costs: costs.as_ref(),
        graph: args.graph.budget()?,
    };
    serve_page(&args, &args.profile.display().to_string(), &page)
}

/// Listens where `args` say, prints the URL and serves `page` (`what` it
/// shows) until emuprof is interrupted.
fn serve_page(args: &ViewArgs, what: &str, page: &Page) -> Result<i32> {
    let listener = TcpListener::bind(SocketAddr::new(args.bind, args.port))
        .with_context(|| format!("cannot listen on {}:{}", args.bind, args.port))?;
    let address = listener.local_addr()?;
    let host = match address.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    let url = format!("http://{}/", SocketAddr::new(host, address.port()));
    println!("emuprof: serving {what} at {url} (Ctrl-C stops)");
    if args.open {
        open_browser(&url);
    }
    http::serve(&listener, origin::Hosts::serving(address), |request| {
        page.route(request)
    })?;
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
    source: Source<'p>,
    costs: Option<&'p InstructionCosts>,
    graph: GraphBudget,
}

/// Where the page's profile comes from.
enum Source<'p> {
    /// A profile file: one call graph, made once.
    File(&'p CallGraph<'p>),
    /// A streamed run: the newest snapshot, read at each request.
    Stream(&'p Subscription),
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
            "/api/graph.svg" => self.svg(request),
            "/api/live" => self.live(),
            path => match path.strip_prefix("/api/code/") {
                Some(id) => self.code(id),
                None => Response::error(404, "no such page"),
            },
        }
    }

    /// Answers with `answer` applied to the call graph shown now; 503 while
    /// a stream has sent no snapshot yet.
    fn with_graph(&self, answer: impl FnOnce(&CallGraph) -> Response) -> Response {
        match self.source {
            Source::File(graph) => answer(graph),
            Source::Stream(subscription) => match subscription.latest().moment {
                Some(moment) => answer(&CallGraph::new(&moment.profile)),
                None => Response::error(503, "no snapshot of the run yet"),
            },
        }
    }

    fn data(&self, threshold: f64) -> Response {
        self.with_graph(|graph| json(&ViewData::new(graph, threshold)))
    }

    /// The call graph at the request's `threshold`, drawing at most its
    /// `nodes` nodes (default: `--max-nodes`; 0: no limit).
    fn svg(&self, request: &Request) -> Response {
        let threshold = threshold(request);
        let max_nodes = match request.param("nodes").map(str::parse::<usize>) {
            Some(Ok(nodes)) => limit(nodes),
            Some(Err(_)) => return Response::error(400, "nodes: give a whole number"),
            None => self.graph.max_nodes,
        };
        self.with_graph(|graph| {
            let mut options = DotOptions::default();
            options.prune.threshold_percent = threshold;
            options.prune.max_nodes = max_nodes;
            options.prune.max_edges = self.graph.max_edges;
            let mut dot_text = Vec::new();
            if let Err(err) = dot::write_dot(graph, &options, &mut dot_text) {
                return Response::error(500, &err.to_string());
            }
            // Without Graphviz, or when it runs out of time: emuprof's own
            // simple layout, saying why.
            let svg = super::graphviz::svg(&dot_text, self.graph.layout).or_else(|err| {
                let note = format!("Laid out by emuprof, not Graphviz: {err}");
                let mut svg = Vec::new();
                write_layered_svg(graph, &options, &note, &mut svg).map(|()| svg)
            });
            match svg {
                Ok(svg) => Response::ok("image/svg+xml", svg),
                Err(err) => Response::error(500, &err.to_string()),
            }
        })
    }

    /// Whether the page shows a streamed run, how many snapshots came and
    /// how the run stands (the page reloads its data when the count grows),
    /// and the node budget the page starts with.
    fn live(&self) -> Response {
        let max_nodes = self.graph.max_nodes.unwrap_or(0);
        let Source::Stream(subscription) = self.source else {
            return json(&serde_json::json!({ "live": false, "max_nodes": max_nodes }));
        };
        let latest = subscription.latest();
        let status = match &latest.over {
            None => "running".to_string(),
            Some(Over::Ended(end)) => format!("finished: {}", end.stop),
            Some(Over::Lost(why)) => format!("stopped: {why}"),
        };
        json(&serde_json::json!({
            "live": true,
            "max_nodes": max_nodes,
            "received": latest.received,
            "status": status,
        }))
    }

    fn code(&self, id: &str) -> Response {
        self.with_graph(|graph| self.code_of(graph.profile, id))
    }

    fn code_of(&self, profile: &Profile, id: &str) -> Response {
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
        let calls = LineCalls::new(profile, costs, true);
        json(&FunctionCode::new(costs, &calls, &function.name, &read))
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
