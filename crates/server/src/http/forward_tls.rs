//! The HTTPS client side of forwarding (HTTP API spec §16.2) when
//! `http.tls` is on: which certificates a follower trusts when it connects
//! to the leader's roster address and HTTP port, and the name it checks.
//!
//! Trusted, together: the certificates in `cluster.tls.ca_file` when
//! `cluster.tls` is on with files (not `self_signed`), and every
//! certificate in this node's own `http.tls.cert_file` (nodes commonly
//! share one HTTP certificate, or ship the CA in the chain). The leader's
//! certificate must name its roster `ip` (an IP SAN, or a DNS name when
//! the roster holds a host name). At start-up this node's own certificate
//! must verify under those roots for its own roster `ip`; if the files
//! cannot be read or it does not, forwarding stays off (the caller warns).
//! There is no mode that accepts any certificate.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, RootCertStore};
use server::config::{ClusterTlsConfig, HttpTlsConfig};

/// Why forwarding over HTTPS cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum ForwardTlsError {
    #[error("cannot read certificates from {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{path} holds no certificate")]
    Empty { path: String },
    #[error("{path}: a certificate is not usable as a trust root: {reason}")]
    NotAnAnchor { path: String, reason: String },
    #[error(
        "this node's own http.tls certificate does not verify for its roster address \
         {name:?} under the trusted roots ({trusted}): {reason}"
    )]
    OwnCertificateUntrusted {
        name: String,
        trusted: String,
        reason: String,
    },
    #[error("this node has no roster entry to check its own certificate against")]
    NoRosterEntry,
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
}

/// The files whose certificates are trusted, in this order: the cluster CA
/// (only while `cluster.tls` is on with files: then it is validated and in
/// use), then this node's own HTTP certificate chain.
pub fn trusted_files<'a>(http: &'a HttpTlsConfig, cluster: &'a ClusterTlsConfig) -> Vec<&'a str> {
    let mut files = Vec::with_capacity(2);
    if cluster.enabled && !cluster.self_signed && !cluster.ca_file.is_empty() {
        files.push(cluster.ca_file.as_str());
    }
    files.push(http.cert_file.as_str());
    files
}

