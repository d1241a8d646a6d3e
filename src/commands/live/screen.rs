//! The live view's terminal: drawing (ratatui on `/dev/tty`) and keys.
//!
//! Keys: `s` sort by self, `i` by inclusive, `c` by calls; `/` starts a
//! filter (type, Enter keeps it, Esc clears it); `f` freezes and unfreezes
//! the display; `t` switches between the function table and the Kaes display
//! tree, where ↑/↓ (PgUp/PgDn) select a row, → or `+` opens it, ← or `-`
//! closes it (or goes to its parent), `E` opens every row and `C` closes all
//! but the root; `q` or Ctrl-C quits (stopping the run under `--live`; the
//! profile is still written).

use std::fs::File;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use emuprof_analysis::report::format::grouped;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::crossterm::ExecutableCommand;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, List, Paragraph, Row as TableRow, Table, TableState};
use ratatui::Terminal;

use super::table::{LiveTable, Row};
use super::tree::{TreeKey, TreeState};

/// Whether the guest still runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The guest is running.
    Running,
    /// The run is over; the view waits for a key.
    Finished,
    /// The stream broke off (why); the view waits for a key.
    Lost(String),
}

/// What the left pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pane {
    Functions,
    Tree,
}

/// What a key asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// No key, or one the view handled itself.
    None,
    /// `q` or Ctrl-C, or the terminal went away.
    Quit,
    /// Enter, Esc or space (end the view once the run is over).
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortBy {
    SelfCost,
    Inclusive,
    Calls,
}

/// The terminal and the view's settings.
pub struct Screen {
    terminal: Terminal<CrosstermBackend<File>>,
    title: String,
    note: String,
    pane: Pane,
    tree: TreeState,
    sort: SortBy,
    filter: String,
    editing_filter: bool,
    frozen: Option<LiveTable>,
    started: Instant,
}

impl Screen {
    /// Takes over the terminal (raw mode, alternate screen on `/dev/tty`).
    /// `title` starts the header line; `note` ends the help line (where the
    /// program's output goes).
    pub fn open(title: String, note: String) -> Result<Screen> {
        let mut tty = File::options()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .context("cannot open /dev/tty for the live view")?;
        terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        tty.execute(EnterAlternateScreen)?;
        let terminal = Terminal::new(CrosstermBackend::new(tty))?;
        Ok(Screen {
            terminal,
            title,
            note,
            pane: Pane::Functions,
            tree: TreeState::default(),
            sort: SortBy::SelfCost,
            filter: String::new(),
            editing_filter: false,
            frozen: None,
            started: Instant::now(),
        })
    }

    /// Gives the terminal back.
    pub fn close(mut self) -> Result<()> {
        self.terminal.backend_mut().execute(LeaveAlternateScreen)?;
        terminal::disable_raw_mode()?;
        self.terminal.show_cursor()?;
        Ok(())
    }

