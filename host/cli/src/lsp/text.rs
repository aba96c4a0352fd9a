//! Places in a text as the language server protocol counts them (a line from 0 and a column
//! in UTF-16 code units) and as weft does (byte offsets; a line and a column in characters,
//! from 1), and the word a cursor stands on.

use lsp_types::Position;

/// The line starts of one text.
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    /// Indexes `text` (a line ends at `\n`).
    pub fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// The text of line `line` (from 0) without its line end; empty past the end.
    fn line(&self, line: usize) -> &'a str {
        let Some(&start) = self.starts.get(line) else {
            return "";
        };
        let end = self
            .starts
            .get(line + 1)
            .map_or(self.text.len(), |next| next - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// The byte offset of `p` (clamped to its line and to the text).
    pub fn offset(&self, p: Position) -> usize {
        let line = p.line as usize;
        let Some(&start) = self.starts.get(line) else {
            return self.text.len();
        };
        let mut units = 0u32;
        for (i, c) in self.line(line).char_indices() {
            if units >= p.character {
                return start + i;
            }
            units += u32::try_from(c.len_utf16()).unwrap_or(2);
        }
        start + self.line(line).len()
    }

    /// The position of byte offset `offset`.
    pub fn position(&self, offset: usize) -> Position {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let mut end = offset;
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let character = self.text[start..end].encode_utf16().count();
        Position::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(character).unwrap_or(u32::MAX),
        )
    }

    /// The position of weft's line and column (from 1, the column in characters).
    pub fn from_weft(&self, line: u32, column: u32) -> Position {
        let index = line.saturating_sub(1) as usize;
        let character: usize = self
            .line(index)
            .chars()
            .take(column.saturating_sub(1) as usize)
            .map(char::len_utf16)
            .sum();
        Position::new(
            u32::try_from(index).unwrap_or(u32::MAX),
            u32::try_from(character).unwrap_or(u32::MAX),
        )
    }
}

/// Whether `c` belongs to a name as SQL and HJSON keys write it.
fn in_name(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The byte range of the name the byte `offset` of `text` stands on or just after (letters,
/// digits, `_`, `$`), if any.
pub fn name_at(text: &str, offset: usize) -> Option<(usize, usize)> {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let start = text[..offset]
        .char_indices()
        .rev()
        .take_while(|(_, c)| in_name(*c))
        .last()
        .map_or(offset, |(i, _)| i);
    let end = text[offset..]
        .char_indices()
        .find(|(_, c)| !in_name(*c))
        .map_or(text.len(), |(i, _)| offset + i);
    (start < end).then_some((start, end))
}

/// The name before the one at `start` when a dot joins them (`sales.orders`: the schema of
/// `orders`), quotes taken off.
pub fn qualifier(text: &str, start: usize) -> Option<&str> {
    let before = &text[..start];
    let before = before.strip_suffix('"').unwrap_or(before);
    let before = before.strip_suffix('.')?;
    let before = before.strip_suffix('"').unwrap_or(before);
    let from = before
        .char_indices()
        .rev()
        .take_while(|(_, c)| in_name(*c))
        .last()
        .map(|(i, _)| i)?;
    Some(&before[from..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_weft_columns_count_characters() {
        let text = "ab\r\nä😀x = 1\nlast";
        let lines = Lines::new(text);
        // `x` is byte 4 + 2 + 4 = 10 of the text; 3 characters, 4 UTF-16 units into line 1.
        let x = text.find('x').expect("x");
        assert_eq!(lines.position(x), Position::new(1, 3));
        assert_eq!(lines.offset(Position::new(1, 3)), x);
        assert_eq!(lines.from_weft(2, 3), Position::new(1, 3));
        // Past the line's end: its end; past the text: the end.
        assert_eq!(lines.offset(Position::new(0, 99)), 2);
        assert_eq!(lines.offset(Position::new(9, 0)), text.len());
        assert_eq!(lines.position(text.len()), Position::new(2, 4));
    }

    #[test]
    fn the_name_under_the_cursor_and_its_qualifier() {
        let sql = "SELECT * FROM sales.\"orders\" o JOIN ä_b ON 1";
        let at = sql.find("orders").expect("orders") + 2;
        let (s, e) = name_at(sql, at).expect("a name");
        assert_eq!(&sql[s..e], "orders");
        assert_eq!(qualifier(sql, s), Some("sales"));
        assert_eq!(qualifier(sql, sql.find("sales").expect("sales")), None);
        let plain = "FROM sales.orders";
        let (s, e) = name_at(plain, plain.len()).expect("at the end");
        assert_eq!(
            (&plain[s..e], qualifier(plain, s)),
            ("orders", Some("sales"))
        );
        let (s, e) = name_at(sql, sql.find("ä_b").expect("x") + 1).expect("inside ä");
        assert_eq!(&sql[s..e], "ä_b");
        assert_eq!(name_at("a + b", 2), None);
    }
}
