//! The interactive jdbcManager of SPEC 4.6 (ratatui): the main menu lists the installed
//! drivers; `a` (ADD) shows the drivers of `jdbcList`, installs the chosen one with a progress
//! bar and confirms in a dialog; `d` (DELETE) removes an installed driver after a
//! confirmation; both as often as the user likes; `q` quits.

use super::drivers::{Entry, InstallError, Installed, delete, install, installed};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Gauge, List, ListItem, ListState, Paragraph};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

enum Screen {
    Main,
    Add(ListState),
    Installing {
        name: String,
        done: u64,
        total: Option<u64>,
        rx: mpsc::Receiver<Progress>,
    },
    Delete(ListState),
    ConfirmDelete(String),
    Message(String),
}

enum Progress {
    Bytes(u64, Option<u64>),
    Done(Result<PathBuf, InstallError>),
}

/// Runs the menu on the terminal until the user quits.
///
/// # Errors
///
/// When the terminal cannot be used.
pub fn run(entries: Vec<Entry>, list_problems: Vec<String>, drivers: &Path) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let result = main_loop(&mut terminal, &entries, &list_problems, drivers);
    ratatui::restore();
    result
}

fn main_loop(
    terminal: &mut ratatui::DefaultTerminal,
    entries: &[Entry],
    problems: &[String],
    drivers: &Path,
) -> std::io::Result<()> {
    let mut screen = Screen::Main;
    loop {
        // Progress of a running install.
        if let Screen::Installing {
            name,
            done,
            total,
            rx,
        } = &mut screen
        {
            let mut finished = None;
            while let Ok(p) = rx.try_recv() {
                match p {
                    Progress::Bytes(d, t) => {
                        *done = d;
                        *total = t;
                    }
                    Progress::Done(r) => finished = Some(r),
                }
            }
            if let Some(r) = finished {
                screen = Screen::Message(match r {
                    Ok(p) => format!("Installed {name} as {}.", p.display()),
                    Err(e) => format!("{name} was not installed: {e}"),
                });
            }
        }
        let installed_now = installed(drivers);
        terminal.draw(|f| draw(f, &mut screen, entries, problems, &installed_now))?;
        if !event::poll(Duration::from_millis(50))? {
            continue;
        }
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        screen = match (screen, key.code) {
            (Screen::Main, KeyCode::Char('q') | KeyCode::Esc) => return Ok(()),
            (Screen::Main, KeyCode::Char('a')) => {
                let mut s = ListState::default();
                s.select((!entries.is_empty()).then_some(0));
                Screen::Add(s)
            }
            (Screen::Main, KeyCode::Char('d')) => {
                let mut s = ListState::default();
                s.select((!installed_now.is_empty()).then_some(0));
                Screen::Delete(s)
            }
            (Screen::Add(mut s), KeyCode::Down) => {
                s.select_next();
                Screen::Add(s)
            }
            (Screen::Add(mut s), KeyCode::Up) => {
                s.select_previous();
                Screen::Add(s)
            }
            (Screen::Add(s), KeyCode::Enter) => match s.selected().and_then(|i| entries.get(i)) {
                Some(entry) => {
                    let (tx, rx) = mpsc::channel();
                    let entry = entry.clone();
                    let name = entry.name.clone();
                    let dir = drivers.to_owned();
                    std::thread::spawn(move || {
                        let progress_tx = tx.clone();
                        let r = install(&entry, &dir, &mut |d, t| {
                            let _ = progress_tx.send(Progress::Bytes(d, t));
                        });
                        let _ = tx.send(Progress::Done(r));
                    });
                    Screen::Installing {
                        name,
                        done: 0,
                        total: None,
                        rx,
                    }
                }
                None => Screen::Add(s),
            },
            (Screen::Delete(mut s), KeyCode::Down) => {
                s.select_next();
                Screen::Delete(s)
            }
            (Screen::Delete(mut s), KeyCode::Up) => {
                s.select_previous();
                Screen::Delete(s)
            }
            (Screen::Delete(s), KeyCode::Enter) => {
                match s.selected().and_then(|i| installed_now.get(i)) {
                    Some(i) => Screen::ConfirmDelete(i.name.clone()),
                    None => Screen::Delete(s),
                }
            }
            (Screen::ConfirmDelete(name), KeyCode::Char('y')) => {
                Screen::Message(match delete(&name, drivers) {
                    Ok(_) => format!("Deleted {name}."),
                    Err(e) => e,
                })
            }
            (Screen::ConfirmDelete(_), KeyCode::Char('n') | KeyCode::Esc) => Screen::Main,
            (Screen::Message(_), KeyCode::Enter | KeyCode::Esc) => Screen::Main,
            (Screen::Add(_) | Screen::Delete(_), KeyCode::Esc) => Screen::Main,
            (s, _) => s,
        };
    }
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

fn draw(
    f: &mut ratatui::Frame<'_>,
    screen: &mut Screen,
    entries: &[Entry],
    problems: &[String],
    installed_now: &[Installed],
) {
    let [body, foot] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(f.area());
    let help = match screen {
        Screen::Main => "[a] ADD   [d] DELETE   [q] quit",
        Screen::Add(_) | Screen::Delete(_) => "[Up/Down] choose   [Enter] select   [Esc] back",
        Screen::Installing { .. } => "installing ...",
        Screen::ConfirmDelete(_) => "[y] delete   [n] keep",
        Screen::Message(_) => "[Enter] OK",
    };
    let mut foot_lines = vec![Line::from(help)];
    if let Some(p) = problems.first() {
        foot_lines.push(Line::from(format!("jdbcList: {p}")));
    }
    f.render_widget(
        Paragraph::new(foot_lines).block(Block::default().borders(Borders::TOP)),
        foot,
    );
    match screen {
        Screen::Add(state) => {
            let items: Vec<ListItem<'_>> = entries
                .iter()
                .map(|e| ListItem::new(format!("{:<22} {}  ({})", e.name, e.description, e.url)))
                .collect();
            let list = List::new(items)
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(" ADD: drivers in jdbcList "),
                )
                .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
                .highlight_symbol("> ");
            f.render_stateful_widget(list, body, state);
        }
        Screen::Delete(state) => {
            let items: Vec<ListItem<'_>> = installed_now
                .iter()
                .map(|i| ListItem::new(i.name.clone()))
                .collect();
            let list = List::new(items)
                .block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(" DELETE: installed drivers "),
                )
                .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
                .highlight_symbol("> ");
            f.render_stateful_widget(list, body, state);
        }
        _ => {
            let lines: Vec<Line<'_>> = if installed_now.is_empty() {
                vec![Line::from("(no driver installed yet: press a to add one)")]
            } else {
                installed_now
                    .iter()
                    .map(|i| Line::from(format!("{:<24} {} bytes", i.name, i.size)))
                    .collect()
            };
            f.render_widget(
                Paragraph::new(lines).block(
                    Block::default()
                        .borders(Borders::ALL)
                        .title(" jdbcManager: installed JDBC drivers "),
                ),
                body,
            );
        }
    }
    match screen {
        Screen::Installing {
            name, done, total, ..
        } => {
            let area = centered(f.area(), 60, 5);
            let ratio = match total {
                Some(t) if *t > 0 => (*done as f64 / *t as f64).min(1.0),
                _ => 0.0,
            };
            f.render_widget(Clear, area);
            f.render_widget(
                Gauge::default()
                    .block(
                        Block::default()
                            .borders(Borders::ALL)
                            .title(format!(" installing {name} ")),
                    )
                    .ratio(ratio)
                    .label(format!("{:.0}% ({done} bytes)", ratio * 100.0)),
                area,
            );
        }
        Screen::ConfirmDelete(name) => {
            let area = centered(f.area(), 50, 5);
            f.render_widget(Clear, area);
            f.render_widget(
                Paragraph::new(format!("Delete {name}?"))
                    .block(Block::default().borders(Borders::ALL).title(" confirm ")),
                area,
            );
        }
        Screen::Message(m) => {
            let area = centered(f.area(), 70, 6);
            f.render_widget(Clear, area);
            f.render_widget(
                Paragraph::new(m.as_str())
                    .wrap(ratatui::widgets::Wrap { trim: true })
                    .block(
                        Block::default()
                            .borders(Borders::ALL)
                            .title(" jdbcManager "),
                    ),
                area,
            );
        }
        _ => {}
    }
}