    /// Draws `table` (or the frozen one) and waits up to `wait` for a key.
    pub fn frame(&mut self, table: &LiveTable, status: &Status, wait: Duration) -> Result<Key> {
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-3);
        let shown = self.frozen.clone().unwrap_or_else(|| table.clone());
        let header = format!(
            "{} │ {} instructions │ {:.1} M/s │ {}{} │ sort: {} │ filter: {}{}",
            self.title,
            grouped(shown.instructions),
            table.instructions as f64 / 1e6 / elapsed,
            match status {
                Status::Running => "running".to_string(),
                Status::Finished => "finished".to_string(),
                Status::Lost(why) => format!("stopped: {why}"),
            },
            if self.frozen.is_some() {
                " (frozen)"
            } else {
                ""
            },
            match self.sort {
                SortBy::SelfCost => "self",
                SortBy::Inclusive => "inclusive",
                SortBy::Calls => "calls",
            },
            self.filter,
            if self.editing_filter { "▏" } else { "" },
        );
        let keys = match self.pane {
            Pane::Functions => "s/i/c sort · / filter · f freeze · t tree · q quit",
            Pane::Tree => {
                "↑↓ select · →/+ open · ←/- close · E/C open/close all · t table · q quit"
            }
        };
        let help = match status {
            Status::Running => format!("{keys} │ {}", self.note),
            Status::Finished | Status::Lost(_) => {
                format!("q, Enter, Esc or space leaves · {keys} │ {}", self.note)
            }
        };
        let rows = self.sorted_rows(&shown);
        let total = shown.instructions.max(1);
        self.terminal.draw(|f| {
            let [top, body, bottom] = Layout::vertical([
                Constraint::Length(1),
                Constraint::Min(3),
                Constraint::Length(1),
            ])
            .areas(f.area());
            let [left, right] =
                Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
                    .areas(body);
            let [stack_area, hot_area] =
                Layout::vertical([Constraint::Percentage(65), Constraint::Percentage(35)])
                    .areas(right);
            f.render_widget(Paragraph::new(header), top);
            let percent = |n: u64| format!("{:.1}%", 100.0 * n as f64 / total as f64);
            let table_rows = rows.iter().map(|r| {
                TableRow::new(vec![
                    grouped(r.self_instructions),
                    percent(r.self_instructions),
                    grouped(r.inclusive_instructions),
                    percent(r.inclusive_instructions),
                    grouped(r.calls),
                    r.name.clone(),
                ])
            });
            let widths = [
                Constraint::Length(14),
                Constraint::Length(6),
                Constraint::Length(14),
                Constraint::Length(6),
                Constraint::Length(10),
                Constraint::Min(10),
            ];
            let functions = Table::new(table_rows, widths)
                .header(
                    TableRow::new(vec!["self", "%", "inclusive", "%", "calls", "function"])
                        .style(Style::default().add_modifier(Modifier::BOLD)),
                )
                .block(Block::default().borders(Borders::ALL).title(" Functions "));
            match self.pane {
                Pane::Functions => f.render_widget(functions, left),
                Pane::Tree => render_tree(&self.tree, &shown, total, f, left),
            }
            let stack = List::new(shown.stack_lines().into_iter().map(Line::from)).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Call stack of each thread (innermost first) "),
            );
            f.render_widget(stack, stack_area);
            let hot = List::new(shown.hot_path.iter().enumerate().map(|(depth, (n, cost))| {
                Line::from(format!(
                    "{}{n} {}",
                    " ".repeat(depth.min(40)),
                    percent(*cost)
                ))
            }))
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Hottest path "),
            );
            f.render_widget(hot, hot_area);
            f.render_widget(Paragraph::new(help), bottom);
        })?;
        self.read_key(table, wait)
    }

    /// Whether the key was one of the display tree's (then it is handled).
    fn tree_key(&mut self, code: KeyCode, table: &LiveTable) -> bool {
        let key = match code {
            KeyCode::Up | KeyCode::Char('k') => TreeKey::Up,
            KeyCode::Down | KeyCode::Char('j') => TreeKey::Down,
            KeyCode::PageUp => TreeKey::Page(-20),
            KeyCode::PageDown => TreeKey::Page(20),
            KeyCode::Right | KeyCode::Char('+') | KeyCode::Char('l') => TreeKey::Open,
            KeyCode::Left | KeyCode::Char('-') | KeyCode::Char('h') => TreeKey::Close,
            KeyCode::Char('E') => TreeKey::OpenAll,
            KeyCode::Char('C') => TreeKey::CloseAll,
            _ => return false,
        };
        let shown = self.frozen.as_ref().unwrap_or(table);
        self.tree.apply(key, shown.tree());
        true
    }

    fn sorted_rows(&self, table: &LiveTable) -> Vec<Row> {
        let filter = self.filter.to_lowercase();
        let mut rows: Vec<Row> = table
            .rows
            .iter()
            .filter(|r| filter.is_empty() || r.name.to_lowercase().contains(&filter))
            .cloned()
            .collect();
        let key = |r: &Row| match self.sort {
            SortBy::SelfCost => r.self_instructions,
            SortBy::Inclusive => r.inclusive_instructions,
            SortBy::Calls => r.calls,
        };
        rows.sort_by(|a, b| key(b).cmp(&key(a)).then_with(|| a.name.cmp(&b.name)));
        rows
    }

    fn read_key(&mut self, table: &LiveTable, wait: Duration) -> Result<Key> {
        match wait_for_key(wait)? {
            Input::None => return Ok(Key::None),
            Input::HungUp => {
                // Reading it would return end of file at once, for ever
                // (crossterm would read in a loop): leave as on `q` (the run
                // stops and its profile is written), at the refresh pace
                // until the run is over.
                std::thread::sleep(wait);
                return Ok(Key::Quit);
            }
            Input::Ready => {}
        }
        let Event::Key(key) = event::read()? else {
            return Ok(Key::None);
        };
        if key.kind != KeyEventKind::Press {
            return Ok(Key::None);
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Ok(Key::Quit);
        }
        if self.editing_filter {
            match key.code {
                KeyCode::Enter => self.editing_filter = false,
                KeyCode::Esc => {
                    self.editing_filter = false;
                    self.filter.clear();
                }
                KeyCode::Backspace => {
                    self.filter.pop();
                }
                KeyCode::Char(c) => self.filter.push(c),
                _ => {}
            }
            return Ok(Key::None);
        }
        if self.pane == Pane::Tree && self.tree_key(key.code, table) {
            return Ok(Key::None);
        }
        match key.code {
            KeyCode::Char('q') => return Ok(Key::Quit),
            KeyCode::Char('t') => {
                self.pane = match self.pane {
                    Pane::Functions => Pane::Tree,
                    Pane::Tree => Pane::Functions,
                }
            }
            KeyCode::Char('s') => self.sort = SortBy::SelfCost,
            KeyCode::Char('i') => self.sort = SortBy::Inclusive,
            KeyCode::Char('c') => self.sort = SortBy::Calls,
            KeyCode::Char('/') => self.editing_filter = true,
            KeyCode::Char('f') => {
                self.frozen = match self.frozen {
                    Some(_) => None,
                    None => Some(table.clone()),
                }
            }
            KeyCode::Enter | KeyCode::Esc | KeyCode::Char(' ') => return Ok(Key::Other),
            _ => {}
        }
        Ok(Key::None)
    }
}

