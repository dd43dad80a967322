//! Route matching for the HTTP API (spec §6), without I/O: a method and a
//! path become a `Route` carrying its decoded path parameters.
//!
//! Unknown paths are `NotFound` (404) and known paths with another method
//! are `MethodNotAllowed` (405). Path segments are percent-decoded before
//! matching, so names containing reserved characters work.

use hyper::Method;

/// Every route of the API with its path parameters, still as text: the
/// handlers apply the identifier rule (numeric or name) themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Ping,
    Stats,
    Metrics,
    ClusterMetadata,
    Clients,
    Client(String),
    Options(String),
    Snapshot,
    Login,
    RefreshToken,
    Logout,
    Users,
    CreateUser,
    User(String),
    UpdateUser(String),
    DeleteUser(String),
    ChangePassword(String),
    UpdatePermissions(String),
    Tokens,
    CreateToken,
    DeleteToken(String),
    TokenLogin,
    Streams,
    CreateStream,
    Stream(String),
    UpdateStream(String),
    DeleteStream(String),
    PurgeStream(String),
    Topics(String),
    CreateTopic(String),
    Topic(String, String),
    UpdateTopic(String, String),
    DeleteTopic(String, String),
    PurgeTopic(String, String),
    CreatePartitions(String, String),
    DeletePartitions(String, String),
    DeleteSegments(String, String, String),
    Groups(String, String),
    CreateGroup(String, String),
    Group(String, String, String),
    DeleteGroup(String, String, String),
    /// Addition for the web console: a group's stored offset and lag on
    /// every partition of its topic.
    GroupOffsets(String, String, String),
    /// Addition for the web console: a partition's segments.
    Segments(String, String, String),
    GetOffset(String, String),
    StoreOffset(String, String),
    DeleteOffset(String, String, String),
    Poll(String, String),
    Send(String, String),
}

