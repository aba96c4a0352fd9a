use super::*;
use crate::sched::clock::parse_wall;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn at(s: &str) -> NaiveDateTime {
    parse_wall(s).expect("wall time")
}

fn utc(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("rfc3339")
        .with_timezone(&Utc)
}

fn sched(text: &str, gap: GapPolicy, overlap: OverlapPolicy) -> Schedule {
    Schedule {
        repeat: parse(text).expect("schedule"),
        gap,
        overlap,
    }
}

const BERLIN: Tz = chrono_tz::Europe::Berlin;

#[test]
fn schedule_texts_are_read_and_written_back() {
    for (text, back) in [
        ("daily 22:00", "daily 22:00"),
        ("  DAILY   7:05 ", "daily 07:05"),
        ("weekly mon,Fri,mon 06:30", "weekly mon,fri 06:30"),
        ("monthly 31 03:00", "monthly 31 03:00"),
        ("every 15 minutes", "every 15 minutes"),
    ] {
        assert_eq!(parse(text).expect(text).to_string(), back);
    }
    for (text, offset, words) in [
        ("", 0, "empty"),
        ("daily 22:00:30", 6, "not a time of day"),
        ("hourly 10:00", 0, "`hourly` is not a schedule"),
        ("daily 25:00", 6, "not a time of day"),
        ("daily", 5, "time of day (HH:MM) is missing"),
        ("weekly moon 10:00", 7, "`moon` is not a weekday"),
        ("monthly 32 10:00", 8, "not a day of the month"),
        ("every 0 minutes", 6, "from 1 to 1440"),
        ("every 5 hours", 8, "`hours` is not `minutes`"),
        ("daily 10:00 sharp", 12, "unexpected `sharp`"),
    ] {
        let e = parse(text).expect_err(text);
        assert_eq!(e.offset, offset, "{text}: {e:?}");
        assert!(e.message.contains(words), "{text}: {}", e.message);
    }
}

#[test]
fn a_night_batch_stays_at_22_00_across_both_clock_changes() {
    let s = sched("daily 22:00", GapPolicy::Next, OverlapPolicy::First);
    let mut p = s
        .first_after(BERLIN, utc("2026-10-23T12:00:00Z"))
        .expect("first");
    let mut seen = Vec::new();
    for _ in 0..4 {
        let due = s.due(BERLIN, &p).expect("due");
        seen.push(due.with_timezone(&BERLIN).to_rfc3339());
        p = s.next(BERLIN, &p, due).expect("next");
    }
    assert_eq!(
        seen,
        [
            "2026-10-23T22:00:00+02:00",
            "2026-10-24T22:00:00+02:00",
            "2026-10-25T22:00:00+01:00",
            "2026-10-26T22:00:00+01:00"
        ]
    );
}

#[test]
fn the_spring_gap_runs_at_the_jump_or_is_skipped() {
    let from = utc("2027-03-26T12:00:00Z");
    let dues = |gap| {
        let s = sched("daily 02:30", gap, OverlapPolicy::First);
        let mut p = s.first_after(BERLIN, from).expect("first");
        let mut out = Vec::new();
        for _ in 0..3 {
            let due = s.due(BERLIN, &p).expect("due");
            out.push(due.to_rfc3339());
            p = s.next(BERLIN, &p, due).expect("next");
        }
        out
    };
    assert_eq!(
        dues(GapPolicy::Next),
        [
            "2027-03-27T01:30:00+00:00",
            "2027-03-28T01:00:00+00:00", // 03:00 CEST, where the clocks jump to
            "2027-03-29T00:30:00+00:00"
        ]
    );
    assert_eq!(
        dues(GapPolicy::Skip),
        [
            "2027-03-27T01:30:00+00:00",
            "2027-03-29T00:30:00+00:00",
            "2027-03-30T00:30:00+00:00"
        ]
    );
}

