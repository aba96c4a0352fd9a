//! The service clock and the service time zone, and the SQL functions that read them.
//!
//! One clock drives the scheduler and the SQL functions `current_local_timestamp()` and
//! `is_dst_change_tonight()` (registered on SQLite connections by `connect::sqlite`), so that clock changes are tested on fixed instants: the
//! server installs it once ([`install`]); `weft serve --fake-now` starts it at a chosen
//! instant, from which it runs forward at normal speed, and `--stepped-clock` makes it stand
//! still until the development command `AdvanceClock` moves it.
//!
//! The service time zone is the setting `timezone`, else `TZ` (read here: the
//! iana-time-zone crate ignores it on Linux), else the system's `/etc/localtime`, else UTC.
//! Wall-clock text is `YYYY-MM-DD HH:MM:SS` in that zone; an ambiguous wall-clock time (the
//! autumn hour that happens twice) means its first occurrence.

use chrono::{DateTime, Duration, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

/// Wall-clock text: `YYYY-MM-DD HH:MM:SS`.
pub const WALL: &str = "%Y-%m-%d %H:%M:%S";

/// The clock: the system's, one started at a given instant that runs at normal speed, or a
/// stepped one that stands still until it is moved ([`ServiceClock::advance`]).
#[derive(Debug, Clone)]
pub struct ServiceClock {
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    System,
    Running(DateTime<Utc>, Instant),
    Stepped(Arc<Mutex<DateTime<Utc>>>),
}

impl ServiceClock {
    /// The system clock.
    pub fn system() -> Self {
        ServiceClock { kind: Kind::System }
    }

    /// A clock that reads `start` now and runs forward from there.
    pub fn starting_at(start: DateTime<Utc>) -> Self {
        ServiceClock {
            kind: Kind::Running(start, Instant::now()),
        }
    }

    /// A clock that reads `start` until [`advance`](Self::advance) moves it: tests decide
    /// every instant the scheduler and the SQL functions see.
    pub fn stepped_at(start: DateTime<Utc>) -> Self {
        ServiceClock {
            kind: Kind::Stepped(Arc::new(Mutex::new(start))),
        }
    }

    /// Whether this clock was started at a chosen instant.
    pub fn is_fake(&self) -> bool {
        !matches!(self.kind, Kind::System)
    }

    /// Whether this clock moves only when told.
    pub fn is_stepped(&self) -> bool {
        matches!(self.kind, Kind::Stepped(_))
    }

    /// Now.
    pub fn now(&self) -> DateTime<Utc> {
        match &self.kind {
            Kind::System => Utc::now(),
            Kind::Running(start, at) => {
                *start + Duration::from_std(at.elapsed()).unwrap_or_else(|_| Duration::zero())
            }
            Kind::Stepped(now) => *now
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        }
    }

    /// Moves a stepped clock to `to` and returns the new now.
    ///
    /// # Errors
    ///
    /// When this clock is not stepped, or `to` is before its now (it only moves forward, as
    /// the scheduler assumes of the service clock).
    pub fn advance(&self, to: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
        let Kind::Stepped(now) = &self.kind else {
            return Err(
                "the service clock moves only when the server was started with --stepped-clock"
                    .to_owned(),
            );
        };
        let mut now = now
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if to < *now {
            return Err(format!(
                "the clock moves forward only: {} is before its now, {}",
                to.to_rfc3339(),
                now.to_rfc3339()
            ));
        }
        *now = to;
        Ok(to)
    }
}

/// The service's clock and zone.
#[derive(Debug, Clone)]
pub struct ServiceTime {
    /// The clock.
    pub clock: ServiceClock,
    /// The service time zone.
    pub zone: Tz,
    /// Where the zone came from, for the log (`setting`, `TZ`, `/etc/localtime`, `default`).
    pub zone_source: &'static str,
}

impl ServiceTime {
    /// Now as wall-clock text in the service zone.
    pub fn local_now(&self) -> NaiveDateTime {
        self.clock.now().with_timezone(&self.zone).naive_local()
    }
}

static CURRENT: RwLock<Option<Arc<ServiceTime>>> = RwLock::new(None);

/// Makes `t` the service time of this process (the server does, at start).
pub fn install(t: ServiceTime) {
    let mut c = CURRENT
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *c = Some(Arc::new(t));
}

/// The service time of this process: what [`install`] set, else the system clock in the
/// zone found from `TZ`, `/etc/localtime` or UTC.
pub fn current() -> Arc<ServiceTime> {
    if let Some(t) = CURRENT
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
    {
        return Arc::clone(t);
    }
    let (zone, zone_source) = resolve_zone(None).unwrap_or((Tz::UTC, "default"));
    let t = Arc::new(ServiceTime {
        clock: ServiceClock::system(),
        zone,
        zone_source,
    });
    let mut c = CURRENT
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(c.get_or_insert(t))
}

/// An IANA zone name (`Europe/Berlin`), also as a zoneinfo path or with `TZ`'s leading `:`.
pub fn parse_zone(name: &str) -> Option<Tz> {
    let n = name.trim().trim_start_matches(':');
    let n = n.rsplit_once("zoneinfo/").map_or(n, |(_, z)| z);
    let n = n
        .strip_prefix("posix/")
        .or_else(|| n.strip_prefix("right/"))
        .unwrap_or(n);
    n.parse::<Tz>().ok()
}

/// The zone whose file under `zoneinfo` has the bytes of `localtime` (a copied, not linked,
/// `/etc/localtime`, as in many containers).
fn zone_of_file(localtime: &std::path::Path, zoneinfo: &std::path::Path) -> Option<Tz> {
    let wanted = std::fs::read(localtime).ok()?;
    let mut dirs = vec![zoneinfo.to_path_buf()];
    let mut found: Vec<Tz> = Vec::new();
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).ok()?.filter_map(Result::ok) {
            let path = e.path();
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() {
                if !matches!(e.file_name().to_str(), Some("posix" | "right")) {
                    dirs.push(path);
                }
            } else if meta.len() == wanted.len() as u64
                && std::fs::read(&path).is_ok_and(|b| b == wanted)
                && let Some(z) = path
                    .strip_prefix(zoneinfo)
                    .ok()
                    .and_then(|r| parse_zone(&r.to_string_lossy()))
            {
                found.push(z);
            }
        }
    }
    // Links share bytes (Europe/Berlin and others): the canonical, shortest-named first.
    found.sort_by_key(|z| {
        (
            z.name().starts_with("Etc/") || !z.name().contains('/'),
            z.name().len(),
            z.name(),
        )
    });
    found.into_iter().next()
}

