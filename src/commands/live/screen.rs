//! The live view's terminal: drawing (ratatui on `/dev/tty`) and keys.
//!
//! Keys: `s` sort by self, `i` by inclusive, `c` by calls; `/` starts a
//! filter (type, Enter keeps it, Esc clears it); `f` freezes and unfreezes
//! the display; `q` or Ctrl-C stops the run (the profile is still written).

use std::fs::File;
use std::path::Path;
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
use ratatui::widgets::{Block, Borders, List, Paragraph, Row as TableRow, Table};
use ratatui::Terminal;

use super::table::{LiveTable, Row};

/// Whether the guest still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The guest is running.
    Running,
    /// The run is over; the view waits for a key.
    Finished,
}

/// What a key asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// No key, or one the view handled itself.
    None,
    /// `q` or Ctrl-C.
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
    program: String,
    guest_output: String,
    sort: SortBy,
    filter: String,
    editing_filter: bool,
    frozen: Option<LiveTable>,
    started: Instant,
}

impl Screen {
    /// Takes over the terminal (raw mode, alternate screen on `/dev/tty`).
    pub fn open(program: &Path, guest_output: &Path) -> Result<Screen> {
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
            program: program.display().to_string(),
            guest_output: guest_output.display().to_string(),
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
    pub fn frame(&mut self, table: &LiveTable, status: Status, wait: Duration) -> Result<Key> {
        let elapsed = self.started.elapsed().as_secs_f64().max(1e-3);
        let shown = self.frozen.clone().unwrap_or_else(|| table.clone());
        let header = format!(
            "emuprof --live {} │ {} instructions │ {:.1} M/s │ {}{} │ sort: {} │ filter: {}{}",
            self.program,
            grouped(shown.instructions),
            table.instructions as f64 / 1e6 / elapsed,
            match status {
                Status::Running => "running",
                Status::Finished => "finished",
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
        let help = match status {
            Status::Running => format!(
                "s/i/c sort · / filter · f freeze · q quit │ program output → {}",
                self.guest_output
            ),
            Status::Finished => format!(
                "run finished — q, Enter, Esc or space leaves │ program output in {}",
                self.guest_output
            ),
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
                Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)])
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
            f.render_widget(functions, left);
            let stack = List::new(shown.stack.iter().map(|n| Line::from(n.as_str()))).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title(" Call stack (innermost first) "),
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
        if !event::poll(wait)? {
            return Ok(Key::None);
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
        match key.code {
            KeyCode::Char('q') => return Ok(Key::Quit),
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
