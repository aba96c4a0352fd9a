//! Seeds end to end: a project's CSV file named by an action (`file`), sent by `weft deploy
//! DIR`, checked at deploy with its mistakes at their line in the CSV, loaded by the `Seed`
//! module into SQLite and PostgreSQL with dbt's inferred types, ordered before the models
//! that read it, and loaded again only when the file changed (on PostgreSQL emptied, so that
//! views on it stay, while its columns stay).

use crate::common;

use common::actions::rows;
use common::*;
use serde_json::{Value, json};
use weft_tests::postgres::Postgres;

const CUSTOMERS: &str = "id,first_name,signup,score,vip\n\
1,Michael,2018-01-01,1.5,true\n\
2,Shawn,2018-01-02,,false\n\
3,\"Kathleen, Jr.\",2018-01-03,7,\n";

/// A project in `dir`: folder `/seed`, connection `conn` (`id`, `kind`), and sheet `load`
/// with a Seed of `seeds/raw_customers.csv` and a model reading it (`model`'s SQL), both on
/// the sheet's connection.
fn project(dir: &std::path::Path, conn: (i64, &str), model: &str, csv: &str) {
    std::fs::create_dir_all(dir.join("seeds")).expect("dirs");
    std::fs::write(dir.join("seeds/raw_customers.csv"), csv).expect("csv");
    let doc = format!(
        r#"{{
  version: 1
  transformationData: {{
    folders: [ {{ id: 70, path: "/seed" }} ]
    connections: [ {{ id: {id}, name: "dw", type: "{kind}" }} ]
    sheets: [
      {{
        id: 71
        attributes: {{ name: "load", folder_id: 70, folder: "/seed", connection: "dw" }}
        nodes: [
          {{ id: 711, type: 0, attributes: {{ module: "Seed", name: "customers", file: "seeds/raw_customers.csv" }} }}
          {{
            id: 712
            type: 0
            attributes: {{
              module: Sql
              name: model
              action: '''
                {model}
                '''
            }}
          }}
        ]
      }}
    ]
  }}
}}
"#,
        id = conn.0,
        kind = conn.1,
    );
    std::fs::write(dir.join("load.dsr"), doc).expect("dsr");
}

/// A server with SQLite connection 5 (`dw.db` in its home: answered) and the project of
/// [`project`] on it, with `model` (its directory: answered).
fn on_sqlite(model: &str) -> (Weft, std::path::PathBuf, std::path::PathBuf) {
    let w = Weft::start();
    let data = w.home.path().join("dw.db");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    let dir = w.home.path().join("project");
    project(&dir, (5, "sqlite"), model, CUSTOMERS);
    (w, data, dir)
}

/// `weft ARGS` in `w`'s home: exit code, standard output and error.
fn weft(w: &Weft, args: &[&str]) -> (Option<i32>, String, String) {
    w.cli(args)
}

/// `weft deploy PATH` to `w`.
fn deploy(w: &Weft, path: &str) -> (Option<i32>, String, String) {
    weft(w, &["deploy", path, "--url", &w.url])
}

/// The log of action `id` of an instance, as one text.
fn log_of(inst: &Value, id: i64) -> String {
    inst["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["actionId"] == id))
        .map(|a| a["log"].to_string())
        .unwrap_or_default()
}

#[test]
fn a_csv_seed_of_a_project_loads_into_sqlite_before_its_model_and_again_only_when_changed() {
    let (w, data, dir) = on_sqlite(
        "DROP TABLE IF EXISTS customers; CREATE TABLE customers AS SELECT id, first_name AS name, signup, score, vip FROM raw_customers",
    );
    let path = dir.to_str().expect("path");
    let (code, out, err) = deploy(&w, path);
    assert_eq!(code, Some(0), "{out}{err}");
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert!(
        log_of(&inst, 711)
            .contains("\\\"raw_customers\\\" made and loaded: 3 rows from seeds/raw_customers.csv"),
        "{inst}"
    );
    let types = rows(
        &data,
        "SELECT name || ' ' || type FROM pragma_table_info('raw_customers') ORDER BY cid",
    );
    assert_eq!(
        types,
        [
            "id INTEGER",
            "first_name TEXT",
            "signup DATE",
            "score REAL",
            "vip BOOLEAN"
        ]
    );
    assert_eq!(
        rows(
            &data,
            "SELECT id || '|' || name || '|' || ifnull(score, '-') || '|' || ifnull(vip, '-') FROM customers ORDER BY id"
        ),
        ["1|Michael|1.5|1", "2|Shawn|-|0", "3|Kathleen, Jr.|7.0|-"]
    );
    // Again: the seed is not loaded again; the model runs after it as before.
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert!(log_of(&inst, 711).contains("not loaded again"), "{inst}");
    // The file changes: deployed and loaded again.
    std::fs::write(
        dir.join("seeds/raw_customers.csv"),
        format!("{CUSTOMERS}4,Ann,2018-02-01,2,true\n"),
    )
    .expect("csv");
    let (code, out, err) = deploy(&w, path);
    assert_eq!(code, Some(0), "{out}{err}");
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert!(log_of(&inst, 711).contains("4 rows"), "{inst}");
    assert_eq!(rows(&data, "SELECT count(*) FROM customers"), ["4"]);
    // A mistake in the CSV: refused at its line and column in the CSV, by `weft check` the
    // same; the repository keeps the last good file (the next run does not load again).
    std::fs::write(
        dir.join("seeds/raw_customers.csv"),
        format!("{CUSTOMERS}4,Ann,2018-02-01,2,true\n5,Bo\n"),
    )
    .expect("csv");
    let (code, out, err) = deploy(&w, path);
    assert_eq!(code, Some(1), "{out}{err}");
    let expected = format!(
        "{}:6:1: action 711: this record has 2 fields; the header has 5 (transformationData.sheets[0].nodes[0].attributes.action) [Seed.data]",
        dir.join("seeds/raw_customers.csv").display()
    );
    assert!(err.lines().any(|l| l == expected), "{err}");
    let (code, _, cerr) = weft(&w, &["check", path]);
    assert_eq!(code, Some(1), "{cerr}");
    assert!(cerr.lines().any(|l| l == expected), "{cerr}");
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert!(log_of(&inst, 711).contains("not loaded again"), "{inst}");
    // A file the project does not have: the client says which and where it is named.
    std::fs::remove_file(dir.join("seeds/raw_customers.csv")).expect("rm");
    let (code, _, err) = deploy(&w, path);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("load.dsr: `file: seeds/raw_customers.csv`: cannot read"),
        "{err}"
    );
}