#[test]
fn the_autumn_overlap_runs_first_second_or_both() {
    let from = utc("2026-10-24T12:00:00Z");
    let dues = |overlap| {
        let s = sched("daily 02:30", GapPolicy::Next, overlap);
        let mut p = s.first_after(BERLIN, from).expect("first");
        let mut out = Vec::new();
        while out.len() < 3 {
            let due = s.due(BERLIN, &p).expect("due");
            out.push(due.to_rfc3339());
            p = s.next(BERLIN, &p, due).expect("next");
        }
        out
    };
    assert_eq!(
        dues(OverlapPolicy::First),
        [
            "2026-10-25T00:30:00+00:00",
            "2026-10-26T01:30:00+00:00",
            "2026-10-27T01:30:00+00:00"
        ]
    );
    assert_eq!(
        dues(OverlapPolicy::Second),
        [
            "2026-10-25T01:30:00+00:00",
            "2026-10-26T01:30:00+00:00",
            "2026-10-27T01:30:00+00:00"
        ]
    );
    assert_eq!(
        dues(OverlapPolicy::Both),
        [
            "2026-10-25T00:30:00+00:00",
            "2026-10-25T01:30:00+00:00",
            "2026-10-26T01:30:00+00:00"
        ]
    );
}

#[test]
fn missed_starts_run_once_and_the_plan_does_not_drift() {
    let s = sched("daily 22:00", GapPolicy::Next, OverlapPolicy::First);
    let p = Planned::at(at("2026-11-01 22:00"));
    // The server was down for five days and comes back at 10:17 on the 6th.
    let now = utc("2026-11-06T09:17:00Z");
    let next = s.next(BERLIN, &p, now).expect("next");
    assert_eq!(next, Planned::at(at("2026-11-06 22:00")));
    // A start shifted by a day (the DST procedure) goes on from the shifted day.
    let shifted = Planned::at(at("2026-10-25 22:00"));
    assert_eq!(
        s.next(BERLIN, &shifted, utc("2026-10-25T21:00:30Z")),
        Some(Planned::at(at("2026-10-26 22:00")))
    );
}

#[test]
fn a_start_long_gone_or_beyond_the_calendar_goes_on_from_now() {
    let now = utc("2026-11-22T12:00:00Z");
    let s = sched("daily 22:00", GapPolicy::Next, OverlapPolicy::First);
    let old = Planned::at(at("1900-01-01 22:00"));
    assert_eq!(
        s.next(BERLIN, &old, now),
        Some(Planned::at(at("2026-11-22 22:00")))
    );
    let s = sched("every 1 minutes", GapPolicy::Next, OverlapPolicy::First);
    let ancient = Planned::at(
        NaiveDate::from_ymd_opt(-200_000, 1, 1)
            .expect("d")
            .and_hms_opt(0, 0, 0)
            .expect("t"),
    );
    let next = s.next(BERLIN, &ancient, now).expect("next");
    assert!(s.due(BERLIN, &next).expect("due") > now);
}

#[test]
fn weekly_and_monthly_land_on_their_days() {
    let s = sched(
        "weekly tue,sat 06:00",
        GapPolicy::Next,
        OverlapPolicy::First,
    );
    let p = s
        .first_after(BERLIN, utc("2026-11-22T12:00:00Z")) // a Sunday
        .expect("first");
    assert_eq!(p, Planned::at(at("2026-11-24 06:00")));
    let p = s
        .next(BERLIN, &p, s.due(BERLIN, &p).expect("due"))
        .expect("next");
    assert_eq!(p, Planned::at(at("2026-11-28 06:00")));
    let s = sched("monthly 31 03:00", GapPolicy::Next, OverlapPolicy::First);
    let mut p = s
        .first_after(BERLIN, utc("2027-01-31T12:00:00Z"))
        .expect("first");
    let mut days = Vec::new();
    for _ in 0..4 {
        days.push(wall(p.local));
        p = s
            .next(BERLIN, &p, s.due(BERLIN, &p).expect("due"))
            .expect("next");
    }
    assert_eq!(
        days,
        [
            "2027-02-28 03:00:00",
            "2027-03-31 03:00:00",
            "2027-04-30 03:00:00",
            "2027-05-31 03:00:00"
        ]
    );
}

