//! "Did you mean" suggestions: the valid names closest to a misspelled one
//! by edit distance (Levenshtein), at most [`SUGGESTIONS_MAX`] of them.

/// Suggestions offered for one unknown name.
pub(crate) const SUGGESTIONS_MAX: usize = 3;
/// A candidate is similar when its distance is at most this share of the
/// unknown name's length (one edit per three characters) ...
const DISTANCE_PER_CHARS: usize = 3;
/// ... but never less than this, so short names still get suggestions.
const DISTANCE_FLOOR: usize = 2;

/// Up to [`SUGGESTIONS_MAX`] candidates similar to `name`, closest first.
pub(crate) fn similar_names<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let distance_max = (name.chars().count() / DISTANCE_PER_CHARS).max(DISTANCE_FLOOR);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|candidate| candidate.len().abs_diff(name.len()) <= distance_max)
        .map(|candidate| (edit_distance(name, candidate), candidate))
        .filter(|(distance, _)| *distance <= distance_max)
        .collect();
    scored.sort();
    scored.dedup();
    scored
        .into_iter()
        .take(SUGGESTIONS_MAX)
        .map(|(_, candidate)| candidate.to_owned())
        .collect()
}

/// Levenshtein distance over characters, with a single rolling row.
pub(crate) fn edit_distance(left: &str, right: &str) -> usize {
    let right: Vec<char> = right.chars().collect();
    let mut row: Vec<usize> = (0..=right.len()).collect();
    for (i, left_char) in left.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, right_char) in right.iter().enumerate() {
            let substitution = diagonal + usize::from(left_char != *right_char);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[right.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_word_pairs_when_measuring_should_count_edits() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("adress", "address"), 1);
        assert_eq!(edit_distance("abc", ""), 3);
    }

    #[test]
    fn given_misspelling_when_suggesting_should_return_closest_first_at_most_three() {
        let candidates = [
            "IGGY_TCP_ADDRESS",
            "IGGY_QUIC_ADDRESS",
            "IGGY_HTTP_ADDRESS",
            "IGGY_TCP_ENABLED",
        ];
        let suggestions = similar_names("IGGY_TCP_ADRESS", candidates);
        assert_eq!(suggestions[0], "IGGY_TCP_ADDRESS");
        assert!(suggestions.len() <= SUGGESTIONS_MAX);
        assert!(similar_names("IGGY_SOMETHING_ELSE_ENTIRELY", candidates).is_empty());
    }
}
