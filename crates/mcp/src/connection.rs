//! The one connection to the Iggy server that every tool call shares:
//! built for the configured SDK transport (tcp, quic, http, ws) with its TLS
//! options, connected, then authenticated with a personal access token when
//! one is configured, else with username and password.

use iggy::prelude::{
    Client, ClientWrapper, IggyClient, IggyError, PersonalAccessTokenClient, QuicClient,
    QuicClientConfigBuilder, UserClient,
};
use std::sync::Arc;

use crate::config::{IggyConfig, IggyTransport};

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot build the {transport:?} client for {address}: {source}")]
    Build {
        transport: IggyTransport,
        address: String,
        source: IggyError,
    },
    #[error("cannot connect to the iggy server at {address}: {source}")]
    Connect { address: String, source: IggyError },
    #[error("the iggy server at {address} refused the {method} login: {source}")]
    Login {
        address: String,
        method: &'static str,
        source: IggyError,
    },
}

/// Builds, connects and logs in; the returned client is ready for tools.
pub async fn connect(config: &IggyConfig) -> Result<IggyClient, ConnectError> {
    let client = build(config).map_err(|source| ConnectError::Build {
        transport: config.transport,
        address: config.address.clone(),
        source,
    })?;
    client
        .connect()
        .await
        .map_err(|source| ConnectError::Connect {
            address: config.address.clone(),
            source,
        })?;
    login(&client, config).await?;
    Ok(client)
}

async fn login(client: &IggyClient, config: &IggyConfig) -> Result<(), ConnectError> {
    let (method, result) = if config.token.is_empty() {
        let result = client.login_user(&config.username, &config.password).await;
        ("password", result.map(|_| ()))
    } else {
        let result = client.login_with_personal_access_token(&config.token).await;
        ("personal access token", result.map(|_| ()))
    };
    result.map_err(|source| ConnectError::Login {
        address: config.address.clone(),
        method,
        source,
    })
}

fn build(config: &IggyConfig) -> Result<IggyClient, IggyError> {
    let address = config.address.clone();
    let tls = &config.tls;
    match config.transport {
        IggyTransport::Tcp => {
            let mut builder = IggyClient::builder()
                .with_tcp()
                .with_server_address(address)
                .with_tls_enabled(tls.enabled)
                .with_tls_validate_certificate(tls.validate_certificate);
            if !tls.domain.is_empty() {
                builder = builder.with_tls_domain(tls.domain.clone());
            }
            if !tls.ca_file.is_empty() {
                builder = builder.with_tls_ca_file(tls.ca_file.clone());
            }
            builder.build()
        }
        IggyTransport::Ws => {
            let mut builder = IggyClient::builder()
                .with_websocket()
                .with_server_address(address)
                .with_tls_enabled(tls.enabled)
                .with_tls_validate_certificate(tls.validate_certificate);
            if !tls.domain.is_empty() {
                builder = builder.with_tls_domain(tls.domain.clone());
            }
            if !tls.ca_file.is_empty() {
                builder = builder.with_tls_ca_file(tls.ca_file.clone());
            }
            builder.build()
        }
        IggyTransport::Quic => build_quic(config),
        IggyTransport::Http => IggyClient::builder()
            .with_http()
            .with_api_url(http_api_url(config))
            .build(),
    }
}

/// QUIC always runs over TLS; the SDK takes the server name and whether to
/// validate the certificate (it has no CA-file option for QUIC).
fn build_quic(config: &IggyConfig) -> Result<IggyClient, IggyError> {
    let mut builder = QuicClientConfigBuilder::new()
        .with_server_address(config.address.clone())
        .with_validate_certificate(config.tls.validate_certificate);
    if !config.tls.domain.is_empty() {
        builder = builder.with_server_name(config.tls.domain.clone());
    }
    let client = QuicClient::create(Arc::new(builder.build()?))?;
    Ok(IggyClient::create(ClientWrapper::Quic(client), None, None))
}

/// `host:port` becomes `http://host:port` (`https://` with TLS enabled); a
/// full URL is taken as written.
fn http_api_url(config: &IggyConfig) -> String {
    let address = &config.address;
    if address.starts_with("http://") || address.starts_with("https://") {
        return address.clone();
    }
    let scheme = if config.tls.enabled { "https" } else { "http" };
    format!("{scheme}://{address}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_a_host_port_when_building_the_http_url_should_pick_the_scheme_from_tls() {
        let mut config = IggyConfig {
            transport: IggyTransport::Http,
            address: "127.0.0.1:3000".to_owned(),
            ..IggyConfig::default()
        };
        assert_eq!(http_api_url(&config), "http://127.0.0.1:3000");
        config.tls.enabled = true;
        assert_eq!(http_api_url(&config), "https://127.0.0.1:3000");
        config.address = "http://example.test:1".to_owned();
        assert_eq!(http_api_url(&config), "http://example.test:1");
    }
}