/// Draws the display tree with the selected row highlighted.
fn render_tree(
    state: &TreeState,
    table: &LiveTable,
    total: u64,
    f: &mut ratatui::Frame,
    area: ratatui::layout::Rect,
) {
    let visible = state.visible(table.tree());
    let rows = visible.iter().map(|(line, marker)| {
        TableRow::new(vec![
            grouped(line.inclusive_instructions),
            format!(
                "{:.1}%",
                100.0 * line.inclusive_instructions as f64 / total as f64
            ),
            grouped(line.calls),
            format!(
                "{}{marker} {}",
                "  ".repeat((line.depth as usize).min(30)),
                line.name
            ),
        ])
    });
    let widths = [
        Constraint::Length(14),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Min(10),
    ];
    let tree = Table::new(rows, widths)
        .header(
            TableRow::new(vec!["inclusive", "%", "calls", "function"])
                .style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" Display tree (each function once; → link, ↻ recursion) "),
        );
    let selected = state.selected.min(visible.len().saturating_sub(1));
    let mut table_state = TableState::default().with_selected(Some(selected));
    f.render_stateful_widget(tree, area, &mut table_state);
}

/// What the terminal on stdin has for the view.
enum Input {
    /// Nothing within the wait.
    None,
    /// Bytes to read.
    Ready,
    /// It went away (its window closed, `tmux kill-server`, a dropped SSH
    /// link): `poll` says so with `POLLHUP`.
    HungUp,
}

/// Waits up to `wait` for a key crossterm can read at once, or for the
/// terminal to go away.
///
/// Keys crossterm has already read come first, without waiting: keys typed
/// fast or pasted arrive in one `read`, crossterm keeps all but the first
/// for later, and stdin has nothing more to say about them. A hung-up
/// terminal is looked for before crossterm is asked (it would read the end
/// of file in a loop).
fn wait_for_key(wait: Duration) -> Result<Input> {
    for wait in [Duration::ZERO, wait] {
        match wait_for_input(wait) {
            Input::HungUp => return Ok(Input::HungUp),
            Input::None if !wait.is_zero() => return Ok(Input::None),
            Input::None | Input::Ready => {}
        }
        if event::poll(Duration::ZERO)? {
            return Ok(Input::Ready);
        }
    }
    Ok(Input::None)
}

/// Waits up to `wait` for the terminal on stdin to have input or to go
/// away.
fn wait_for_input(wait: Duration) -> Input {
    let mut stdin = libc::pollfd {
        fd: libc::STDIN_FILENO,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: one valid pollfd, counted as one.
    let ready = unsafe { libc::poll(&raw mut stdin, 1, ms) };
    if ready <= 0 {
        // Nothing, or a signal (the caller looks again at the next refresh).
        Input::None
    } else if stdin.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Input::HungUp
    } else {
        Input::Ready
    }
}
