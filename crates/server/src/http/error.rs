//! The HTTP API's error answers (HTTP API spec §3): a status and the JSON
//! body `{"id", "code", "reason", "field"}`.
//!
//! An Iggy error keeps its numeric code as `id` and its snake_case name as
//! `code`; errors that exist only at the HTTP layer use the status number as
//! `id`. Not-found reads use one generic body.

use hyper::StatusCode;
use protocol::ErrorCode;
use serde::Serialize;

/// An error answer, ready to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub id: u32,
    pub code: String,
    pub reason: String,
    pub field: Option<&'static str>,
    /// Adds `Retry-After: 1`.
    pub retry_after: bool,
}

#[derive(Serialize)]
struct Body<'a> {
    id: u32,
    code: &'a str,
    reason: &'a str,
    field: Option<&'a str>,
}

impl ApiError {
    /// An Iggy error with the status the spec's table gives it.
    pub fn iggy(code: ErrorCode) -> Self {
        let name = code.name();
        Self {
            status: status_of(code),
            id: code as u32,
            code: snake_case(name),
            reason: sentence(name),
            field: field_of(code),
            retry_after: matches!(
                code,
                ErrorCode::TransientNotCommitted | ErrorCode::TransientNotAccepted
            ),
        }
    }

    /// The generic body for an absent entity.
    pub fn not_found() -> Self {
        Self::http(StatusCode::NOT_FOUND, "not_found", "Resource not found")
    }

    /// An error of the HTTP layer itself: `id` is the status number.
    pub fn http(status: StatusCode, code: &str, reason: impl Into<String>) -> Self {
        Self {
            status,
            id: u32::from(status.as_u16()),
            code: code.to_owned(),
            reason: reason.into(),
            field: None,
            retry_after: false,
        }
    }

    /// A request whose body or query does not fit the route.
    pub fn bad_request(reason: impl Into<String>) -> Self {
        Self::http(StatusCode::BAD_REQUEST, "bad_request", reason)
    }

    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&Body {
            id: self.id,
            code: &self.code,
            reason: &self.reason,
            field: self.field,
        })
        .unwrap_or_default()
    }
}

impl From<protocol::http_json::BodyError> for ApiError {
    fn from(e: protocol::http_json::BodyError) -> Self {
        use protocol::http_json::BodyError;
        match e {
            BodyError::Json { data, message } => {
                let status = if data {
                    StatusCode::UNPROCESSABLE_ENTITY
                } else {
                    StatusCode::BAD_REQUEST
                };
                Self::http(
                    status,
                    "invalid_json",
                    format!("invalid request body: {message}"),
                )
            }
            BodyError::Code(code) => Self::iggy(code),
            BodyError::Invalid(reason) => Self::bad_request(reason),
        }
    }
}

impl From<ErrorCode> for ApiError {
    fn from(code: ErrorCode) -> Self {
        Self::iggy(code)
    }
}

fn status_of(code: ErrorCode) -> StatusCode {
    use ErrorCode as E;
    match code {
        E::StreamIdNotFound
        | E::TopicIdNotFound
        | E::PartitionNotFound
        | E::SegmentNotFound
        | E::ClientNotFound
        | E::ConsumerGroupIdNotFound
        | E::ConsumerGroupNameNotFound
        | E::ConsumerGroupMemberNotFound
        | E::ConsumerOffsetNotFound
        | E::ResourceNotFound => StatusCode::NOT_FOUND,
        E::Unauthenticated
        | E::AccessTokenMissing
        | E::InvalidAccessToken
        | E::InvalidPersonalAccessToken => StatusCode::UNAUTHORIZED,
        E::Unauthorized => StatusCode::FORBIDDEN,
        E::TransientNotCommitted | E::TransientNotAccepted => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::BAD_REQUEST,
    }
}

fn field_of(code: ErrorCode) -> Option<&'static str> {
    use ErrorCode as E;
    Some(match code {
        E::StreamIdNotFound | E::InvalidStreamId => "stream_id",
        E::TopicIdNotFound | E::InvalidTopicId => "topic_id",
        E::PartitionNotFound => "partition_id",
        E::SegmentNotFound => "segment_id",
        E::ClientNotFound => "client_id",
        E::StreamNameAlreadyExists
        | E::InvalidStreamName
        | E::TopicNameAlreadyExists
        | E::InvalidTopicName
        | E::ConsumerGroupNameAlreadyExists
        | E::PersonalAccessTokenAlreadyExists => "name",
        E::InvalidOffset => "offset",
        E::ConsumerGroupIdNotFound => "consumer_group_id",
        E::UserAlreadyExists => "username",
        _ => return None,
    })
}

/// `StreamIdNotFound` → `stream_id_not_found`.
pub fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 8);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `StreamIdNotFound` → `Stream id not found.`
fn sentence(name: &str) -> String {
    let words = snake_case(name).replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_ascii_uppercase(), chars.as_str()),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iggy_errors_keep_their_number_and_name() {
        let e = ApiError::iggy(ErrorCode::StreamNameAlreadyExists);
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert_eq!(
            String::from_utf8(e.body()).unwrap(),
            r#"{"id":1012,"code":"stream_name_already_exists","reason":"Stream name already exists.","field":"name"}"#
        );
    }

    #[test]
    fn statuses_follow_the_table() {
        assert_eq!(
            ApiError::iggy(ErrorCode::TopicIdNotFound).status,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            ApiError::iggy(ErrorCode::InvalidCredentials).status,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            ApiError::iggy(ErrorCode::Unauthenticated).status,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(
            ApiError::iggy(ErrorCode::Unauthorized).status,
            StatusCode::FORBIDDEN
        );
        let transient = ApiError::iggy(ErrorCode::TransientNotCommitted);
        assert_eq!(transient.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(transient.retry_after);
    }

    #[test]
    fn the_generic_not_found_body_is_exact() {
        assert_eq!(
            String::from_utf8(ApiError::not_found().body()).unwrap(),
            r#"{"id":404,"code":"not_found","reason":"Resource not found","field":null}"#
        );
    }
}
