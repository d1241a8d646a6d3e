//! How much of a call graph `export` (DOT, SVG) and `view` draw, and how
//! long Graphviz `dot` may take to lay it out: the options both share.

use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use emuprof_analysis::prune::{DEFAULT_MAX_EDGES, DEFAULT_MAX_NODES};

/// The call graph's node and edge budget and `dot`'s time limit.
#[derive(Debug, Clone, Args)]
pub struct GraphBudgetArgs {
    /// Draw at most N nodes in the call graph: functions hottest paths
    /// first, the code left out below each drawn function as one "other"
    /// node (0: no limit; the view's page can change it).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_NODES)]
    pub max_nodes: usize,
    /// Draw at most N edges, keeping the one that brings each drawn function
    /// in (0: no limit).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_EDGES)]
    pub max_edges: usize,
    /// Seconds Graphviz `dot` may take to lay out the graph before it is
    /// stopped (`export` then fails; `view` lays the graph out itself).
    #[arg(long, value_name = "SECONDS", default_value_t = super::graphviz::DEFAULT_TIME_LIMIT.as_secs_f64())]
    pub layout_timeout: f64,
}

/// [`GraphBudgetArgs`] checked: `None` is no limit.
#[derive(Debug, Clone, Copy)]
pub struct GraphBudget {
    pub max_nodes: Option<usize>,
    pub max_edges: Option<usize>,
    pub layout: Duration,
}

impl GraphBudgetArgs {
    /// The budget; refuses a layout time that is not a positive number of
    /// seconds.
    pub fn budget(&self) -> Result<GraphBudget> {
        let layout = Duration::try_from_secs_f64(self.layout_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .with_context(|| {
                format!(
                    "--layout-timeout {}: give a positive number of seconds",
                    self.layout_timeout
                )
            })?;
        Ok(GraphBudget {
            max_nodes: limit(self.max_nodes),
            max_edges: limit(self.max_edges),
            layout,
        })
    }
}

/// A budget option: 0 is no limit.
pub fn limit(count: usize) -> Option<usize> {
    (count > 0).then_some(count)
}
