//! TLS on the replica links (`cluster.tls`, replication spec §8): TLS 1.3
//! with ALPN `iggy-replica`, then the PSK handshake inside it, its MAC
//! bound to the session through a 32-byte keying-material exporter.
//!
//! The dialer checks the acceptor's certificate against the acceptor's
//! roster `ip` and `ca_file`. With `self_signed`, each node generates a
//! certificate per boot and any peer certificate is taken: the session
//! still proves possession of its key, and the exporter-bound MAC (both
//! ends know the PSK) is what rules out a party in the middle.
//!
//! rustls runs sans-IO here: a link's reader and writer share one
//! `rustls::Connection` (never borrowed across an await), the reader
//! feeding it ciphertext and taking plaintext, the writer giving it
//! plaintext and sending what it seals. Socket writes take a token first,
//! so the records of the writer and any the reader must send (alerts,
//! key updates) never interleave.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use compio::buf::BufResult;
use compio::io::{AsyncRead, AsyncWriteExt};
use compio::net::TcpStream;
use crossfire::mpsc::{Array, bounded_async};
use crossfire::{AsyncRx, MAsyncTx};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use super::connection::Closed;
use super::handshake::ReplicaId;
use crate::config::ClusterTlsConfig;

pub const ALPN: &[u8] = b"iggy-replica";
/// The exporter label both ends use for the MAC binding.
const EXPORTER_LABEL: &[u8] = b"iggy-replica handshake binding";
/// Ciphertext read from the socket per read.
const READ_CHUNK: usize = 64 * 1024;

/// Why `cluster.tls` cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    #[error("cluster.tls: {0}")]
    Invalid(String),
}

fn invalid(reason: impl Into<String>) -> TlsSetupError {
    TlsSetupError::Invalid(reason.into())
}

/// This node's TLS configurations for the links, and each peer's roster
/// `ip` (the name its certificate must carry).
#[derive(Clone)]
pub struct LinkTls {
    client: Arc<ClientConfig>,
    server: Arc<ServerConfig>,
    names: BTreeMap<ReplicaId, String>,
}

impl std::fmt::Debug for LinkTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkTls")
    }
}

impl LinkTls {
    /// The configurations `cluster.tls` asks for; `own_ip` is this node's
    /// roster `ip` (a generated certificate names it), `names` the peers'.
    pub fn from_config(
        config: &ClusterTlsConfig,
        own_ip: &str,
        names: BTreeMap<ReplicaId, String>,
    ) -> Result<LinkTls, TlsSetupError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let (chain, key) = if config.self_signed {
            let names = vec![own_ip.to_owned(), "localhost".to_owned()];
            let generated = rcgen::generate_simple_self_signed(names)
                .map_err(|e| invalid(format!("cannot generate a certificate: {e}")))?;
            let key = PrivateKeyDer::Pkcs8(generated.key_pair.serialize_der().into());
            (vec![generated.cert.der().clone()], key)
        } else {
            for (key, value) in [
                ("cert_file", &config.cert_file),
                ("key_file", &config.key_file),
                ("ca_file", &config.ca_file),
            ] {
                if value.is_empty() {
                    return Err(invalid(format!("{key} is required unless self_signed")));
                }
            }
            let chain = CertificateDer::pem_file_iter(&config.cert_file)
                .map_err(|e| invalid(format!("cannot read {}: {e}", config.cert_file)))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| invalid(format!("{} is not PEM: {e}", config.cert_file)))?;
            if chain.is_empty() {
                return Err(invalid(format!(
                    "{} holds no certificate",
                    config.cert_file
                )));
            }
            let key = PrivateKeyDer::from_pem_file(&config.key_file)
                .map_err(|e| invalid(format!("cannot read a key from {}: {e}", config.key_file)))?;
            (chain, key)
        };
        let mut server = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| invalid(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|e| invalid(format!("the certificate and key do not match: {e}")))?;
        server.alpn_protocols = vec![ALPN.to_vec()];
        // No post-handshake tickets: nothing for the reader to send.
        server.send_tls13_tickets = 0;
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .map_err(|e| invalid(e.to_string()))?;
        let mut client = if config.self_signed {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyPeer(provider)))
                .with_no_client_auth()
        } else {
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(&config.ca_file)
                .map_err(|e| invalid(format!("cannot read {}: {e}", config.ca_file)))?
            {
                let cert = cert.map_err(|e| invalid(format!("{}: {e}", config.ca_file)))?;
                roots
                    .add(cert)
                    .map_err(|e| invalid(format!("{}: {e}", config.ca_file)))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        };
        client.alpn_protocols = vec![ALPN.to_vec()];
        client.resumption = rustls::client::Resumption::disabled();
        Ok(LinkTls {
            client: Arc::new(client),
            server: Arc::new(server),
            names,
        })
    }

    /// A client session to `peer`, checked against its roster `ip`.
    pub fn dial(&self, peer: ReplicaId) -> Result<rustls::Connection, Closed> {
        let ip = self
            .names
            .get(&peer)
            .ok_or_else(|| tls_error(format!("replica {peer} is not in the roster")))?;
        let name = match ip.parse::<IpAddr>() {
            Ok(ip) => ServerName::IpAddress(ip.into()),
            Err(_) => ServerName::try_from(ip.clone()).map_err(|e| tls_error(e.to_string()))?,
        };
        let session = rustls::ClientConnection::new(self.client.clone(), name)
            .map_err(|e| tls_error(e.to_string()))?;
        Ok(session.into())
    }

    pub fn accept(&self) -> Result<rustls::Connection, Closed> {
        let session = rustls::ServerConnection::new(self.server.clone())
            .map_err(|e| tls_error(e.to_string()))?;
        Ok(session.into())
    }
}

