//! Server certificates for TLS on TCP, WebSocket, HTTP and QUIC: a PEM pair
//! loaded from disk, or an ephemeral self-signed certificate for the
//! loopback names generated at start-up.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tracing::info;

/// A certificate chain and its key.
pub struct Identity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

/// Where a listener's certificate comes from.
#[derive(Debug, Clone)]
pub enum CertSource {
    /// Generate one for `localhost`, `127.0.0.1` and `::1`.
    SelfSigned,
    /// Load this PEM pair.
    Files { cert: String, key: String },
}

impl CertSource {
    /// The TCP/WebSocket rule: self-signed only while `cert_file` does not
    /// exist; an existing pair is loaded instead.
    pub fn listener(self_signed: bool, cert: &str, key: &str) -> Self {
        if self_signed && !Path::new(cert).exists() {
            CertSource::SelfSigned
        } else {
            CertSource::Files {
                cert: cert.to_owned(),
                key: key.to_owned(),
            }
        }
    }

    pub fn identity(&self) -> anyhow::Result<Identity> {
        match self {
            CertSource::SelfSigned => Ok(self_signed()?.clone()),
            CertSource::Files { cert, key } => load(cert, key),
        }
    }
}

/// One self-signed identity per process, shared by every listener.
fn self_signed() -> anyhow::Result<&'static Identity> {
    static IDENTITY: OnceLock<Identity> = OnceLock::new();
    if let Some(identity) = IDENTITY.get() {
        return Ok(identity);
    }
    let names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    let generated =
        rcgen::generate_simple_self_signed(names).context("cannot generate a certificate")?;
    info!("generated an ephemeral self-signed certificate for localhost, 127.0.0.1 and ::1");
    let identity = Identity {
        chain: vec![generated.cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(generated.key_pair.serialize_der().into()),
    };
    Ok(IDENTITY.get_or_init(|| identity))
}

fn load(cert: &str, key: &str) -> anyhow::Result<Identity> {
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read the certificate file {cert}"))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{cert} is not a PEM certificate chain"))?;
    anyhow::ensure!(!chain.is_empty(), "{cert} holds no certificate");
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read a PEM private key from {key}"))?;
    Ok(Identity { chain, key })
}

/// A TLS server configuration offering `alpn` (most preferred first).
pub fn server_config(identity: Identity, alpn: &[&[u8]]) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(identity.chain, identity.key)
        .context("the certificate and key do not match or are unsupported")?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_identity_builds_a_server_config() {
        let identity = CertSource::SelfSigned.identity().unwrap();
        assert_eq!(identity.chain.len(), 1);
        server_config(identity, &[b"h2", b"http/1.1"]).unwrap();
    }

    #[test]
    fn missing_files_are_named_in_the_error() {
        let source = CertSource::Files {
            cert: "/nonexistent/cert.pem".into(),
            key: "/nonexistent/key.pem".into(),
        };
        let error = format!("{:#}", source.identity().err().unwrap());
        assert!(error.contains("/nonexistent/cert.pem"), "{error}");
    }
}