/// The HTTPS connector forwarding uses, after the start-up self-check;
/// `own_name` is this node's roster `ip`.
pub fn connector(
    http: &HttpTlsConfig,
    cluster: &ClusterTlsConfig,
    own_name: &str,
) -> Result<compio::tls::TlsConnector, ForwardTlsError> {
    let files = trusted_files(http, cluster);
    let mut roots = RootCertStore::empty();
    for path in &files {
        for cert in read_certificates(path)? {
            roots.add(cert).map_err(|e| ForwardTlsError::NotAnAnchor {
                path: (*path).to_owned(),
                reason: e.to_string(),
            })?;
        }
    }
    assert!(!roots.is_empty(), "every file read holds a certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .expect("the roots are not empty and no revocation lists are given");
    let own_chain = read_certificates(&http.cert_file)?;
    verify_own(verifier.as_ref(), &own_chain, own_name).map_err(|reason| {
        ForwardTlsError::OwnCertificateUntrusted {
            name: own_name.to_owned(),
            trusted: files.join(", "),
            reason,
        }
    })?;
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_webpki_verifier(verifier)
        .with_no_client_auth();
    // The forwarder speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(compio::tls::TlsConnector::from(Arc::new(config)))
}

/// Whether `chain` (leaf first) verifies for `name` under `verifier`, the
/// check every peer's certificate must pass.
fn verify_own(
    verifier: &WebPkiServerVerifier,
    chain: &[CertificateDer<'static>],
    name: &str,
) -> Result<(), String> {
    let name = ServerName::try_from(name.to_owned()).map_err(|e| e.to_string())?;
    let (leaf, intermediates) = chain.split_first().ok_or("no certificate")?;
    verifier
        .verify_server_cert(leaf, intermediates, &name, &[], UnixTime::now())
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Every certificate in the PEM file at `path`; at least one.
fn read_certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, ForwardTlsError> {
    let unreadable = |reason: String| ForwardTlsError::Unreadable {
        path: path.to_owned(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| unreadable(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(e.to_string()))?;
    if certs.is_empty() {
        return Err(ForwardTlsError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};

    use super::*;

    fn write(dir: &Path, file: &str, text: &str) -> String {
        let path = dir.join(file);
        std::fs::write(&path, text).expect("written");
        path.display().to_string()
    }

    fn http_tls(cert_file: String) -> HttpTlsConfig {
        HttpTlsConfig {
            enabled: true,
            cert_file,
            key_file: String::new(),
        }
    }

    fn cluster_tls(enabled: bool, self_signed: bool, ca_file: String) -> ClusterTlsConfig {
        ClusterTlsConfig {
            enabled,
            self_signed,
            cert_file: String::new(),
            key_file: String::new(),
            ca_file,
        }
    }

    /// A self-signed certificate for `names`, as PEM.
    fn self_signed(names: &[&str]) -> String {
        let names: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
        rcgen::generate_simple_self_signed(names)
            .expect("a certificate")
            .cert
            .pem()
    }

    /// A CA and a leaf for `name` it signed, as PEM.
    fn ca_and_leaf(name: &str) -> (String, String) {
        let ca_key = KeyPair::generate().expect("a CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).expect("a CA");
        let key = KeyPair::generate().expect("a key");
        let leaf = CertificateParams::new(vec![name.to_owned()])
            .expect("params")
            .signed_by(&key, &ca, &ca_key)
            .expect("signed");
        (ca.pem(), leaf.pem())
    }

    #[test]
    fn given_cluster_tls_with_files_when_choosing_trust_should_take_its_ca_then_the_own_chain() {
        let http = http_tls("http.pem".into());
        let with_files = cluster_tls(true, false, "ca.pem".into());
        assert_eq!(trusted_files(&http, &with_files), ["ca.pem", "http.pem"]);
        let generated = cluster_tls(true, true, "ca.pem".into());
        assert_eq!(
            trusted_files(&http, &generated),
            ["http.pem"],
            "self_signed"
        );
        let off = cluster_tls(false, false, "ca.pem".into());
        assert_eq!(trusted_files(&http, &off), ["http.pem"], "cluster.tls off");
    }

    #[test]
    fn given_a_shared_certificate_when_it_names_the_roster_ip_should_build_and_otherwise_not() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let off = cluster_tls(false, false, String::new());
        let shared = write(dir.path(), "shared.pem", &self_signed(&["127.0.0.1"]));
        connector(&http_tls(shared.clone()), &off, "127.0.0.1").expect("trusted");
        let refused = connector(&http_tls(shared), &off, "10.9.9.9").expect_err("wrong name");
        assert!(
            matches!(refused, ForwardTlsError::OwnCertificateUntrusted { .. }),
            "{refused}"
        );
        let named = write(dir.path(), "named.pem", &self_signed(&["node-a.example"]));
        connector(&http_tls(named), &off, "node-a.example").expect("a host name roster");
    }

    #[test]
    fn given_per_node_certificates_from_a_ca_when_the_ca_is_trusted_should_build_and_otherwise_not()
    {
        let dir = tempfile::tempdir().expect("a temp dir");
        let (ca, leaf) = ca_and_leaf("127.0.0.1");
        let ca_file = write(dir.path(), "ca.pem", &ca);
        let leaf_only = http_tls(write(dir.path(), "leaf.pem", &leaf));
        let with_ca = cluster_tls(true, false, ca_file);
        connector(&leaf_only, &with_ca, "127.0.0.1").expect("the cluster CA");
        let no_ca = cluster_tls(true, true, String::new());
        let refused = connector(&leaf_only, &no_ca, "127.0.0.1").expect_err("no CA");
        assert!(
            matches!(refused, ForwardTlsError::OwnCertificateUntrusted { .. }),
            "{refused}"
        );
        let chain = http_tls(write(dir.path(), "chain.pem", &format!("{leaf}{ca}")));
        connector(&chain, &no_ca, "127.0.0.1").expect("the CA in the own chain");
    }

    #[test]
    fn given_a_self_signed_ca_certificate_as_the_leaf_when_building_should_refuse() {
        // What `openssl req -x509` makes by default (CA:TRUE): webpki does
        // not accept a CA certificate as the server's own.
        let dir = tempfile::tempdir().expect("a temp dir");
        let key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).expect("a certificate");
        let http = http_tls(write(dir.path(), "ca_leaf.pem", &cert.pem()));
        let off = cluster_tls(false, false, String::new());
        let refused = connector(&http, &off, "127.0.0.1").expect_err("CA as leaf");
        assert!(
            matches!(refused, ForwardTlsError::OwnCertificateUntrusted { .. }),
            "{refused}"
        );
    }

    #[test]
    fn given_an_unreadable_or_empty_file_when_building_should_name_it() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let off = cluster_tls(false, false, String::new());
        let missing = http_tls("/nonexistent/http.pem".into());
        let refused = connector(&missing, &off, "127.0.0.1").expect_err("missing");
        assert!(
            refused.to_string().contains("/nonexistent/http.pem"),
            "{refused}"
        );
        let empty = http_tls(write(dir.path(), "empty.pem", ""));
        let refused = connector(&empty, &off, "127.0.0.1").expect_err("empty");
        assert!(
            matches!(refused, ForwardTlsError::Empty { .. }),
            "{refused}"
        );
    }
}
