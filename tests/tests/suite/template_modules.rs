//! Template modules end to end with the real binary on SQLite: a module defined in one
//! document (a pivot written once, with typed attributes and a loop) and deployed on its own;
//! sheets deployed later that use it, rendered at deploy and run; its mistakes refused at
//! their places; exported with the repository; deleted, after which what it rendered stays
//! and a new use is refused.

use crate::common;

use common::*;

const MODULE: &str = r#"# Pivots a measure by the values of a column: written once, used by any sheet.
{
  version: 1
  transformationData: {
    modules: [
      {
        name: "Pivot"
        description: "One column per value of `column`, summing `measure` by `key`."
        runs: "Model"
        attributes: [
          { name: "source", type: "text", required: true, description: "the table pivoted" }
          { name: "key", type: "text", required: true }
          { name: "column", type: "text", required: true }
          { name: "values", type: "text", required: true, description: "the values, comma-separated" }
          { name: "measure", type: "text", default: "amount" }
          { name: "total", type: "boolean", default: true }
        ]
        template:
          '''
          SELECT {{ key }}
          {%- for v in values | split(",") %},
                 sum(CASE WHEN {{ column }} = '{{ v | trim }}' THEN {{ measure }} ELSE 0 END) AS {{ v | trim }}_{{ measure }}
          {%- endfor %}
          {%- if total %},
                 sum({{ measure }}) AS total_{{ measure }}
          {%- endif %}
            FROM {{ source }}
           GROUP BY {{ key }}
          '''
      }
    ]
  }
}
"#;

/// A sheet of one action of `Pivot` with `attributes`.
fn sheet(attributes: &str) -> String {
    format!(
        r#"{{
  version: 1
  transformationData: {{
    folders: [{{ path: "/p" }}]
    connections: [{{ id: 5, name: "dw", type: "sqlite" }}]
    sheets: [
      {{
        attributes: {{ name: "pivots", folder: "/p", connection: "dw" }}
        nodes: [{{ attributes: {{ module: "Pivot", name: "order_payments", table: "order_payments", {attributes} }} }}]
      }}
    ]
  }}
}}
"#
    )
}

#[test]
fn a_template_module_is_deployed_used_by_a_later_sheet_run_exported_and_deleted() {
    let w = Weft::start();
    let data = w.home.path().join("dw.db");
    rusqlite::Connection::open(&data)
        .expect("db")
        .execute_batch(
            "CREATE TABLE payments (order_id INTEGER, method TEXT, amount INTEGER);
             INSERT INTO payments VALUES (1, 'coupon', 5), (1, 'card', 10), (2, 'card', 7), (2, 'gift', 1);",
        )
        .expect("raw");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    let dir = tempfile::tempdir().expect("dir");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p.to_str().expect("path").to_owned()
    };
    let module = write("pivot.dsr", MODULE);
    let (code, out, err) = w.cli(&["deploy", &module, "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");

    // A later deploy uses it; the rendered SQL is a Model's query, whose table it builds.
    let good = write(
        "pivots.dsr",
        &sheet(
            r#"source: "payments", key: "order_id", column: "method", values: "card, coupon, gift""#,
        ),
    );
    let (code, out, err) = w.cli(&["deploy", &good, "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    let inst = run_sheet_to_end(&w, "/p/pivots");
    assert_eq!(inst["state"], "finished", "{inst}");
    assert_eq!(
        common::actions::rows(
            &data,
            "SELECT order_id, card_amount, coupon_amount, gift_amount, total_amount FROM order_payments ORDER BY order_id"
        ),
        vec!["1|10|5|0|15", "2|7|0|1|8"]
    );

    // Mistakes of a use: a wrong type and a missing attribute, each at its place; nothing
    // is written.
    let bad_text = sheet(r#"source: "payments", key: "order_id", values: "card", total: "yes""#);
    let bad = write("bad.dsr", &bad_text);
    let (code, out, err) = w.cli(&["deploy", &bad, "--url", &w.url]);
    assert_eq!(code, Some(1), "{out}{err}");
    let line_of = |needle: &str| {
        bad_text[..bad_text.find(needle).expect("needle")]
            .matches('\n')
            .count()
            + 1
    };
    assert!(
        err.contains(&format!("bad.dsr:{}:", line_of("\"yes\"")))
            && err.contains("`total` of template module `Pivot` is boolean, found a string"),
        "{err}"
    );
    assert!(
        err.contains("template module `Pivot` needs attribute `column`"),
        "{err}"
    );

    // The export holds the module, in the form a deploy reads back.
    let export = tempfile::tempdir().expect("export");
    let (code, out, err) = w.cli(&[
        "export",
        export.path().to_str().expect("path"),
        "--url",
        &w.url,
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let exported =
        std::fs::read_to_string(export.path().join("_modules.dsr")).expect("_modules.dsr");
    assert!(
        exported.contains("name: \"Pivot\"")
            && exported.contains("{%- for v in values | split(\",\") %}"),
        "{exported}"
    );

    // Deleted: the sheet it rendered still runs; a new use is refused.
    let (code, out, err) = w.cli(&["delete", "--module", "Pivot", "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("module"), "{out}");
    assert_eq!(run_sheet_to_end(&w, "/p/pivots")["state"], "finished");
    let (code, _, err) = w.cli(&["deploy", &good, "--url", &w.url]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("module `Pivot` is not provided by any loaded plugin"),
        "{err}"
    );
    let (code, _, err) = w.cli(&["delete", "--module", "Pivot", "--url", &w.url]);
    assert_eq!(code, Some(4));
    assert!(err.contains("no module `Pivot`"), "{err}");
}

#[test]
fn a_project_defines_a_template_module_beside_the_sheets_that_use_it() {
    let w = Weft::start();
    let data = w.home.path().join("dw.db");
    rusqlite::Connection::open(&data)
        .expect("db")
        .execute_batch("CREATE TABLE payments (order_id INTEGER, method TEXT, amount INTEGER); INSERT INTO payments VALUES (1, 'card', 3);")
        .expect("raw");
    w.add_keys(&format!("5|sqlite|{}|||\n", data.display()));
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("pivot.dsr"), MODULE).expect("write");
    std::fs::write(
        dir.path().join("pivots.dsr"),
        sheet(r#"source: "payments", key: "order_id", column: "method", values: "card", total: false"#),
    )
    .expect("write");
    let d = dir.path().to_str().expect("path");
    let (code, out, err) = w.cli(&["check", d]);
    assert_eq!(code, Some(0), "{out}{err}");
    let (code, out, err) = w.cli(&["deploy", d, "--url", &w.url]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(run_sheet_to_end(&w, "/p/pivots")["state"], "finished");
    assert_eq!(
        common::actions::rows(&data, "SELECT * FROM order_payments"),
        vec!["1|3"],
        "no total column"
    );
}
