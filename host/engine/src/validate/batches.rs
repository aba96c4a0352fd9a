//! Scheduled batches: their schedules with the clock-change policies, `ifRunning`, and the
//! elements they run, in the document or in the repository.

use super::ids::has_control;
use std::collections::{HashMap, HashSet};
use weft_dsr::model::*;
use weft_dsr::{Path, Problems, Span};
use weft_repo::Facts;

/// The schedule of a batch, read with its policies; problems placed in the `.dsr` text.
pub fn batch_schedule(
    b: &Batch,
    path: &Path,
    problems: &mut Problems,
) -> Option<weft_core::sched::schedule::Schedule> {
    use weft_core::sched::schedule::{GapPolicy, OverlapPolicy, parse};
    let repeat = match parse(&b.schedule.v) {
        Ok(r) => Some(r),
        Err(e) => {
            // Inside the string when it is written plainly or in one pair of quotes.
            let (start, end) = (b.schedule.span.start as usize, b.schedule.span.end as usize);
            let len = b.schedule.v.len();
            let inner = if end - start == len + 2 {
                start + 1
            } else if end - start == len {
                start
            } else {
                usize::MAX
            };
            let span = if inner == usize::MAX {
                b.schedule.span
            } else {
                Span::new(inner + e.offset, inner + e.offset)
            };
            problems.error(
                "batch.schedule",
                format!("batch {}: {}", b.id.v, e.message),
                span,
                &path.key("schedule"),
            );
            None
        }
    };
    let mut policy = |field: &Option<At<String>>, key: &str, allowed: &str, ok: bool| {
        if let Some(f) = field
            && !ok
        {
            problems.error(
                "batch.policy",
                format!("batch {}: `{key}` is `{}`; use {allowed}", b.id.v, f.v),
                f.span,
                &path.key(key),
            );
        }
    };
    let gap = b.spring_gap.as_ref().map(|g| GapPolicy::parse(&g.v));
    let overlap = b
        .autumn_overlap
        .as_ref()
        .map(|o| OverlapPolicy::parse(&o.v));
    let running = b
        .if_running
        .as_ref()
        .map(|r| matches!(r.v.as_str(), "skip" | "wait"));
    policy(
        &b.spring_gap,
        "springGap",
        "`next` or `skip`",
        !matches!(gap, Some(None)),
    );
    policy(
        &b.autumn_overlap,
        "autumnOverlap",
        "`first`, `second` or `both`",
        !matches!(overlap, Some(None)),
    );
    policy(
        &b.if_running,
        "ifRunning",
        "`skip` or `wait`",
        running != Some(false),
    );
    policy(
        &b.manual_runs,
        "manualRuns",
        "`allow` or `exclude`",
        b.manual_runs
            .as_ref()
            .is_none_or(|t| matches!(t.v.as_str(), "allow" | "exclude")),
    );
    policy(
        &b.after_timeout,
        "afterTimeout",
        "`skip` or `start`",
        b.after_timeout
            .as_ref()
            .is_none_or(|t| matches!(t.v.as_str(), "skip" | "start")),
    );
    if let Some(m) = &b.after_timeout_minutes
        && !(1..=MAX_AFTER_MINUTES).contains(&m.v)
    {
        problems.error(
            "batch.policy",
            format!(
                "batch {}: `afterTimeoutMinutes` is {}; use 1 to {MAX_AFTER_MINUTES} (a week)",
                b.id.v, m.v
            ),
            m.span,
            &path.key("afterTimeoutMinutes"),
        );
    }
    Some(weft_core::sched::schedule::Schedule {
        repeat: repeat?,
        gap: gap.unwrap_or(Some(GapPolicy::Next))?,
        overlap: overlap.unwrap_or(Some(OverlapPolicy::First))?,
    })
}

/// The longest a scheduled start waits for the batches it runs after: a week.
const MAX_AFTER_MINUTES: i64 = 7 * 24 * 60;

