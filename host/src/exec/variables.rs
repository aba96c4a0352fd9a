//! `${name}` variable substitution in an action's text, shared by a plain run
//! (`exec::action`) and a loop's iterations (`exec::looped`).

/// Substitutes `${name}` in `text` with the variables' values, as text; `$${` writes a
/// literal `${`.
///
/// # Errors
///
/// The name of the first variable that is not set.
pub fn substitute(text: &str, variables: &[(String, String)]) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${") {
            let Some(close) = after.find('}') else {
                out.push_str(tail);
                rest = "";
                break;
            };
            let name = &after[..close];
            match variables.iter().rev().find(|(n, _)| n == name) {
                Some((_, v)) => out.push_str(v),
                None => return Err(name.to_owned()),
            }
            rest = &after[close + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_variables_and_escapes() {
        let vars = vec![
            ("since".to_owned(), "2026-01-01".to_owned()),
            ("n".to_owned(), "5".to_owned()),
        ];
        assert_eq!(
            substitute(
                "a >= '${since}' AND b > ${n} AND c = '$${since}' AND $x",
                &vars
            ),
            Ok("a >= '2026-01-01' AND b > 5 AND c = '${since}' AND $x".to_owned())
        );
        assert_eq!(
            substitute("x = ${missing}", &vars),
            Err("missing".to_owned())
        );
    }
}