#[test]
fn a_single_document_sends_its_files_and_a_document_without_them_is_refused_at_file() {
    let (w, data, dir) = on_sqlite("CREATE VIEW IF NOT EXISTS v AS SELECT * FROM raw_customers");
    let file = dir.join("load.dsr");
    let (code, out, err) = deploy(&w, file.to_str().expect("path"));
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(run_sheet_to_end(&w, "/seed/load")["state"], "finished");
    assert_eq!(rows(&data, "SELECT count(*) FROM raw_customers"), ["3"]);
    // DeployRepository carries no files: `file` is refused at its place.
    let text = std::fs::read_to_string(&file).expect("dsr");
    let (st, v) = post(&w.url, deploy_body(&text));
    assert_eq!(st, 422, "{v}");
    let d = &v["error"]["details"][0];
    assert_eq!(d["code"], "action.file", "{v}");
    assert_eq!(d["line"], 11, "{v}");
    // A project whose file climbs above its top, or that names a file the deploy does not
    // carry.
    let (st, v) = command(
        &w,
        "DeployProject",
        json!({"documents": [{"name": "a/load.dsr", "content": text.replace("seeds/raw", "../../raw")}]}),
    );
    assert_eq!(st, 422, "{v}");
    assert!(
        v["error"]["details"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("above the project's top folder")),
        "{v}"
    );
    let (st, v) = command(
        &w,
        "DeployProject",
        json!({"documents": [{"name": "a/load.dsr", "content": text}], "files": [{"name": "seeds/raw_customers.csv", "content": CUSTOMERS}]}),
    );
    assert_eq!(st, 422, "{v}");
    assert!(
        v["error"]["details"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains(
                "names a/seeds/raw_customers.csv of the project, which this deploy does not carry"
            )),
        "{v}"
    );
}

#[test]
fn a_seed_loads_into_postgresql_with_dbts_types_and_views_on_it_stay_while_its_columns_do() {
    let pg = Postgres::start().expect("PostgreSQL");
    let w = Weft::start();
    w.add_keys(&format!(
        "7|postgresql|postgresql://127.0.0.1:{}/weft|weft|secret|sslmode=disable\n",
        pg.port
    ));
    let dir = w.home.path().join("project");
    let model = "CREATE OR REPLACE VIEW stg_customers AS SELECT id, first_name FROM raw_customers";
    project(&dir, (7, "postgresql"), model, CUSTOMERS);
    let path = dir.to_str().expect("path");
    let (code, out, err) = deploy(&w, path);
    assert_eq!(code, Some(0), "{out}{err}");
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        pg.psql("SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY ordinal_position) FROM information_schema.columns WHERE table_name = 'raw_customers'")
            .expect("types"),
        "id integer, first_name text, signup date, score double precision, vip boolean"
    );
    assert_eq!(
        pg.psql("SELECT string_agg(concat_ws('|', id, first_name, signup, score, vip), ';' ORDER BY id) FROM raw_customers").expect("rows"),
        "1|Michael|2018-01-01|1.5|t;2|Shawn|2018-01-02|f;3|Kathleen, Jr.|2018-01-03|7"
    );
    let view = || {
        pg.psql("SELECT 'stg_customers'::regclass::oid")
            .expect("view")
    };
    let first = view();
    // Again: not loaded.
    assert!(log_of(&run_sheet_to_end(&w, "/seed/load"), 711).contains("not loaded again"));
    // Other rows, the same columns: emptied and loaded; the view is the same one.
    std::fs::write(
        dir.join("seeds/raw_customers.csv"),
        CUSTOMERS.replace("Michael", "Mike"),
    )
    .expect("csv");
    assert_eq!(deploy(&w, path).0, Some(0));
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert!(
        log_of(&inst, 711).contains("emptied and loaded again: 3 rows"),
        "{inst}"
    );
    assert_eq!(view(), first);
    assert_eq!(
        pg.psql("SELECT first_name FROM stg_customers WHERE id = 1")
            .expect("view"),
        "Mike"
    );
    // Another column: the table is made again (the view with it), and the model after it in
    // the same run makes the view again.
    std::fs::write(
        dir.join("seeds/raw_customers.csv"),
        "id,first_name,signup,score,vip,note\n\
         1,Michael,2018-01-01,1.5,true,x\n\
         2,Shawn,2018-01-02,,false,y\n\
         3,\"Kathleen, Jr.\",2018-01-03,7,,\n",
    )
    .expect("csv");
    let (code, out, err) = weft(&w, &["check", path]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(deploy(&w, path).0, Some(0));
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert!(
        log_of(&inst, 711).contains("made again (its columns changed)"),
        "{inst}"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM stg_customers").expect("view"),
        "3"
    );
    assert!(
        pg.psql("SELECT obj_description('raw_customers'::regclass, 'pg_class')")
            .expect("comment")
            .starts_with("weft seed sha256:")
    );
}

