//! Resolution of the root user's credentials for its first creation
//! (spec: configuration §5).
//!
//! `IGGY_ROOT_USERNAME` and `IGGY_ROOT_PASSWORD` come together or not at all.
//! `--with-default-root-credentials` fills in `iggy` for whichever is unset.
//! With neither, single-node servers generate a random password that is
//! logged once. Everything here runs before any shard thread starts.

use rand::Rng;
use rand::distr::Alphanumeric;

pub const ROOT_USERNAME_VAR: &str = "IGGY_ROOT_USERNAME";
pub const ROOT_PASSWORD_VAR: &str = "IGGY_ROOT_PASSWORD";
pub const DEFAULT_ROOT_USERNAME: &str = "iggy";
pub const DEFAULT_ROOT_PASSWORD: &str = "iggy";
const USERNAME_BYTES: std::ops::RangeInclusive<usize> = 3..=50;
const PASSWORD_BYTES: std::ops::RangeInclusive<usize> = 3..=100;
const GENERATED_PASSWORD_CHARS: std::ops::RangeInclusive<usize> = 20..=39;

/// Credentials to use if the root user has to be created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootCredentials {
    pub username: String,
    pub password: String,
    /// True when the password was generated and must be shown once.
    pub generated: bool,
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RootCredentialsError {
    #[error("{set} is set but {missing} is not: set both root credentials or neither")]
    Incomplete {
        set: &'static str,
        missing: &'static str,
    },
    #[error("{var} must be {min} to {max} bytes long, got {len}")]
    BadLength {
        var: &'static str,
        len: usize,
        min: usize,
        max: usize,
    },
    #[error(
        "cluster mode needs explicit root credentials ({ROOT_USERNAME_VAR} and {ROOT_PASSWORD_VAR}) on a fresh replica, so every replica creates the same root user"
    )]
    ClusterNeedsExplicit,
}

fn get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

/// Applies `--with-default-root-credentials`: fills the unset variables with
/// `iggy`. Returns a warning when the flag had nothing to do.
pub fn apply_default_flag(env: &mut Vec<(String, String)>) -> Option<String> {
    let has_user = get(env, ROOT_USERNAME_VAR).is_some();
    let has_pass = get(env, ROOT_PASSWORD_VAR).is_some();
    if has_user && has_pass {
        return Some(format!(
            "--with-default-root-credentials ignored: {ROOT_USERNAME_VAR} and {ROOT_PASSWORD_VAR} are both set"
        ));
    }
    if !has_user {
        env.push((
            ROOT_USERNAME_VAR.to_owned(),
            DEFAULT_ROOT_USERNAME.to_owned(),
        ));
    }
    if !has_pass {
        env.push((
            ROOT_PASSWORD_VAR.to_owned(),
            DEFAULT_ROOT_PASSWORD.to_owned(),
        ));
    }
    None
}

/// Resolves the credentials from the environment.
pub fn resolve(
    env: &[(String, String)],
    cluster_enabled: bool,
) -> Result<RootCredentials, RootCredentialsError> {
    match (get(env, ROOT_USERNAME_VAR), get(env, ROOT_PASSWORD_VAR)) {
        (Some(username), Some(password)) => {
            check_len(ROOT_USERNAME_VAR, username, USERNAME_BYTES)?;
            check_len(ROOT_PASSWORD_VAR, password, PASSWORD_BYTES)?;
            Ok(RootCredentials {
                username: username.to_owned(),
                password: password.to_owned(),
                generated: false,
            })
        }
        (Some(_), None) => Err(RootCredentialsError::Incomplete {
            set: ROOT_USERNAME_VAR,
            missing: ROOT_PASSWORD_VAR,
        }),
        (None, Some(_)) => Err(RootCredentialsError::Incomplete {
            set: ROOT_PASSWORD_VAR,
            missing: ROOT_USERNAME_VAR,
        }),
        (None, None) if cluster_enabled => Err(RootCredentialsError::ClusterNeedsExplicit),
        (None, None) => Ok(RootCredentials {
            username: DEFAULT_ROOT_USERNAME.to_owned(),
            password: generate_password(),
            generated: true,
        }),
    }
}

fn check_len(
    var: &'static str,
    value: &str,
    allowed: std::ops::RangeInclusive<usize>,
) -> Result<(), RootCredentialsError> {
    if allowed.contains(&value.len()) {
        Ok(())
    } else {
        Err(RootCredentialsError::BadLength {
            var,
            len: value.len(),
            min: *allowed.start(),
            max: *allowed.end(),
        })
    }
}

fn generate_password() -> String {
    let mut rng = rand::rng();
    let len = rng.random_range(GENERATED_PASSWORD_CHARS);
    (0..len)
        .map(|_| char::from(rng.sample(Alphanumeric)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn given_both_vars_when_resolving_should_use_them() {
        let creds = resolve(
            &env(&[(ROOT_USERNAME_VAR, "admin"), (ROOT_PASSWORD_VAR, "secret")]),
            false,
        )
        .unwrap();
        assert_eq!(
            (
                creds.username.as_str(),
                creds.password.as_str(),
                creds.generated
            ),
            ("admin", "secret", false)
        );
    }

    #[test]
    fn given_one_var_when_resolving_should_refuse_either_way() {
        assert!(matches!(
            resolve(&env(&[(ROOT_USERNAME_VAR, "admin")]), false),
            Err(RootCredentialsError::Incomplete {
                missing: ROOT_PASSWORD_VAR,
                ..
            })
        ));
        assert!(matches!(
            resolve(&env(&[(ROOT_PASSWORD_VAR, "secret")]), false),
            Err(RootCredentialsError::Incomplete {
                missing: ROOT_USERNAME_VAR,
                ..
            })
        ));
    }

    #[test]
    fn given_out_of_range_lengths_when_resolving_should_name_the_variable() {
        let err = resolve(
            &env(&[(ROOT_USERNAME_VAR, "ab"), (ROOT_PASSWORD_VAR, "secret")]),
            false,
        )
        .unwrap_err();
        assert!(err.to_string().contains(ROOT_USERNAME_VAR), "{err}");
    }

    #[test]
    fn given_nothing_when_resolving_should_generate_a_password_once() {
        let creds = resolve(&[], false).unwrap();
        assert!(creds.generated);
        assert_eq!(creds.username, "iggy");
        assert!(GENERATED_PASSWORD_CHARS.contains(&creds.password.len()));
        assert!(creds.password.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(
            resolve(&[], true),
            Err(RootCredentialsError::ClusterNeedsExplicit)
        );
    }

    #[test]
    fn given_default_flag_when_applying_should_fill_only_missing() {
        let mut vars = env(&[(ROOT_PASSWORD_VAR, "mine")]);
        assert!(apply_default_flag(&mut vars).is_none());
        let creds = resolve(&vars, false).unwrap();
        assert_eq!(
            (creds.username.as_str(), creds.password.as_str()),
            ("iggy", "mine")
        );
        let mut both = env(&[(ROOT_USERNAME_VAR, "a_user"), (ROOT_PASSWORD_VAR, "mine")]);
        assert!(apply_default_flag(&mut both).is_some());
    }
}