/// The service time zone: `setting`, else `TZ`, else `/etc/localtime` (or Debian's
/// `/etc/timezone`), else UTC; with where it came from.
///
/// # Errors
///
/// When the setting names no zone (a wrong `TZ` is passed over, as the C library does).
pub fn resolve_zone(setting: Option<&str>) -> Result<(Tz, &'static str), String> {
    if let Some(s) = setting.filter(|s| !s.trim().is_empty()) {
        return parse_zone(s).map(|z| (z, "setting")).ok_or_else(|| {
            format!("the setting timezone `{s}` is not an IANA time zone such as Europe/Berlin")
        });
    }
    if let Some(z) = std::env::var("TZ").ok().as_deref().and_then(parse_zone) {
        return Ok((z, "TZ"));
    }
    if let Some(z) = std::fs::read_link("/etc/localtime")
        .ok()
        .and_then(|p| parse_zone(&p.to_string_lossy()))
    {
        return Ok((z, "/etc/localtime"));
    }
    if let Some(z) = std::fs::read_to_string("/etc/timezone")
        .ok()
        .as_deref()
        .and_then(parse_zone)
    {
        return Ok((z, "/etc/timezone"));
    }
    let localtime = std::path::Path::new("/etc/localtime");
    if localtime.is_file() {
        if let Some(z) = zone_of_file(localtime, std::path::Path::new("/usr/share/zoneinfo")) {
            return Ok((z, "/etc/localtime"));
        }
        tracing::warn!(
            message = "/etc/localtime names no zone weft knows; the service time zone is UTC. Set the setting timezone (or TZ).",
        );
    }
    Ok((Tz::UTC, "default"))
}

/// Wall-clock text.
pub fn wall(t: NaiveDateTime) -> String {
    t.format(WALL).to_string()
}

/// Reads `YYYY-MM-DD HH:MM[:SS]` (also with `T`) as wall-clock time.
pub fn parse_wall(text: &str) -> Option<NaiveDateTime> {
    let t = text.trim().replacen('T', " ", 1);
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&t, f).ok())
}