fn tls_error(reason: String) -> Closed {
    Closed::Tls(reason)
}

/// `self_signed`: any certificate, its signatures still checked.
#[derive(Debug)]
struct AnyPeer(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyPeer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// One TLS session over a link's socket, shared by its reader and writer.
pub struct TlsSession {
    session: RefCell<rustls::Connection>,
    /// Plaintext received and not yet taken.
    plaintext: RefCell<Vec<u8>>,
    /// Held while writing to the socket.
    token: (MAsyncTx<Array<()>>, AsyncRx<Array<()>>),
}

impl TlsSession {
    /// Runs the TLS handshake on `stream` and checks the ALPN.
    pub async fn establish(
        stream: &TcpStream,
        mut session: rustls::Connection,
    ) -> Result<TlsSession, Closed> {
        session.set_buffer_limit(None);
        let (tx, rx) = bounded_async(1);
        let _ = tx.try_send(());
        let tls = TlsSession {
            session: RefCell::new(session),
            plaintext: RefCell::new(Vec::new()),
            token: (tx, rx),
        };
        while tls.session.borrow().is_handshaking() {
            tls.flush(stream).await?;
            if tls.session.borrow().is_handshaking() && tls.session.borrow().wants_read() {
                tls.receive(stream).await?;
            }
        }
        tls.flush(stream).await?;
        if tls.session.borrow().alpn_protocol() != Some(ALPN) {
            return Err(tls_error(format!(
                "the peer did not agree on ALPN {}",
                String::from_utf8_lossy(ALPN)
            )));
        }
        Ok(tls)
    }

    /// The keying material both ends derive for the handshake's MAC.
    pub fn exporter(&self) -> Result<[u8; 32], Closed> {
        let session = self.session.borrow();
        let exported = match &*session {
            rustls::Connection::Client(c) => {
                c.export_keying_material([0u8; 32], EXPORTER_LABEL, None)
            }
            rustls::Connection::Server(s) => {
                s.export_keying_material([0u8; 32], EXPORTER_LABEL, None)
            }
        };
        exported.map_err(|e| tls_error(e.to_string()))
    }

    /// Reads ciphertext once and takes what it decrypts to.
    async fn receive(&self, stream: &TcpStream) -> Result<(), Closed> {
        let buffer = Vec::with_capacity(READ_CHUNK);
        let BufResult(read, buffer) = (&mut &*stream).read(buffer).await;
        if read? == 0 {
            return Err(Closed::PeerClosed);
        }
        let mut rest = &buffer[..];
        let mut closed = false;
        while !rest.is_empty() {
            let mut session = self.session.borrow_mut();
            session.read_tls(&mut rest)?;
            let state = session
                .process_new_packets()
                .map_err(|e| tls_error(e.to_string()))?;
            let available = state.plaintext_bytes_to_read();
            if available > 0 {
                let mut plaintext = self.plaintext.borrow_mut();
                let start = plaintext.len();
                plaintext.resize(start + available, 0);
                std::io::Read::read_exact(&mut session.reader(), &mut plaintext[start..])?;
            }
            closed |= state.peer_has_closed();
        }
        if closed && self.plaintext.borrow().is_empty() {
            return Err(Closed::PeerClosed);
        }
        if self.session.borrow().wants_write() {
            self.flush(stream).await?;
        }
        Ok(())
    }

    /// Sends every sealed record waiting in the session.
    async fn flush(&self, stream: &TcpStream) -> Result<(), Closed> {
        self.token.1.recv().await.map_err(|_| Closed::QueueGone)?;
        let result = async {
            loop {
                let mut sealed = Vec::new();
                while self.session.borrow().wants_write() {
                    self.session.borrow_mut().write_tls(&mut sealed)?;
                }
                if sealed.is_empty() {
                    return Ok(());
                }
                let mut writer = stream;
                let BufResult(result, _) = writer.write_all(sealed).await;
                result?;
            }
        }
        .await;
        let _ = self.token.0.try_send(());
        result
    }

    /// Fills `buf` up to `len` bytes of plaintext.
    pub async fn read_exact(
        &self,
        stream: &TcpStream,
        mut buf: Vec<u8>,
        len: usize,
    ) -> Result<Vec<u8>, Closed> {
        while buf.len() < len {
            {
                let mut plaintext = self.plaintext.borrow_mut();
                let take = plaintext.len().min(len - buf.len());
                buf.extend_from_slice(&plaintext[..take]);
                plaintext.drain(..take);
            }
            if buf.len() < len {
                self.receive(stream).await?;
            }
        }
        Ok(buf)
    }

    /// Seals `frames` and sends them.
    pub async fn write_all(
        &self,
        stream: &TcpStream,
        frames: &[impl AsRef<[u8]>],
    ) -> Result<(), Closed> {
        {
            let mut session = self.session.borrow_mut();
            for frame in frames {
                std::io::Write::write_all(&mut session.writer(), frame.as_ref())?;
            }
        }
        self.flush(stream).await
    }
}
