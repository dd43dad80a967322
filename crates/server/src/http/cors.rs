//! Cross-origin resource sharing as `[http.cors]` configures it: preflight
//! `OPTIONS` requests are answered here, and answers to requests carrying
//! an allowed `Origin` get the allow/expose headers.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use server::config::CorsConfig;

use super::HttpResponse;

pub struct Cors {
    any_origin: bool,
    origins: Vec<String>,
    methods: String,
    headers: String,
    exposed: String,
    credentials: bool,
    private_network: bool,
}

impl Cors {
    pub fn from_config(config: &CorsConfig) -> Self {
        Self {
            any_origin: config.allowed_origins.first().is_some_and(|o| o == "*"),
            origins: config.allowed_origins.clone(),
            methods: config.allowed_methods.join(", "),
            headers: config.allowed_headers.join(", "),
            exposed: config.exposed_headers.join(", "),
            credentials: config.allow_credentials,
            private_network: config.allow_private_network,
        }
    }

    fn allowed_origin(&self, origin: &HeaderValue) -> Option<HeaderValue> {
        if self.any_origin {
            return Some(HeaderValue::from_static("*"));
        }
        let text = origin.to_str().ok()?;
        self.origins
            .iter()
            .any(|o| o == text)
            .then(|| origin.clone())
    }

    /// The answer to a preflight request, if this is one.
    pub fn preflight<B>(&self, request: &Request<B>) -> Option<HttpResponse> {
        if request.method() != Method::OPTIONS {
            return None;
        }
        let origin = request.headers().get(header::ORIGIN)?;
        request
            .headers()
            .get(header::ACCESS_CONTROL_REQUEST_METHOD)?;
        let mut response = Response::new(Full::new(Bytes::new()));
        *response.status_mut() = StatusCode::OK;
        let Some(allowed) = self.allowed_origin(origin) else {
            return Some(response);
        };
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
        for (name, value) in [
            (header::ACCESS_CONTROL_ALLOW_METHODS, &self.methods),
            (header::ACCESS_CONTROL_ALLOW_HEADERS, &self.headers),
        ] {
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.insert(name, value);
            }
        }
        if self.credentials {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        if self.private_network
            && request
                .headers()
                .contains_key("access-control-request-private-network")
        {
            headers.insert(
                "access-control-allow-private-network",
                HeaderValue::from_static("true"),
            );
        }
        headers.insert(header::VARY, HeaderValue::from_static("origin"));
        Some(response)
    }

    /// Adds the headers of an actual cross-origin answer.
    pub fn decorate(&self, origin: &HeaderValue, response: &mut HttpResponse) {
        let Some(allowed) = self.allowed_origin(origin) else {
            return;
        };
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allowed);
        if !self.exposed.is_empty()
            && let Ok(value) = HeaderValue::from_str(&self.exposed)
        {
            headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, value);
        }
        if self.credentials {
            headers.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
    }
}