pub(super) fn batches(
    doc: &Document,
    td: &Path,
    doc_folders: &HashMap<i64, &str>,
    facts: &dyn Facts,
    problems: &mut Problems,
) -> weft_repo::Result<()> {
    let mut seen: HashMap<i64, usize> = HashMap::new();
    let doc_sheets: HashSet<i64> = doc.sheets.iter().map(|s| s.id.v).collect();
    let doc_actions: HashSet<i64> = doc
        .sheets
        .iter()
        .flat_map(|s| s.nodes.iter())
        .filter(|n| matches!(n.attributes, NodeAttributes::Action(_)))
        .map(|n| n.id.v)
        .collect();
    for (i, b) in doc.batches.iter().enumerate() {
        let path = td.key("batches").index(i);
        if let Some(first) = seen.insert(b.id.v, i) {
            problems.error(
                "id.duplicate",
                format!(
                    "batch id {} is used twice in this document (first at batches[{first}])",
                    b.id.v
                ),
                b.id.span,
                &path.key("id"),
            );
        }
        if b.name.v.trim().is_empty() || has_control(&b.name.v) {
            problems.error(
                "batch.name",
                format!(
                    "batch {}: `name` must not be empty nor hold control characters",
                    b.id.v
                ),
                b.name.span,
                &path.key("name"),
            );
        }
        batch_schedule(b, &path, problems);
        // Its variables as a run's are checked: no built-in set, every `${...}` computable
        // (from the built-ins, at each run: `${add_days(schedule_date, -1)}`).
        for (j, (name, value)) in b.variables.iter().enumerate() {
            let why = if name == "schedule_date" {
                Some(format!(
                    "batch {}: `schedule_date` is the day of each run's planned start and cannot be set by the batch",
                    b.id.v
                ))
            } else {
                weft_core::variables::refused(name, value)
                    .map(|why| format!("batch {}: {why}", b.id.v))
            };
            if let Some(why) = why {
                problems.error(
                    "batch.variable",
                    why,
                    b.span,
                    &path.key("variables").index(j).key("variableValue"),
                );
            }
        }
        if b.elements.is_empty() {
            problems.error(
                "batch.elements",
                format!("batch {}: `elements` is empty; a batch runs at least one sheet, action or folder", b.id.v),
                b.span,
                &path.key("elements"),
            );
        }
        let doc_batches: HashSet<i64> = doc.batches.iter().map(|b| b.id.v).collect();
        for (j, a) in b.after.iter().enumerate() {
            let apath = path.key("after").index(j);
            if a.v == b.id.v {
                problems.error(
                    "batch.after",
                    format!("batch {}: `after` names the batch itself", b.id.v),
                    a.span,
                    &apath,
                );
            } else if !doc_batches.contains(&a.v) && !facts.batch_exists(a.v)? {
                problems.error(
                    "batch.after",
                    format!(
                        "batch {}: `after` names batch {}, which exists neither in the repository nor in this document",
                        b.id.v, a.v
                    ),
                    a.span,
                    &apath,
                );
            }
        }
        for (j, e) in b.elements.iter().enumerate() {
            let epath = path.key("elements").index(j);
            let (what, exists) = match e.kind.v.as_str() {
                "S" => (
                    "sheet",
                    doc_sheets.contains(&e.id.v) || facts.sheet_exists(e.id.v)?,
                ),
                "A" => (
                    "action",
                    doc_actions.contains(&e.id.v) || facts.action_exists(e.id.v)?,
                ),
                "F" => (
                    "folder",
                    doc_folders.contains_key(&e.id.v) || facts.folder_path(e.id.v)?.is_some(),
                ),
                other => {
                    problems.error(
                        "batch.element_type",
                        format!(
                            "batch {}: element type `{other}` is not one of S (sheet), A (action), F (folder)",
                            b.id.v
                        ),
                        e.kind.span,
                        &epath.key("elementType"),
                    );
                    continue;
                }
            };
            if !exists {
                problems.error(
                    "batch.element_missing",
                    format!(
                        "batch {}: {what} {} does not exist, neither in the repository nor in this document",
                        b.id.v, e.id.v
                    ),
                    e.id.span,
                    &epath.key("elementId"),
                );
            }
        }
    }
    Ok(())
}
