//! `.env` loading: the file named by `IGGY_ENV_PATH`, otherwise `./.env`
//! when present. Lines are `KEY=VALUE` (optionally prefixed by `export`),
//! blank lines and `#` comments are skipped, values may be single- or
//! double-quoted, and a variable already set is never overridden.

use std::path::{Path, PathBuf};

use super::error::ConfigError;

pub(crate) const ENV_PATH_VARIABLE: &str = "IGGY_ENV_PATH";
const DEFAULT_DOTENV_FILE: &str = ".env";
const EXPORT_PREFIX: &str = "export ";

/// Reads the dotenv file into `env` without overriding set variables and
/// returns the file read, if any. A missing `./.env` is fine; a missing file
/// named by `IGGY_ENV_PATH` is an error.
pub fn load_dotenv(
    env: &mut Vec<(String, String)>,
    cwd: &Path,
) -> Result<Option<PathBuf>, ConfigError> {
    let explicit = env
        .iter()
        .rev()
        .find(|(name, value)| name == ENV_PATH_VARIABLE && !value.is_empty())
        .map(|(_, value)| cwd.join(value));
    let path = match explicit {
        Some(path) => path,
        None => {
            let default = cwd.join(DEFAULT_DOTENV_FILE);
            if !default.is_file() {
                return Ok(None);
            }
            default
        }
    };
    let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
        path: path.clone(),
        source,
    })?;
    for (name, value) in parse_dotenv(&text, &path)? {
        if !env.iter().any(|(existing, _)| *existing == name) {
            env.push((name, value));
        }
    }
    Ok(Some(path))
}

/// Parses dotenv text into pairs, in file order.
pub(crate) fn parse_dotenv(text: &str, path: &Path) -> Result<Vec<(String, String)>, ConfigError> {
    let mut pairs = Vec::new();
    for (index, raw_line) in text.lines().enumerate() {
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let error = |reason: &str| ConfigError::Dotenv {
            path: path.to_owned(),
            line: index + 1,
            reason: reason.to_owned(),
        };
        let line = line
            .strip_prefix(EXPORT_PREFIX)
            .map_or(line, str::trim_start);
        let (name, value) = line
            .split_once('=')
            .ok_or_else(|| error("expected KEY=VALUE"))?;
        let name = name.trim();
        let valid_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !valid_name {
            return Err(error("malformed variable name"));
        }
        pairs.push((name.to_owned(), parse_value(value.trim()).map_err(error)?));
    }
    Ok(pairs)
}

fn parse_value(value: &str) -> Result<String, &'static str> {
    if let Some(rest) = value.strip_prefix('\'') {
        let (inner, tail) = rest.split_once('\'').ok_or("unterminated single quote")?;
        return trailing_comment_only(tail)
            .then(|| inner.to_owned())
            .ok_or("text after closing quote");
    }
    if let Some(rest) = value.strip_prefix('"') {
        return parse_double_quoted(rest);
    }
    // An unquoted value ends at a ` #` comment.
    let end = value.find(" #").unwrap_or(value.len());
    Ok(value[..end].trim_end().to_owned())
}

fn parse_double_quoted(rest: &str) -> Result<String, &'static str> {
    let mut value = String::new();
    let mut chars = rest.char_indices();
    while let Some((position, c)) = chars.next() {
        match c {
            '"' => {
                let tail = &rest[position + 1..];
                return trailing_comment_only(tail)
                    .then_some(value)
                    .ok_or("text after closing quote");
            }
            '\\' => match chars.next().map(|(_, escaped)| escaped) {
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some(other) => value.push(other),
                None => return Err("unterminated double quote"),
            },
            other => value.push(other),
        }
    }
    Err("unterminated double quote")
}

fn trailing_comment_only(tail: &str) -> bool {
    let tail = tail.trim();
    tail.is_empty() || tail.starts_with('#')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_dotenv_text_when_parsing_should_handle_comments_quotes_and_export() {
        let text = "# comment\n\nIGGY_TCP_ADDRESS=127.0.0.1:0\nexport A = 'x # y' # note\n\
                    B=\"line\\nnext \\\"q\\\"\"\nC=plain value # trailing\nD=\n";
        let pairs = parse_dotenv(text, Path::new(".env")).expect("valid dotenv");
        let expected = [
            ("IGGY_TCP_ADDRESS", "127.0.0.1:0"),
            ("A", "x # y"),
            ("B", "line\nnext \"q\""),
            ("C", "plain value"),
            ("D", ""),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        assert_eq!(pairs, expected);
    }

    #[test]
    fn given_malformed_lines_when_parsing_should_name_the_line() {
        for (text, line) in [("OK=1\nNOT A PAIR\n", 2), ("A=\"open\n", 1), ("1X=2\n", 1)] {
            match parse_dotenv(text, Path::new(".env")) {
                Err(ConfigError::Dotenv { line: reported, .. }) => {
                    assert_eq!(reported, line, "{text}")
                }
                other => panic!("expected a dotenv error for {text:?}, got {other:?}"),
            }
        }
    }

    #[test]
    fn given_dotenv_file_when_loading_should_never_override_set_variables() {
        let directory = tempfile::tempdir().expect("temp dir");
        std::fs::write(directory.path().join(".env"), "IGGY_A=file\nIGGY_B=file\n")
            .expect("write .env");
        let mut env = vec![("IGGY_A".to_owned(), "process".to_owned())];
        let loaded = load_dotenv(&mut env, directory.path()).expect("loads");
        assert_eq!(loaded, Some(directory.path().join(".env")));
        assert_eq!(
            env,
            [
                ("IGGY_A".to_owned(), "process".to_owned()),
                ("IGGY_B".to_owned(), "file".to_owned())
            ]
        );
    }

    #[test]
    fn given_missing_files_when_loading_should_skip_default_and_refuse_explicit() {
        let directory = tempfile::tempdir().expect("temp dir");
        let mut env = Vec::new();
        assert_eq!(
            load_dotenv(&mut env, directory.path()).expect("no default file"),
            None
        );
        let mut env = vec![(ENV_PATH_VARIABLE.to_owned(), "missing.env".to_owned())];
        assert!(load_dotenv(&mut env, directory.path()).is_err());
    }
}
