//! Batch schedules: their text form, and when a batch is due, across clock changes.
//!
//! A schedule is one of `daily HH:MM`, `weekly DAYS HH:MM` (days `mon,wed,fri`), `monthly DAY
//! HH:MM` (a day the month lacks means its last day) and `every N minutes`, in the service
//! time zone. Planned starts are kept as wall-clock text ([`Planned`]), so that a day added to
//! one (the procedure of SPEC 4.7) keeps 22:00 at 22:00 across a clock change.
//!
//! Wall-clock schedules meet clock changes in two ways, each with a policy per batch:
//! - a planned time the clocks skip (spring): [`GapPolicy::Next`] runs at the time the clocks
//!   jump to (the default), [`GapPolicy::Skip`] leaves that day out;
//! - a planned time that happens twice (autumn): [`OverlapPolicy::First`] (the default),
//!   `Second`, or `Both` occurrences.
//!
//! `every N minutes` counts real minutes (aligned to multiples of N since 1970-01-01 UTC), so
//! clock changes neither skip nor repeat its starts.
//!
//! The next planned start is computed from the previous planned start, never from when it
//! actually ran (no drift), and passes over starts already missed: after a downtime a batch
//! runs once, late, not once for every missed day.

use crate::sched::clock::{gap_end, wall};
use chrono::{
    DateTime, Datelike, Duration, LocalResult, NaiveDate, NaiveDateTime, NaiveTime, Offset,
    TimeZone, Utc, Weekday,
};
use chrono_tz::Tz;
use std::fmt;

/// How often a batch runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repeat {
    /// Every day at a time.
    Daily(NaiveTime),
    /// On given weekdays at a time.
    Weekly(Vec<Weekday>, NaiveTime),
    /// On a day of the month at a time (the last day when the month is shorter).
    Monthly(u32, NaiveTime),
    /// Every N real minutes.
    Minutes(u32),
}

/// A planned time the clocks skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GapPolicy {
    /// Run at the time the clocks jump to.
    #[default]
    Next,
    /// Leave that start out.
    Skip,
}

/// A planned time that happens twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OverlapPolicy {
    /// Run at its first occurrence.
    #[default]
    First,
    /// Run at its second occurrence.
    Second,
    /// Run at both.
    Both,
}

impl GapPolicy {
    /// `next` or `skip`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "next" => Some(GapPolicy::Next),
            "skip" => Some(GapPolicy::Skip),
            _ => None,
        }
    }

    /// The name in the `.dsr` format.
    pub fn name(self) -> &'static str {
        match self {
            GapPolicy::Next => "next",
            GapPolicy::Skip => "skip",
        }
    }
}

impl OverlapPolicy {
    /// `first`, `second` or `both`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "first" => Some(OverlapPolicy::First),
            "second" => Some(OverlapPolicy::Second),
            "both" => Some(OverlapPolicy::Both),
            _ => None,
        }
    }

    /// The name in the `.dsr` format.
    pub fn name(self) -> &'static str {
        match self {
            OverlapPolicy::First => "first",
            OverlapPolicy::Second => "second",
            OverlapPolicy::Both => "both",
        }
    }
}

/// A schedule with its clock-change policies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    /// How often.
    pub repeat: Repeat,
    /// Spring.
    pub gap: GapPolicy,
    /// Autumn.
    pub overlap: OverlapPolicy,
}

/// A planned start: wall-clock time in the service zone, and whether it means the second
/// occurrence of a time that happens twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Planned {
    /// The wall-clock time.
    pub local: NaiveDateTime,
    /// The second occurrence (only meaningful for an ambiguous `local`).
    pub second: bool,
}

impl Planned {
    /// The first occurrence of `local`.
    pub fn at(local: NaiveDateTime) -> Self {
        Planned {
            local,
            second: false,
        }
    }
}

impl fmt::Display for Planned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&wall(self.local))?;
        if self.second {
            f.write_str(" (second occurrence)")?;
        }
        Ok(())
    }
}

/// A schedule text that could not be read: what is wrong and the byte offset in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The message.
    pub message: String,
    /// Where in the text.
    pub offset: usize,
}

const FORMS: &str =
    "use `daily HH:MM`, `weekly mon,wed HH:MM`, `monthly DAY HH:MM` or `every N minutes`";

