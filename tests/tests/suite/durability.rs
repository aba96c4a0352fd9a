//! End to end: concurrent deploys all land (no SQLITE_BUSY, nothing interleaved), and an
//! acknowledged deploy survives a SIGKILL of the server.

use crate::common;

use common::*;

fn base(w: &Weft) {
    for f in ["1-folder.dsr", "2-connection.dsr"] {
        let o = w.script(
            "deploySheet.sh",
            &["--file", example(f).to_str().expect("utf8")],
            None,
        );
        assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    }
}

fn sheet_count(w: &Weft) -> i64 {
    let conn = weft_repo::connect(&w.repository()).expect("open");
    conn.query_row("SELECT COUNT(*) FROM sheets", [], |r| r.get(0))
        .expect("count")
}

#[test]
fn concurrent_deploys_all_land() {
    let w = Weft::start();
    base(&w);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let url = w.url.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let n = 1000 + t * 100 + i;
                    let (st, v) = post(&url, deploy_body(&sheet(n)));
                    assert_eq!(st, 200, "sheet {n}: {v}");
                    assert_eq!(v["payload"]["created"][0]["id"], n);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("deploy thread");
    }
    assert_eq!(sheet_count(&w), 100);
    let conn = weft_repo::connect(&w.repository()).expect("open");
    let nodes: i64 = conn
        .query_row("SELECT COUNT(*) FROM nodes", [], |r| r.get(0))
        .expect("nodes");
    assert_eq!(nodes, 300);
}

/// A kill of the process (not a power cut: the page cache survives it, so this holds at any
/// `synchronous` level in WAL mode; the writer's settings for a power cut are asserted by
/// `repo::tests::the_writer_runs_in_wal_mode_with_synchronous_normal`).
#[test]
fn acknowledged_deploys_survive_a_process_kill() {
    let w = Weft::start();
    base(&w);
    for n in 1..=40 {
        let (st, v) = post(&w.url, deploy_body(&sheet(n)));
        assert_eq!(st, 200, "{v}");
    }
    // SIGKILL, no chance to clean up.
    let home = w.stop();
    let w = Weft::start_in(home, &["--listen", "127.0.0.1:0"], &[]);
    assert_eq!(sheet_count(&w), 40, "an acknowledged deploy was lost");
    let conn = weft_repo::connect(&w.repository()).expect("open");
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("check");
    assert_eq!(check, "ok");
    // A redeploy of the same sheets is recognised as unchanged.
    let (_, v) = post(&w.url, deploy_body(&sheet(7)));
    assert_eq!(v["payload"]["unchanged"][0]["id"], 7, "{v}");
}