#[test]
fn every_n_minutes_counts_real_minutes_across_the_overlap() {
    let s = sched("every 30 minutes", GapPolicy::Next, OverlapPolicy::First);
    let mut p = s
        .first_after(BERLIN, utc("2026-10-24T23:50:00Z"))
        .expect("first");
    let mut seen = Vec::new();
    for _ in 0..6 {
        let due = s.due(BERLIN, &p).expect("due");
        seen.push((due.to_rfc3339(), p.to_string()));
        p = s.next(BERLIN, &p, due).expect("next");
    }
    let dues: Vec<&str> = seen.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(
        dues,
        [
            "2026-10-25T00:00:00+00:00",
            "2026-10-25T00:30:00+00:00",
            "2026-10-25T01:00:00+00:00",
            "2026-10-25T01:30:00+00:00",
            "2026-10-25T02:00:00+00:00",
            "2026-10-25T02:30:00+00:00"
        ]
    );
    // 02:00 and 02:30 local happen twice: the second time is marked.
    assert_eq!(seen[2].1, "2026-10-25 02:00:00 (second occurrence)");
}

#[test]
fn upcoming_starts_name_the_clock_changes() {
    let s = sched("daily 02:30", GapPolicy::Next, OverlapPolicy::Both);
    let list = s.upcoming(BERLIN, &Planned::at(at("2026-10-24 02:30")), 4);
    let notes: Vec<Option<&str>> = list.iter().map(|u| u.clock_change.as_deref()).collect();
    assert_eq!(list.len(), 4);
    assert_eq!(notes[0], None);
    assert!(notes[1].is_some_and(|n| n.contains("happens twice") && n.contains("first")));
    assert!(notes[2].is_some_and(|n| n.contains("happens twice") && n.contains("second")));
    assert_eq!(notes[3], None, "a day later, 24 hours after the change");
    assert_eq!(list[2].offset_seconds, 3600);
    let s = sched("daily 22:00", GapPolicy::Next, OverlapPolicy::First);
    let list = s.upcoming(BERLIN, &Planned::at(at("2026-10-24 22:00")), 3);
    assert_eq!(list[0].clock_change, None);
    assert!(
        list[1]
            .clock_change
            .as_deref()
            .is_some_and(|n| n.contains("UTC+02:00 became UTC+01:00")),
        "{list:?}"
    );
    assert_eq!(list[1].due.to_rfc3339(), "2026-10-25T21:00:00+00:00");
}

