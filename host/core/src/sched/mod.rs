//! Time and scheduled starts: the service clock and zone ([`clock`], the lowest layer, read
//! by the SQL functions and the executor too), schedules and planned starts across clock
//! changes ([`schedule`], pure), and the scheduler that starts batches when their planned
//! start comes ([`scheduler`], which starts them through a [`scheduler::Starter`] the server
//! gives it, so that nothing here depends on the executor).
//!
//! # Scheduling and the service clock
//!
//! The detail behind docs/ARCHITECTURE.md's map.
//!
//! The folder `sched/` (DESIGN.md's name) holds all of it. `clock` holds the one service clock (the system's, one started at `--fake-now` that runs on
//! at normal speed, or with `--stepped-clock` one that stands still until the development
//! command `AdvanceClock` moves it and runs a tick; the end-to-end scheduler tests step it and
//! never sleep) and the service time zone (setting `timezone`, `TZ`, `/etc/localtime`,
//! UTC), installed once per process. `connect::sqlite::register_clock_functions` registers `current_local_timestamp()` and
//! `is_dst_change_tonight([local now])`, which read it, on every SQLite connection the host opens
//! (`repo::connect` and `connect::sqlite::open`). `schedule` is pure: schedule texts, planned starts as
//! wall-clock time (`Planned`, with a flag for the second occurrence of an ambiguous time), when
//! a planned start is due under the spring-gap and autumn-overlap policies, and the next planned
//! start from the previous one, passing over missed ones. Its property tests run every zone of
//! chrono-tz from 2000 to 2040. `scheduler` is the thread that ticks every second (one tick at a
//! time, also with `AdvanceClock`): it reads the planned starts up to three hours ahead
//! (`PlannedStarts::due_starts`; the scheduler computes "now + 3 hours" as wall-clock text), and
//! for each due batch calls `Starter::start_scheduled` (the executor's `start_scheduled`) with a
//! `ScheduledStart`, which the repository records with the instance in one transaction: the next planned start (compare-and-set on
//! `start_dt`; `Error::Conflict` and nothing stored when a sheet changed it) and the instance's
//! batch, planned start and lateness. Batches come from `.dsr` documents (`dsr::model::Batch`, validated in
//! `validate::batches`, written by `DeployWriter::batch` with the first planned start the deploy
//! computed, which it keeps across redeploys unless the schedule changed). `NextRuns` is
//! `scheduler::next_runs` (typed `NextRuns`, serialised by the API).

pub mod clock;
pub mod schedule;
pub mod scheduler;