#[test]
fn a_models_sql_read_from_its_file_is_checked_at_its_own_line_and_runs() {
    let (w, data, dir) = on_sqlite("SELECT 1 FROM raw_customers");
    let doc = std::fs::read_to_string(dir.join("load.dsr")).expect("dsr");
    let start = doc.find("action: '''").expect("action");
    let end = doc[start..].find("'''\n            }").expect("end") + start + 3;
    std::fs::write(
        dir.join("load.dsr"),
        format!("{}file: models/customers.sql{}", &doc[..start], &doc[end..]),
    )
    .expect("dsr");
    std::fs::create_dir_all(dir.join("models")).expect("models");
    let sql = dir.join("models/customers.sql");
    std::fs::write(
        &sql,
        "-- customers, one row each\nCREATE TABLE customers AS\n  SELECT id, first_name FROM raw_customers WHERE = 1\n",
    )
    .expect("sql");
    let path = dir.to_str().expect("path");
    let (code, _, err) = deploy(&w, path);
    assert_eq!(code, Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.ends_with("[sql.syntax]"))
        .unwrap_or_default();
    assert!(line.starts_with(&format!("{}:3:", sql.display())), "{err}");
    std::fs::write(
        &sql,
        "-- customers, one row each\nCREATE TABLE customers AS\n  SELECT id, first_name FROM raw_customers\n",
    )
    .expect("sql");
    let (code, out, err) = deploy(&w, path);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(run_sheet_to_end(&w, "/seed/load")["state"], "finished");
    assert_eq!(rows(&data, "SELECT count(*) FROM customers"), ["3"]);
    // The export holds the text, not the file's name.
    let (st, v) = command(&w, "ExportRepository", json!({}));
    assert_eq!(st, 200, "{v}");
    let all = v["payload"].to_string();
    assert!(all.contains("CREATE TABLE customers AS"), "{all}");
    assert!(!all.contains("models/customers.sql"), "{all}");
}

#[test]
fn a_path_on_the_server_is_read_only_below_the_directories_it_allows() {
    let allowed = tempfile::tempdir().expect("allowed");
    let elsewhere = tempfile::tempdir().expect("elsewhere");
    for d in [allowed.path(), elsewhere.path()] {
        std::fs::write(d.join("raw_customers.csv"), CUSTOMERS).expect("csv");
    }
    let w = Weft::start_with(
        &["--listen", "127.0.0.1:0"],
        &[("WEFT_SEED_DIRS", allowed.path().to_str().expect("dir"))],
    );
    let data = w.home.path().join("dw.db");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    let doc = |path: &std::path::Path| {
        json!({"version": 1, "transformationData": {
            "folders": [{"path": "/seed"}],
            "connections": [{"id": 5, "name": "dw", "type": "sqlite"}],
            "sheets": [{"attributes": {"name": "load", "folder": "/seed", "connection": "dw"},
                "nodes": [{"attributes": {"module": "Seed", "name": "customers", "path": path.display().to_string()}}]}]}})
        .to_string()
    };
    let (st, v) = post(
        &w.url,
        deploy_body(&doc(&elsewhere.path().join("raw_customers.csv"))),
    );
    assert_eq!(st, 422, "{v}");
    assert!(
        v["error"]["details"][0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("lies in none of the directories seeds may read")),
        "{v}"
    );
    let (st, v) = post(
        &w.url,
        deploy_body(&doc(&allowed.path().join("raw_customers.csv"))),
    );
    assert_eq!(st, 200, "{v}");
    let inst = run_sheet_to_end(&w, "/seed/load");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(rows(&data, "SELECT count(*) FROM raw_customers"), ["3"]);
}