/// Reads a schedule text.
///
/// # Errors
///
/// What is wrong, with its offset in `text`.
pub fn parse(text: &str) -> Result<Repeat, ParseError> {
    let words: Vec<(usize, &str)> = text
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
        .collect();
    let err = |offset: usize, message: String| Err(ParseError { message, offset });
    let end = text.trim_end().len();
    let Some(&(at, kind)) = words.first() else {
        return err(0, format!("the schedule is empty; {FORMS}"));
    };
    let time = |i: usize| -> Result<NaiveTime, ParseError> {
        let Some(&(at, w)) = words.get(i) else {
            return Err(ParseError {
                message: format!("a time of day (HH:MM) is missing; {FORMS}"),
                offset: end,
            });
        };
        NaiveTime::parse_from_str(w, "%H:%M").map_err(|_| ParseError {
            message: format!("`{w}` is not a time of day; use HH:MM from 00:00 to 23:59"),
            offset: at,
        })
    };
    let extra = |n: usize| -> Result<(), ParseError> {
        match words.get(n) {
            Some(&(at, w)) => Err(ParseError {
                message: format!("unexpected `{w}` after the schedule; {FORMS}"),
                offset: at,
            }),
            None => Ok(()),
        }
    };
    match kind.to_ascii_lowercase().as_str() {
        "daily" => {
            let t = time(1)?;
            extra(2)?;
            Ok(Repeat::Daily(t))
        }
        "weekly" => {
            let Some(&(dat, days)) = words.get(1) else {
                return err(end, format!("the days are missing; {FORMS}"));
            };
            let mut list = Vec::new();
            for d in days.split(',') {
                let day = match d.to_ascii_lowercase().as_str() {
                    "mon" | "monday" => Weekday::Mon,
                    "tue" | "tuesday" => Weekday::Tue,
                    "wed" | "wednesday" => Weekday::Wed,
                    "thu" | "thursday" => Weekday::Thu,
                    "fri" | "friday" => Weekday::Fri,
                    "sat" | "saturday" => Weekday::Sat,
                    "sun" | "sunday" => Weekday::Sun,
                    _ => {
                        return err(
                            dat,
                            format!(
                                "`{d}` is not a weekday; use mon, tue, wed, thu, fri, sat, sun"
                            ),
                        );
                    }
                };
                if !list.contains(&day) {
                    list.push(day);
                }
            }
            let t = time(2)?;
            extra(3)?;
            Ok(Repeat::Weekly(list, t))
        }
        "monthly" => {
            let Some(&(dat, day)) = words.get(1) else {
                return err(end, format!("the day of the month is missing; {FORMS}"));
            };
            let day = match day.parse::<u32>() {
                Ok(d @ 1..=31) => d,
                _ => return err(dat, format!("`{day}` is not a day of the month (1 to 31)")),
            };
            let t = time(2)?;
            extra(3)?;
            Ok(Repeat::Monthly(day, t))
        }
        "every" => {
            let Some(&(nat, n)) = words.get(1) else {
                return err(end, format!("the number of minutes is missing; {FORMS}"));
            };
            let n = match n.parse::<u32>() {
                Ok(n @ 1..=1440) => n,
                _ => {
                    return err(
                        nat,
                        format!("`{n}` is not a number of minutes from 1 to 1440"),
                    );
                }
            };
            match words.get(2) {
                Some(&(_, "minutes" | "minute" | "min")) => {}
                Some(&(uat, w)) => return err(uat, format!("`{w}` is not `minutes`")),
                None => return err(end, "`minutes` is missing after the number".to_owned()),
            }
            extra(3)?;
            Ok(Repeat::Minutes(n))
        }
        other => err(at, format!("`{other}` is not a schedule; {FORMS}")),
    }
}

impl fmt::Display for Repeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hm = |t: &NaiveTime| t.format("%H:%M").to_string();
        match self {
            Repeat::Daily(t) => write!(f, "daily {}", hm(t)),
            Repeat::Weekly(days, t) => {
                let d: Vec<String> = days
                    .iter()
                    .map(|d| d.to_string().to_ascii_lowercase())
                    .collect();
                write!(f, "weekly {} {}", d.join(","), hm(t))
            }
            Repeat::Monthly(d, t) => write!(f, "monthly {d} {}", hm(t)),
            Repeat::Minutes(n) => write!(f, "every {n} minutes"),
        }
    }
}