/// A timestamp given on the command line or to an SQL function: RFC 3339, or
/// `YYYY-MM-DD HH:MM[:SS]` in `zone` (its first occurrence when it happens twice).
///
/// # Errors
///
/// When it is neither, or names a wall-clock time the zone skips.
pub fn parse_timestamp(text: &str, zone: Tz) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(t.with_timezone(&Utc));
    }
    let Some(local) = parse_wall(text) else {
        return Err(not_a_timestamp(text));
    };
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => Ok(t.with_timezone(&Utc)),
        LocalResult::None => Err(format!(
            "{} does not exist in {zone}: the clocks skip it",
            wall(local)
        )),
    }
}

/// The instant a wall-clock time names: its first occurrence when it happens twice, and the
/// end of the gap (the time the clocks jump to) when the zone skips it.
pub fn instant_of(zone: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.with_timezone(&Utc),
        LocalResult::None => gap_end(zone, local),
    }
}

/// The instant a gap that swallows `local` ends (the clocks jump forward at it).
pub fn gap_end(zone: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    // Read with the offset of a day before, `local` lies after the jump; with the offset of a
    // day after, before it. The jump is between the two.
    let day = Duration::days(1);
    let before = offset_at(zone, local.checked_sub_signed(day).unwrap_or(local));
    let after = offset_at(zone, local.checked_add_signed(day).unwrap_or(local));
    let mut lo = Utc.from_utc_datetime(&local.checked_sub_signed(after).unwrap_or(local));
    let mut hi = Utc.from_utc_datetime(&local.checked_sub_signed(before).unwrap_or(local));
    if hi < lo {
        std::mem::swap(&mut lo, &mut hi);
    }
    let start = zone.offset_from_utc_datetime(&lo.naive_utc()).fix();
    while hi - lo > Duration::seconds(1) {
        let mid = lo + (hi - lo) / 2;
        if zone.offset_from_utc_datetime(&mid.naive_utc()).fix() == start {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

fn offset_at(zone: Tz, local: NaiveDateTime) -> Duration {
    let secs = match zone.from_local_datetime(&local) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.offset().fix().local_minus_utc(),
        LocalResult::None => zone
            .offset_from_utc_datetime(&local)
            .fix()
            .local_minus_utc(),
    };
    Duration::seconds(i64::from(secs))
}

/// Whether the zone's UTC offset changes between `local_now` (its first occurrence, should
/// it happen twice) and 06:00 of the next day.
pub fn is_dst_change_tonight(zone: Tz, local_now: NaiveDateTime) -> bool {
    dst_change_before_morning(zone, instant_of(zone, local_now))
}

/// `is_dst_change_tonight(text)` of the SQL functions: from an instant in RFC 3339, or from a
/// wall-clock time `YYYY-MM-DD HH:MM[:SS]` in `zone` (its first occurrence; a skipped time is
/// read as the end of the gap).
///
/// # Errors
///
/// When the text is neither.
pub fn is_dst_change_tonight_at(zone: Tz, text: &str) -> Result<bool, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text.trim()) {
        return Ok(dst_change_before_morning(zone, t.with_timezone(&Utc)));
    }
    parse_wall(text)
        .map(|local| is_dst_change_tonight(zone, local))
        .ok_or_else(|| not_a_timestamp(text))
}

/// What is said of text that is no timestamp, and what to write instead.
fn not_a_timestamp(text: &str) -> String {
    format!(
        "`{text}` is not a timestamp: use RFC 3339 (2026-10-24T19:00:00+02:00) or \
         YYYY-MM-DD HH:MM[:SS] in the service time zone"
    )
}

