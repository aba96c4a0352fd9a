//! What the benches share: the median of rounds, and rounds written as a list.

/// The median of `rounds` (the upper one of an even count).
pub fn median(rounds: &[f64]) -> f64 {
    let mut v = rounds.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `rounds` in seconds with two decimals, separated by commas.
pub fn rounds(rounds: &[f64]) -> String {
    rounds
        .iter()
        .map(|t| format!("{t:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}