fn last_day_of(year: i32, month: u32) -> u32 {
    let (y, m) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    NaiveDate::from_ymd_opt(y, m, 1)
        .and_then(|d| d.pred_opt())
        .map_or(28, |d| d.day())
}

impl Repeat {
    /// The first wall-clock occurrence strictly after `local` (not for `Minutes`).
    fn next_nominal(&self, local: NaiveDateTime) -> Option<NaiveDateTime> {
        let date = local.date();
        match self {
            Repeat::Daily(t) => {
                let today = date.and_time(*t);
                if today > local {
                    Some(today)
                } else {
                    Some(date.succ_opt()?.and_time(*t))
                }
            }
            Repeat::Weekly(days, t) => (0..=7).find_map(|i| {
                let d = date.checked_add_signed(Duration::days(i))?;
                let c = d.and_time(*t);
                (days.contains(&d.weekday()) && c > local).then_some(c)
            }),
            Repeat::Monthly(day, t) => (0..=2).find_map(|i| {
                let m0 = date.month0() + i;
                let (y, m) = (date.year() + (m0 / 12) as i32, m0 % 12 + 1);
                let d = NaiveDate::from_ymd_opt(y, m, (*day).min(last_day_of(y, m)))?;
                let c = d.and_time(*t);
                (c > local).then_some(c)
            }),
            Repeat::Minutes(_) => None,
        }
    }
}

/// How a wall-clock time falls in a zone.
fn resolve(zone: Tz, local: NaiveDateTime) -> LocalResult<DateTime<Utc>> {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) => LocalResult::Single(t.with_timezone(&Utc)),
        LocalResult::Ambiguous(a, b) => {
            LocalResult::Ambiguous(a.with_timezone(&Utc), b.with_timezone(&Utc))
        }
        LocalResult::None => LocalResult::None,
    }
}

/// The longest a search for the next start goes on: more than a century of daily starts.
const MAX_STEPS: usize = 40_000;

impl Schedule {
    /// The instant `p` is due, or `None` when the policy leaves it out (a skipped gap).
    pub fn due(&self, zone: Tz, p: &Planned) -> Option<DateTime<Utc>> {
        match resolve(zone, p.local) {
            LocalResult::Single(t) => Some(t),
            LocalResult::Ambiguous(a, b) => Some(
                if p.second || (self.overlap == OverlapPolicy::Second && !self.is_minutes()) {
                    b
                } else {
                    a
                },
            ),
            LocalResult::None => match self.gap {
                GapPolicy::Skip if !self.is_minutes() => None,
                _ => Some(gap_end(zone, p.local)),
            },
        }
    }

    fn is_minutes(&self) -> bool {
        matches!(self.repeat, Repeat::Minutes(_))
    }

    /// The planned start for an instant of an `every N minutes` schedule.
    fn planned_of(zone: Tz, t: DateTime<Utc>) -> Planned {
        let local = t.with_timezone(&zone).naive_local();
        let second = matches!(resolve(zone, local), LocalResult::Ambiguous(_, b) if b == t);
        Planned { local, second }
    }