/// Whether the zone's UTC offset changes between the instant `now` and 06:00 local time of
/// the day after `now`'s local day.
pub fn dst_change_before_morning(zone: Tz, now: DateTime<Utc>) -> bool {
    let local_now = now.with_timezone(&zone).naive_local();
    let Some(end_local) = local_now
        .date()
        .succ_opt()
        .and_then(|d| d.and_hms_opt(6, 0, 0))
    else {
        return false;
    };
    // The window's end: the last occurrence of 06:00, should it happen twice.
    let end = match zone.from_local_datetime(&end_local) {
        LocalResult::Ambiguous(_, late) => late.with_timezone(&Utc),
        _ => instant_of(zone, end_local),
    };
    let offset = |t: DateTime<Utc>| zone.offset_from_utc_datetime(&t.naive_utc()).fix();
    let first = offset(now);
    let mut t = now;
    while t < end {
        t = (t + Duration::minutes(30)).min(end);
        if offset(t) != first {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        parse_wall(s).expect("wall time")
    }

    #[test]
    fn dst_change_tonight_on_both_berlin_transitions_and_the_hours_around_them() {
        let z: Tz = "Europe/Berlin".parse().expect("zone");
        // Autumn: 2026-10-25 03:00 CEST becomes 02:00 CET.
        for (now, expected) in [
            ("2026-10-23 19:00", false), // the window ends 10-24 06:00
            ("2026-10-24 00:00", true),  // 10-24 00:00 .. 10-25 06:00
            ("2026-10-24 19:00", true),
            ("2026-10-24 23:59:59", true),
            ("2026-10-25 01:00", true),
            ("2026-10-25 02:30", true), // the first 02:30, before the change
            ("2026-10-25 03:00", false), // after it
            ("2026-10-25 19:00", false),
            ("2026-10-26 19:00", false),
        ] {
            assert_eq!(is_dst_change_tonight(z, at(now)), expected, "autumn {now}");
        }
        // Spring: 2027-03-28 02:00 CET becomes 03:00 CEST.
        for (now, expected) in [
            ("2027-03-26 19:00", false),
            ("2027-03-27 00:00", true),
            ("2027-03-27 19:00", true),
            ("2027-03-28 01:59", true),
            ("2027-03-28 02:30", false), // does not exist: read as 03:00, after the change
            ("2027-03-28 03:00", false),
            ("2027-03-28 19:00", false),
        ] {
            assert_eq!(is_dst_change_tonight(z, at(now)), expected, "spring {now}");
        }
    }

    #[test]
    fn the_text_form_reads_an_instant_as_that_instant_and_wall_clock_text_as_its_first_occurrence()
    {
        let z: Tz = "Europe/Berlin".parse().expect("zone");
        for (text, expected) in [
            ("2026-10-25 02:30", true),           // the first 02:30 (CEST)
            ("2026-10-25T00:30:00Z", true),       // that same instant
            ("2026-10-25T01:30:00Z", false),      // the second 02:30 (CET): after the change
            ("2026-10-25T02:30:00+01:00", false), // the same, with its offset
            ("2026-10-24T19:00:00+02:00", true),
            ("2027-03-28 02:30:00", false), // skipped: the end of the gap
        ] {
            assert_eq!(is_dst_change_tonight_at(z, text), Ok(expected), "{text}");
        }
        let e = is_dst_change_tonight_at(z, "tonight").expect_err("no timestamp");
        assert!(e.contains("`tonight` is not a timestamp"), "{e}");
    }

    #[test]
    fn after_the_autumn_change_the_repeated_hour_is_past_it() {
        let z: Tz = "Europe/Berlin".parse().expect("zone");
        let at = |s: &str| {
            DateTime::parse_from_rfc3339(s)
                .expect("t")
                .with_timezone(&Utc)
        };
        // 02:30 CEST, before the change, and 02:30 CET, the same wall time an hour later.
        assert!(dst_change_before_morning(z, at("2026-10-25T00:30:00Z")));
        assert!(!dst_change_before_morning(z, at("2026-10-25T01:30:00Z")));
        let e = zone_of_file(
            std::path::Path::new("/nonexistent"),
            std::path::Path::new("/usr/share/zoneinfo"),
        );
        assert_eq!(e, None);
    }

    #[test]
    fn a_copied_localtime_file_is_recognised_by_its_bytes() {
        let zoneinfo = std::path::Path::new("/usr/share/zoneinfo");
        let berlin = zoneinfo.join("Europe/Berlin");
        assert!(
            berlin.is_file(),
            "{} is missing: apt-get install tzdata (.ci/run does)",
            berlin.display()
        );
        let dir = tempfile::tempdir().expect("dir");
        let copy = dir.path().join("localtime");
        std::fs::copy(&berlin, &copy).expect("copy");
        let z = zone_of_file(&copy, zoneinfo).expect("recognised");
        // Links share the bytes; any of them is the same zone.
        let at = Utc
            .with_ymd_and_hms(2026, 10, 25, 0, 30, 0)
            .single()
            .expect("t");
        assert_eq!(
            z.offset_from_utc_datetime(&at.naive_utc()).fix(),
            chrono_tz::Europe::Berlin
                .offset_from_utc_datetime(&at.naive_utc())
                .fix()
        );
        assert_eq!(
            parse_zone("/usr/share/zoneinfo/posix/Europe/Berlin"),
            Some(chrono_tz::Europe::Berlin)
        );
    }

    #[test]
    fn no_dst_no_change() {
        for zone in ["UTC", "Asia/Tokyo", "Africa/Nairobi"] {
            let z: Tz = zone.parse().expect("zone");
            for now in ["2026-10-24 19:00", "2027-03-27 19:00", "2026-06-01 00:00"] {
                assert!(!is_dst_change_tonight(z, at(now)), "{zone} {now}");
            }
        }
        // A southern zone changes on other nights: Sydney, 2026-10-04 02:00 -> 03:00.
        let z: Tz = "Australia/Sydney".parse().expect("zone");
        assert!(is_dst_change_tonight(z, at("2026-10-03 19:00")));
        assert!(!is_dst_change_tonight(z, at("2026-10-24 19:00")));
    }

    #[test]
    fn timestamps_are_rfc3339_or_service_local_and_gaps_are_refused() {
        let z: Tz = "Europe/Berlin".parse().expect("zone");
        assert_eq!(
            parse_timestamp("2026-10-24 19:00", z)
                .expect("local")
                .to_rfc3339(),
            "2026-10-24T17:00:00+00:00"
        );
        assert_eq!(
            parse_timestamp("2026-10-24T19:00:00+02:00", z)
                .expect("rfc")
                .to_rfc3339(),
            "2026-10-24T17:00:00+00:00"
        );
        // Ambiguous: the first occurrence (CEST).
        assert_eq!(
            parse_timestamp("2026-10-25 02:30:00", z)
                .expect("ambiguous")
                .to_rfc3339(),
            "2026-10-25T00:30:00+00:00"
        );
        let e = parse_timestamp("2027-03-28 02:30", z).expect_err("gap");
        assert!(e.contains("does not exist in Europe/Berlin"), "{e}");
        assert!(parse_timestamp("tonight", z).is_err());
        // The gap's end is where the clocks jump to.
        assert_eq!(
            instant_of(z, at("2027-03-28 02:30")).to_rfc3339(),
            "2027-03-28T01:00:00+00:00"
        );
    }

    #[test]
    fn zones_are_read_from_names_paths_and_tz_syntax() {
        assert_eq!(parse_zone("Europe/Berlin"), Some(chrono_tz::Europe::Berlin));
        assert_eq!(
            parse_zone("/usr/share/zoneinfo/America/New_York"),
            Some(chrono_tz::America::New_York)
        );
        assert_eq!(parse_zone(":Europe/Paris"), Some(chrono_tz::Europe::Paris));
        assert_eq!(parse_zone("Mars/Olympus"), None);
        let e = resolve_zone(Some("Mars/Olympus")).expect_err("bad setting");
        assert!(e.contains("Mars/Olympus"), "{e}");
        assert_eq!(
            resolve_zone(Some("Asia/Tokyo")).expect("setting"),
            (chrono_tz::Asia::Tokyo, "setting")
        );
    }

    #[test]
    fn a_fake_clock_starts_where_it_is_told_and_runs_on() {
        let start = Utc
            .with_ymd_and_hms(2026, 10, 24, 17, 0, 0)
            .single()
            .expect("t");
        let c = ServiceClock::starting_at(start);
        let a = c.now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = c.now();
        assert!(a >= start && b > a && b - start < Duration::seconds(5));
        assert!(c.is_fake() && !ServiceClock::system().is_fake());
        assert!(
            c.advance(start).is_err(),
            "a running clock is not moved by hand"
        );
    }

    #[test]
    fn a_stepped_clock_stands_still_and_moves_forward_only_when_told() {
        let start = Utc
            .with_ymd_and_hms(2026, 10, 25, 0, 59, 0)
            .single()
            .expect("t");
        let c = ServiceClock::stepped_at(start);
        let shared = c.clone();
        assert!(c.is_stepped() && c.is_fake());
        assert_eq!(c.now(), start);
        let later = start + Duration::seconds(61);
        assert_eq!(shared.advance(later), Ok(later));
        assert_eq!(c.now(), later, "clones share one clock");
        let e = c.advance(start).expect_err("backwards");
        assert!(e.contains("forward only"), "{e}");
        assert_eq!(c.now(), later);
        assert!(ServiceClock::system().advance(later).is_err());
    }
}