impl Route {
    /// Routes that need no credential (spec §5.1).
    pub fn is_public(&self) -> bool {
        matches!(
            self,
            Route::Ping | Route::Login | Route::RefreshToken | Route::TokenLogin
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteError {
    NotFound,
    MethodNotAllowed,
}

/// Matches a request. `metrics` is the configured metrics path, if enabled.
pub fn route(method: &Method, path: &str, metrics: Option<&str>) -> Result<Route, RouteError> {
    if metrics.is_some_and(|m| m == path) {
        return only(method, Method::GET, Route::Metrics);
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(RouteError::NotFound);
    };
    let segments: Vec<String> = rest
        .split('/')
        .map(percent_decode)
        .collect::<Option<_>>()
        .ok_or(RouteError::NotFound)?;
    let s: Vec<&str> = segments.iter().map(String::as_str).collect();
    let m = method;
    use Method as M;
    use Route as R;
    let own = |x: &str| x.to_owned();
    match s.as_slice() {
        ["ping"] => only(m, M::GET, R::Ping),
        ["stats"] => only(m, M::GET, R::Stats),
        ["cluster", "metadata"] => only(m, M::GET, R::ClusterMetadata),
        ["clients"] => only(m, M::GET, R::Clients),
        ["clients", id] => only(m, M::GET, R::Client(own(id))),
        ["options", scope] => only(m, M::GET, R::Options(own(scope))),
        ["snapshot"] => only(m, M::POST, R::Snapshot),
        ["users", "login"] => only(m, M::POST, R::Login),
        ["users", "refresh-token"] => only(m, M::POST, R::RefreshToken),
        ["users", "logout"] => only(m, M::DELETE, R::Logout),
        ["users"] => pick(m, [(M::GET, R::Users), (M::POST, R::CreateUser)]),
        ["users", u] => pick(
            m,
            [
                (M::GET, R::User(own(u))),
                (M::PUT, R::UpdateUser(own(u))),
                (M::DELETE, R::DeleteUser(own(u))),
            ],
        ),
        ["users", u, "password"] => only(m, M::PUT, R::ChangePassword(own(u))),
        ["users", u, "permissions"] => only(m, M::PUT, R::UpdatePermissions(own(u))),
        ["personal-access-tokens"] => pick(m, [(M::GET, R::Tokens), (M::POST, R::CreateToken)]),
        ["personal-access-tokens", "login"] => only(m, M::POST, R::TokenLogin),
        ["personal-access-tokens", name] => only(m, M::DELETE, R::DeleteToken(own(name))),
        ["streams"] => pick(m, [(M::GET, R::Streams), (M::POST, R::CreateStream)]),
        ["streams", st] => pick(
            m,
            [
                (M::GET, R::Stream(own(st))),
                (M::PUT, R::UpdateStream(own(st))),
                (M::DELETE, R::DeleteStream(own(st))),
            ],
        ),
        ["streams", st, "purge"] => only(m, M::DELETE, R::PurgeStream(own(st))),
        ["streams", st, "topics"] => pick(
            m,
            [
                (M::GET, R::Topics(own(st))),
                (M::POST, R::CreateTopic(own(st))),
            ],
        ),
        ["streams", st, "topics", t] => pick(
            m,
            [
                (M::GET, R::Topic(own(st), own(t))),
                (M::PUT, R::UpdateTopic(own(st), own(t))),
                (M::DELETE, R::DeleteTopic(own(st), own(t))),
            ],
        ),
        ["streams", st, "topics", t, "purge"] => only(m, M::DELETE, R::PurgeTopic(own(st), own(t))),
        ["streams", st, "topics", t, "partitions"] => pick(
            m,
            [
                (M::POST, R::CreatePartitions(own(st), own(t))),
                (M::DELETE, R::DeletePartitions(own(st), own(t))),
            ],
        ),
        ["streams", st, "topics", t, "partitions", p] => {
            only(m, M::DELETE, R::DeleteSegments(own(st), own(t), own(p)))
        }
        ["streams", st, "topics", t, "partitions", p, "segments"] => {
            only(m, M::GET, R::Segments(own(st), own(t), own(p)))
        }
        ["streams", st, "topics", t, "consumer-groups"] => pick(
            m,
            [
                (M::GET, R::Groups(own(st), own(t))),
                (M::POST, R::CreateGroup(own(st), own(t))),
            ],
        ),
        ["streams", st, "topics", t, "consumer-groups", g] => pick(
            m,
            [
                (M::GET, R::Group(own(st), own(t), own(g))),
                (M::DELETE, R::DeleteGroup(own(st), own(t), own(g))),
            ],
        ),
        ["streams", st, "topics", t, "consumer-groups", g, "offsets"] => {
            only(m, M::GET, R::GroupOffsets(own(st), own(t), own(g)))
        }
        ["streams", st, "topics", t, "consumer-offsets"] => pick(
            m,
            [
                (M::GET, R::GetOffset(own(st), own(t))),
                (M::PUT, R::StoreOffset(own(st), own(t))),
            ],
        ),
        ["streams", st, "topics", t, "consumer-offsets", c] => {
            only(m, M::DELETE, R::DeleteOffset(own(st), own(t), own(c)))
        }
        ["streams", st, "topics", t, "messages"] => pick(
            m,
            [
                (M::GET, R::Poll(own(st), own(t))),
                (M::POST, R::Send(own(st), own(t))),
            ],
        ),
        _ => Err(RouteError::NotFound),
    }
}

fn only(method: &Method, wanted: Method, route: Route) -> Result<Route, RouteError> {
    pick(method, [(wanted, route)])
}

fn pick<const N: usize>(
    method: &Method,
    choices: [(Method, Route); N],
) -> Result<Route, RouteError> {
    choices
        .into_iter()
        .find(|(m, _)| m == method)
        .map(|(_, route)| route)
        .ok_or(RouteError::MethodNotAllowed)
}

/// Decodes `%XX` escapes; `None` for a bad escape or invalid UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The pairs of a query string (`+` is a space), in order.
pub fn query_pairs(query: &str) -> Option<Vec<(String, String)>> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((
                percent_decode(&key.replace('+', " "))?,
                percent_decode(&value.replace('+', " "))?,
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(method: Method, path: &str) -> Result<Route, RouteError> {
        route(&method, path, Some("/metrics"))
    }

    #[test]
    fn routes_match_with_their_parameters() {
        assert_eq!(at(Method::GET, "/ping"), Ok(Route::Ping));
        assert_eq!(at(Method::GET, "/metrics"), Ok(Route::Metrics));
        assert_eq!(
            at(Method::DELETE, "/streams/1/topics/orders/partitions/0"),
            Ok(Route::DeleteSegments(
                "1".into(),
                "orders".into(),
                "0".into()
            ))
        );
        assert_eq!(
            at(Method::POST, "/streams/s/topics/t/messages"),
            Ok(Route::Send("s".into(), "t".into()))
        );
        assert_eq!(
            at(Method::GET, "/streams/my%20stream"),
            Ok(Route::Stream("my stream".into()))
        );
        assert_eq!(
            at(Method::POST, "/personal-access-tokens/login"),
            Ok(Route::TokenLogin)
        );
        assert_eq!(
            at(Method::GET, "/streams/s/topics/t/consumer-groups/g/offsets"),
            Ok(Route::GroupOffsets("s".into(), "t".into(), "g".into()))
        );
        assert_eq!(
            at(Method::GET, "/streams/s/topics/t/partitions/1/segments"),
            Ok(Route::Segments("s".into(), "t".into(), "1".into()))
        );
        assert_eq!(
            at(Method::DELETE, "/personal-access-tokens/dev"),
            Ok(Route::DeleteToken("dev".into()))
        );
    }

    #[test]
    fn unknown_paths_and_wrong_methods_are_told_apart() {
        assert_eq!(at(Method::GET, "/"), Err(RouteError::NotFound));
        assert_eq!(at(Method::GET, "/nope"), Err(RouteError::NotFound));
        assert_eq!(
            at(
                Method::GET,
                "/streams/1/topics/1/messages/flush/0/fsync=true"
            ),
            Err(RouteError::NotFound)
        );
        assert_eq!(at(Method::POST, "/ping"), Err(RouteError::MethodNotAllowed));
        assert_eq!(
            at(Method::PATCH, "/streams"),
            Err(RouteError::MethodNotAllowed)
        );
        assert_eq!(at(Method::GET, "/streams/%zz"), Err(RouteError::NotFound));
    }

    #[test]
    fn only_four_routes_are_public() {
        assert!(Route::Ping.is_public());
        assert!(Route::Login.is_public());
        assert!(!Route::Stats.is_public());
        assert!(!Route::Metrics.is_public());
    }

    #[test]
    fn query_strings_decode() {
        assert_eq!(
            query_pairs("consumer_id=a+b&count=10&x=%41").unwrap(),
            vec![
                ("consumer_id".into(), "a b".into()),
                ("count".into(), "10".into()),
                ("x".into(), "A".into())
            ]
        );
        assert!(query_pairs("a=%4").is_none());
    }
}
