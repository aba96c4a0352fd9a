#!/usr/bin/env python3
"""MinRows: a weft process module (docs/process-modules.md) in plain Python.

weft starts this program once per request, writes one JSON request to its standard input
and reads one JSON answer from its standard output. `validate` comes at deploy: the answer
lists problems (with byte offsets where they point into a text) and the tables the action
reads. `run` comes at run time with the key file entries of the action's connections: this
module opens the SQLite files itself, counts each source's rows and fails when one holds
fewer than `minRows`.
"""

import json
import sqlite3
import sys


def validate(request):
    problems = []
    min_rows = request["action"]["attributes"].get("minRows", 1)
    if not isinstance(min_rows, int) or min_rows < 0:
        problems.append({
            "severity": "error",
            "code": "minRows",
            "message": f"minRows must be 0 or more, found {min_rows}",
            "attribute": "minRows",
        })
    for source in request["sources"]:
        if source["dialect"] not in ("sqlite", "unknown"):
            problems.append({
                "severity": "error",
                "code": "source",
                "message": f"MinRows reads SQLite connections only; {source['name']} is on a {source['dialect']} one",
            })
    reads = [{"schema": s["schema"], "name": s["name"]} for s in request["sources"]]
    return {"problems": problems, "reads": reads}


def quote(name):
    return '"' + name.replace('"', '""') + '"'


def run(request):
    min_rows = request["action"]["attributes"].get("minRows", 1)
    messages, total = [], 0
    for source in request["sources"]:
        entry = request["connections"][str(source["connectionId"])]
        if entry["type"] != "sqlite":
            return {"state": "failed", "error": f"connection {source['connectionId']} is not SQLite"}
        table = quote(source["name"])
        if source["schema"]:
            table = quote(source["schema"]) + "." + table
        with sqlite3.connect(entry["url"]) as db:
            (count,) = db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()
        total += count
        messages.append(f"{source['name']}: {count} row(s)")
        if count < min_rows:
            return {
                "state": "failed",
                "rowsRead": total,
                "messages": messages,
                "error": f"{source['name']} holds {count} row(s), fewer than minRows {min_rows}",
            }
    return {"state": "finished", "rowsRead": total, "messages": messages}


def main():
    request = json.load(sys.stdin)
    if request.get("weftModuleProtocol") != 1:
        print(f"unknown protocol {request.get('weftModuleProtocol')}", file=sys.stderr)
        return 2
    answer = validate(request) if request["request"] == "validate" else run(request)
    json.dump(answer, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
