//! Where a driver's error points in the action's text. Drivers say it in their own words
//! about the one statement they were sent: PostgreSQL's `Position: N` (characters from 1),
//! H2's `[*]` marker inside the statement it quotes, Derby's `at line L, column C`. The
//! bridge sends a script one statement at a time, so the statement is known; its place is
//! said as a line and column of the whole text, with the statement quoted and the offset
//! in it, in the words the native SQLite and PostgreSQL connections use. A driver that says
//! no place (HSQLDB, SQLite's) gets the statement's own place.

use std::ops::Range;

/// The offset in characters, from 0, that `message` points at in `statement`.
pub fn position_in(message: &str, statement: &str) -> Option<usize> {
    let chars = statement.chars().count();
    // PostgreSQL: "...\n  Position: 10", counting characters from 1.
    if let Some(at) = message.rfind("Position: ") {
        let digits: String = message[at + 10..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Ok(p) = digits.parse::<usize>()
            && (1..=chars).contains(&p)
        {
            return Some(p - 1);
        }
    }
    // H2: `Syntax error in SQL statement "SELECT * [*]FORM T"`: the statement quoted (a
    // line end written `\000a`, a quote doubled) with a marker at the place; the quote that
    // opens it is the first whose text up to the marker begins the statement.
    if let Some(marker) = message.find("[*]") {
        let before = &message[..marker];
        for (q, _) in before.match_indices('"') {
            let quoted = h2_unquote(&before[q + 1..]);
            if statement.starts_with(&quoted) {
                return Some(quoted.chars().count());
            }
        }
    }
    // Derby and others: "at line 2, column 7".
    if let Some(at) = message.rfind("line ") {
        let rest = &message[at + 5..];
        let line: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let rest = &rest[line.len()..];
        if let Some(rest) = rest.strip_prefix(", column ") {
            let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let (Ok(l), Ok(c)) = (line.parse::<usize>(), column.parse::<usize>())
                && l >= 1
                && c >= 1
            {
                let mut offset = 0;
                for (n, text) in statement.split_inclusive('\n').enumerate() {
                    if n + 1 == l {
                        let within = text.trim_end_matches('\n').chars().count();
                        return (c - 1 <= within).then_some(offset + c - 1);
                    }
                    offset += text.chars().count();
                }
            }
        }
    }
    None
}

/// H2's quoting undone: `\hhhh` is the character of that hex code, `\\` a backslash, `""`
/// a quote.
fn h2_unquote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let escaped = rest
            .strip_prefix('\\')
            .and_then(|r| r.get(..4).map(|hex| (hex, &r[4..])))
            .filter(|(hex, _)| hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .and_then(|(hex, r)| Some((char::from_u32(u32::from_str_radix(hex, 16).ok()?)?, r)));
        if let Some((ch, r)) = escaped {
            out.push(ch);
            rest = r;
        } else if let Some(r) = rest.strip_prefix("\\\\") {
            out.push('\\');
            rest = r;
        } else if let Some(r) = rest.strip_prefix("\"\"") {
            out.push('"');
            rest = r;
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The words that place a driver's error `message` about statement `index` (from 0) of
/// `count`, which lies at `range` in the whole text `sql`: appended to the message.
pub fn describe(
    message: &str,
    sql: &str,
    range: Range<usize>,
    index: usize,
    count: usize,
) -> String {
    let statement = &sql[range.clone()];
    let line_column = |at: usize| {
        let before = &sql[..at];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    };
    let position = position_in(message, statement);
    // PostgreSQL's position line is said as a line and column instead.
    let message = match message.rfind("\n  Position: ") {
        Some(i) if position.is_some() => &message[..i],
        _ => message,
    };
    match position {
        Some(chars) => {
            let within = statement
                .char_indices()
                .nth(chars)
                .map_or(statement.len(), |(i, _)| i);
            let (line, column) = line_column(range.start + within);
            // The statement from its start, at most 300 bytes before the place and after.
            let lead = statement.floor_char_boundary(within.saturating_sub(300));
            let end = statement.ceil_char_boundary((within + 300).min(statement.len()));
            format!(
                "{message} at line {line}, column {column} of the action; at offset {} in `{}`",
                statement[lead..within].chars().count(),
                &statement[lead..end]
            )
        }
        None if count == 1 => {
            let end = statement.ceil_char_boundary(600.min(statement.len()));
            format!("{message}; in `{}`", &statement[..end])
        }
        None => {
            let (line, column) = line_column(range.start);
            let end = statement.ceil_char_boundary(600.min(statement.len()));
            format!(
                "{message}; statement {} of {count}, from line {line}, column {column} of the action, in `{}`",
                index + 1,
                &statement[..end]
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_driver_s_words_give_the_place_in_the_statement() {
        let s = "SELECT *\n  FORM t";
        assert_eq!(
            position_in(
                "PSQLException [SQLState 42601]: ERROR: syntax error at or near \"FORM\"\n  Position: 12",
                s
            ),
            Some(11)
        );
        assert_eq!(
            position_in(
                "JdbcSQLSyntaxErrorException [SQLState 42001]: Syntax error in SQL statement \"SELECT *\\000a  [*]FORM t\"; expected \"FROM\"",
                s
            ),
            Some(11)
        );
        assert_eq!(
            position_in("Syntax error: Encountered \"FORM\" at line 2, column 3.", s),
            Some(11)
        );
        // Past the statement, or no place said: none.
        assert_eq!(position_in("Position: 99", s), None);
        assert_eq!(position_in("unexpected token: FORM", s), None);
        assert_eq!(position_in("at line 9, column 1", s), None);
    }

    #[test]
    fn the_place_is_said_in_the_whole_text_with_the_statement_quoted() {
        let sql = "DROP TABLE IF EXISTS t;\nCREATE TABLE t AS\n  SELECT * FORM s;";
        let ranges = weft_sql_support::statement_ranges(sql, weft_sdk::Dialect::Postgres);
        assert_eq!(
            describe(
                "ERROR: syntax error at or near \"FORM\"\n  Position: 30",
                sql,
                ranges[1].clone(),
                1,
                2
            ),
            "ERROR: syntax error at or near \"FORM\" at line 3, column 12 of the action; at offset 29 in `CREATE TABLE t AS\n  SELECT * FORM s`"
        );
        assert_eq!(
            describe("unexpected token: FORM", sql, ranges[1].clone(), 1, 2),
            "unexpected token: FORM; statement 2 of 2, from line 2, column 1 of the action, in `CREATE TABLE t AS\n  SELECT * FORM s`"
        );
    }
}