    /// The planned starts after `p`, in order, as the policies make them (skipped gaps left
    /// out), starting with the second occurrence of `p` itself where both run.
    fn after(&self, zone: Tz, p: Planned) -> impl Iterator<Item = Planned> + '_ {
        let mut current = p;
        let mut pending_second = !p.second
            && self.overlap == OverlapPolicy::Both
            && matches!(resolve(zone, p.local), LocalResult::Ambiguous(..));
        std::iter::from_fn(move || {
            loop {
                if pending_second {
                    pending_second = false;
                    current = Planned {
                        local: current.local,
                        second: true,
                    };
                    return Some(current);
                }
                let local = self.repeat.next_nominal(current.local)?;
                current = Planned::at(local);
                match resolve(zone, local) {
                    LocalResult::None if self.gap == GapPolicy::Skip => continue,
                    LocalResult::Ambiguous(..) if self.overlap == OverlapPolicy::Both => {
                        pending_second = true;
                    }
                    _ => {}
                }
                return Some(current);
            }
        })
        .take(MAX_STEPS)
    }

    /// The first planned start due after `after`: where a new or changed schedule begins.
    pub fn first_after(&self, zone: Tz, after: DateTime<Utc>) -> Option<Planned> {
        if let Repeat::Minutes(n) = self.repeat {
            let step = i64::from(n) * 60;
            let t = (after.timestamp().div_euclid(step) + 1) * step;
            return Some(Self::planned_of(zone, DateTime::from_timestamp(t, 0)?));
        }
        // From a day before, in wall-clock terms, so that nothing due after `after` is missed
        // whatever the offsets.
        let from = after.with_timezone(&zone).naive_local() - Duration::days(2);
        self.after(zone, Planned::at(from))
            .find(|c| self.due(zone, c).is_some_and(|d| d > after))
    }

    /// The planned start that follows `p` and is due after `now`: the starts missed meanwhile
    /// are passed over. `None` only for a schedule that never comes again.
    pub fn next(&self, zone: Tz, p: &Planned, now: DateTime<Utc>) -> Option<Planned> {
        if let Repeat::Minutes(n) = self.repeat {
            let step = i64::from(n) * 60;
            let base = self.due(zone, p)?.timestamp();
            let mut t = base.checked_add(step)?;
            if t <= now.timestamp() {
                let behind = (now.timestamp() - t) / step + 1;
                t = t.checked_add(behind.checked_mul(step)?)?;
            }
            return match DateTime::from_timestamp(t, 0) {
                Some(t) => Some(Self::planned_of(zone, t)),
                // Beyond what dates can hold: start afresh from now.
                None => self.first_after(zone, now),
            };
        }
        // Far behind (a start_dt set by hand to a long-gone day): go on from two days before
        // now, in wall-clock terms, rather than step through every missed day.
        let recent = now.with_timezone(&zone).naive_local() - Duration::days(2);
        let from = if p.local < recent {
            Planned::at(recent)
        } else {
            *p
        };
        self.after(zone, from)
            .find(|c| self.due(zone, c).is_some_and(|d| d > now))
    }

    /// The next `count` planned starts from `p` (itself first), each with its instant and a
    /// note when a clock change touches it.
    pub fn upcoming(&self, zone: Tz, p: &Planned, count: usize) -> Vec<Upcoming> {
        let mut out = Vec::new();
        let mut current = Some(*p);
        while let Some(c) = current {
            if out.len() >= count {
                break;
            }
            if let Some(due) = self.due(zone, &c) {
                out.push(Upcoming {
                    planned: c,
                    due,
                    offset_seconds: zone
                        .offset_from_utc_datetime(&due.naive_utc())
                        .fix()
                        .local_minus_utc(),
                    clock_change: self.clock_change_note(zone, &c, due),
                });
            }
            current = self.next(
                zone,
                &c,
                self.due(zone, &c).unwrap_or(DateTime::<Utc>::MIN_UTC),
            );
        }
        out
    }

    fn clock_change_note(&self, zone: Tz, p: &Planned, due: DateTime<Utc>) -> Option<String> {
        match resolve(zone, p.local) {
            LocalResult::None => Some(format!(
                "{} does not exist (the clocks jump forward); runs at {} (springGap {})",
                wall(p.local),
                wall(due.with_timezone(&zone).naive_local()),
                self.gap.name()
            )),
            LocalResult::Ambiguous(..) => Some(format!(
                "{} happens twice (the clocks go back); this is its {} occurrence (autumnOverlap {})",
                wall(p.local),
                if p.second || self.overlap == OverlapPolicy::Second {
                    "second"
                } else {
                    "first"
                },
                self.overlap.name()
            )),
            LocalResult::Single(_) => {
                let before = zone
                    .offset_from_utc_datetime(&(due - Duration::hours(24)).naive_utc())
                    .fix();
                let now = zone.offset_from_utc_datetime(&due.naive_utc()).fix();
                (before != now).then(|| {
                    format!(
                        "the clocks changed in the 24 hours before: UTC{} became UTC{}",
                        before, now
                    )
                })
            }
        }
    }
}

/// One entry of [`Schedule::upcoming`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upcoming {
    /// The planned start.
    pub planned: Planned,
    /// When it runs.
    pub due: DateTime<Utc>,
    /// The zone's offset from UTC then, in seconds.
    pub offset_seconds: i32,
    /// What a clock change does to it, if anything.
    pub clock_change: Option<String>,
}

#[cfg(test)]
mod tests;