/// What a schedule must start between two instants, worked out independently of
/// `Schedule::next`: every nominal wall-clock time of every day, resolved by the policies.
fn expected_dues(
    s: &Schedule,
    zone: Tz,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> BTreeSet<DateTime<Utc>> {
    let mut out = BTreeSet::new();
    if let Repeat::Minutes(n) = s.repeat {
        let step = i64::from(n) * 60;
        let mut t = (from.timestamp().div_euclid(step) + 1) * step;
        while t <= to.timestamp() {
            out.insert(DateTime::from_timestamp(t, 0).expect("t"));
            t += step;
        }
        return out;
    }
    let mut day = from.with_timezone(&zone).date_naive() - Duration::days(2);
    let last = to.with_timezone(&zone).date_naive() + Duration::days(2);
    while day <= last {
        let time = match &s.repeat {
            Repeat::Daily(t) => Some(*t),
            Repeat::Weekly(days, t) => days.contains(&day.weekday()).then_some(*t),
            Repeat::Monthly(d, t) => {
                (day.day() == (*d).min(last_day_of(day.year(), day.month()))).then_some(*t)
            }
            Repeat::Minutes(_) => None,
        };
        if let Some(t) = time {
            let local = day.and_time(t);
            match zone.from_local_datetime(&local) {
                LocalResult::Single(x) => {
                    out.insert(x.with_timezone(&Utc));
                }
                LocalResult::Ambiguous(a, b) => {
                    match s.overlap {
                        OverlapPolicy::First => out.insert(a.with_timezone(&Utc)),
                        OverlapPolicy::Second => out.insert(b.with_timezone(&Utc)),
                        OverlapPolicy::Both => {
                            out.insert(a.with_timezone(&Utc));
                            out.insert(b.with_timezone(&Utc))
                        }
                    };
                }
                LocalResult::None => {
                    if s.gap == GapPolicy::Next {
                        out.insert(gap_end(zone, local));
                    }
                }
            }
        }
        day = day.succ_opt().expect("day");
    }
    out.retain(|t| *t > from && *t <= to);
    out
}

/// Runs the scheduler's decisions from `from` to `to` the way the server does: a tick at
/// every due instant plus `late` seconds; returns the instants it started, in order.
fn simulate(
    s: &Schedule,
    zone: Tz,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    late: i64,
) -> Vec<(Planned, DateTime<Utc>)> {
    let mut started = Vec::new();
    let Some(mut p) = s.first_after(zone, from) else {
        return started;
    };
    loop {
        let Some(due) = s.due(zone, &p) else {
            panic!("a planned start that is never due: {p}");
        };
        if due > to {
            return started;
        }
        let now = due + Duration::seconds(late);
        started.push((p, due));
        match s.next(zone, &p, now) {
            Some(n) => p = n,
            None => return started,
        }
    }
}

fn check(s: &Schedule, zone: Tz, from: DateTime<Utc>, days: i64) -> Result<(), TestCaseError> {
    let to = from + Duration::days(days);
    let started = simulate(s, zone, from, to, 0);
    let dues: Vec<DateTime<Utc>> = started.iter().map(|(_, d)| *d).collect();
    // Never twice for one planned start, always forward.
    prop_assert!(
        dues.windows(2).all(|w| w[0] < w[1]),
        "{zone} {s:?}: not increasing {dues:?}"
    );
    let plans: BTreeSet<Planned> = started.iter().map(|(p, _)| *p).collect();
    prop_assert_eq!(
        plans.len(),
        started.len(),
        "{} {:?}: a planned start twice",
        zone,
        s
    );
    // Nothing skipped that the policy does not skip.
    let expected = expected_dues(s, zone, from, to);
    let got: BTreeSet<DateTime<Utc>> = dues.into_iter().collect();
    prop_assert_eq!(&got, &expected, "{} {:?} from {}", zone, s, from);
    Ok(())
}

fn schedule_strategy() -> impl Strategy<Value = Schedule> {
    let time = (0u32..24, prop::sample::select(vec![0u32, 15, 30, 59]))
        .prop_map(|(h, m)| NaiveTime::from_hms_opt(h, m, 0).expect("time"));
    let repeat = prop_oneof![
        3 => time.clone().prop_map(Repeat::Daily),
        1 => (prop::collection::vec(0u8..7, 1..4), time.clone()).prop_map(|(d, t)| {
            let mut days: Vec<Weekday> = d.into_iter().map(|i| Weekday::try_from(i).expect("day")).collect();
            days.dedup();
            Repeat::Weekly(days, t)
        }),
        1 => (1u32..=31, time).prop_map(|(d, t)| Repeat::Monthly(d, t)),
        1 => prop::sample::select(vec![1u32, 7, 30, 45, 60, 90]).prop_map(Repeat::Minutes),
    ];
    (
        repeat,
        prop::sample::select(vec![GapPolicy::Next, GapPolicy::Skip]),
        prop::sample::select(vec![
            OverlapPolicy::First,
            OverlapPolicy::Second,
            OverlapPolicy::Both,
        ]),
    )
        .prop_map(|(repeat, gap, overlap)| Schedule {
            repeat,
            gap,
            overlap,
        })
}

/// The first instant in `year` at which `zone`'s offset changes, if any.
fn a_transition(zone: Tz, year: i32) -> Option<DateTime<Utc>> {
    let mut t = Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0).single()?;
    let end = Utc.with_ymd_and_hms(year + 1, 1, 1, 0, 0, 0).single()?;
    let offset = |t: DateTime<Utc>| zone.offset_from_utc_datetime(&t.naive_utc()).fix();
    let first = offset(t);
    while t < end {
        let n = t + Duration::days(7);
        if offset(n) != first {
            return Some(n);
        }
        t = n;
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Any zone chrono-tz knows, any year from 2000 to 2040, any schedule and policy: the
    /// scheduler never panics, never starts a planned start twice and never misses one its
    /// policy does not skip. The window is put on one of the zone's clock changes when it
    /// has any that year.
    #[test]
    fn no_zone_no_year_no_schedule_starts_twice_or_skips(
        zone_index in 0..chrono_tz::TZ_VARIANTS.len(),
        year in 2000i32..=2040,
        shift_hours in -72i64..72,
        s in schedule_strategy(),
    ) {
        let zone = chrono_tz::TZ_VARIANTS[zone_index];
        let around = a_transition(zone, year)
            .unwrap_or_else(|| Utc.with_ymd_and_hms(year, 6, 1, 0, 0, 0).single().expect("t"));
        let days = if matches!(s.repeat, Repeat::Minutes(_)) { 2 } else { 40 };
        check(&s, zone, around - Duration::days(days / 2) + Duration::hours(shift_hours), days)?;
    }

    /// After downtimes of any length, a missed start runs once, late, and the next planned
    /// start is the first one after the server is back.
    #[test]
    fn after_downtime_a_missed_start_runs_once(
        zone_index in 0..chrono_tz::TZ_VARIANTS.len(),
        down_minutes in 1i64..20_000,
        s in schedule_strategy(),
    ) {
        let zone = chrono_tz::TZ_VARIANTS[zone_index];
        let from = Utc.with_ymd_and_hms(2030, 3, 1, 0, 0, 0).single().expect("t");
        let p = s.first_after(zone, from).expect("first");
        let due = s.due(zone, &p).expect("due");
        let back = due + Duration::minutes(down_minutes);
        let next = s.next(zone, &p, back).expect("next");
        let next_due = s.due(zone, &next).expect("due");
        prop_assert!(next_due > back);
        // It is the first planned start after the server is back.
        let expected = expected_dues(&s, zone, back, back + Duration::days(70));
        prop_assert_eq!(expected.iter().next(), Some(&next_due));
    }
}

/// Every zone chrono-tz knows, in a year of 2000 to 2040 that depends on the zone: daily
/// schedules at the hours around each zone's clock changes, and every 30 minutes.
#[test]
fn every_zone_around_its_clock_changes() {
    for (i, zone) in chrono_tz::TZ_VARIANTS.iter().enumerate() {
        let year = 2000 + (i as i32 % 41);
        let Some(t) = a_transition(*zone, year) else {
            continue;
        };
        let local = t.with_timezone(zone).naive_local();
        for (h, gap, overlap) in [
            (-1, GapPolicy::Next, OverlapPolicy::Both),
            (0, GapPolicy::Skip, OverlapPolicy::First),
            (1, GapPolicy::Next, OverlapPolicy::Second),
        ] {
            let time = (local + Duration::hours(h)).time();
            let s = Schedule {
                repeat: Repeat::Daily(NaiveTime::from_hms_opt(time.hour(), 30, 0).expect("t")),
                gap,
                overlap,
            };
            if let Err(e) = check(&s, *zone, t - Duration::days(10), 20) {
                panic!("{e}");
            }
        }
        let s = Schedule {
            repeat: Repeat::Minutes(30),
            gap: GapPolicy::Next,
            overlap: OverlapPolicy::First,
        };
        if let Err(e) = check(&s, *zone, t - Duration::hours(12), 1) {
            panic!("{e}");
        }
    }
}

use chrono::Timelike;
