//! The replica-link handshake (replication spec §8) as a sans-IO state
//! machine: frames in, frames out, an outcome. The runtime supplies the
//! random nonces and moves the bytes.
//!
//! Order of events: the dialer (the lower id) sends Hello; the acceptor
//! answers with a Challenge whose status says whether it admits the dialer;
//! with `cluster.auth` the dialer then checks `mac_a` and sends Finish, which
//! the acceptor checks. Without auth the link is up once an Ok Challenge is
//! sent (acceptor) or received (dialer). A refused Challenge is still sent so
//! that the dialer's log names the reason; the acceptor then closes.
//!
//! Every handshake message is one 256-byte replica header with no body:
//!
//! ```text
//!   0 u128 checksum       XXH3-64 of bytes 16..256, zero-extended (the seal)
//!  16 u128 checksum_body  XXH3-64 of the empty body, zero-extended
//!  32 u128 cluster        48 u32 size = 256   52 u32 view = 0
//!  56 u32  release = 0    60 u8 command       61 u8 replica (the sender)
//!  62..128 zero
//! 128 [32] nonce          Hello: nonce_d; Challenge: nonce_a; Finish: zero
//! 160 [32] mac            Challenge: mac_a; Finish: mac_d; Hello: zero
//! 192 u8   status         Challenge only: 0 Ok, 1 unknown command,
//!                         2 cluster mismatch, 3 directional rule,
//!                         4 auth mode mismatch (ours)
//! 193 u8   auth (ours)    Hello and Challenge: 0 plaintext, 1 PSK
//! 194..256 zero
//! commands: 14 ReplicaHello, 15 ReplicaChallenge, 16 ReplicaFinish
//! ```
//!
//! Without auth the nonces and MACs are zero; `mac` holds the MAC layout.

use protocol::checksum::xxh3_64;
use protocol::header::{COMMAND_OFFSET, HEADER_SIZE, SIZE_OFFSET};
use thiserror::Error;

mod mac;
#[cfg(test)]
mod tests;

pub use mac::{ChannelBinding, KEY_CONTEXT, MAC_DOMAIN_TAG, MacKey, PskKeys};
use mac::{DIRECTION_ACCEPTOR, DIRECTION_DIALER, MAC_MESSAGE_SIZE, Transcript};

/// A replica id as the roster numbers it.
pub type ReplicaId = u8;
/// One handshake message: a replica header without a body.
pub type HandshakeFrame = [u8; HEADER_SIZE];
/// A 32-byte random handshake nonce.
pub type Nonce = [u8; NONCE_SIZE];

pub const NONCE_SIZE: usize = 32;
pub const MAC_SIZE: usize = 32;
/// Shortest accepted pre-shared key (configuration spec §7.12).
pub const SHARED_SECRET_LEN_MIN: usize = 32;

pub const COMMAND_HELLO: u8 = 14;
pub const COMMAND_CHALLENGE: u8 = 15;
pub const COMMAND_FINISH: u8 = 16;

const CHECKSUM: usize = 0;
const CHECKSUM_BODY: usize = 16;
const CLUSTER: usize = 32;
const REPLICA: usize = 61;
const NONCE: usize = 128;
const MAC: usize = 160;
const STATUS: usize = 192;
const AUTH: usize = 193;
/// The seal covers the header from here to its end.
const SEALED_FROM: usize = 16;

const _: () = assert!(CLUSTER + 16 == SIZE_OFFSET && COMMAND_OFFSET + 1 == REPLICA);
const _: () = assert!(NONCE + NONCE_SIZE == MAC && MAC + MAC_SIZE == STATUS);
const _: () = assert!(STATUS + 1 == AUTH && AUTH < HEADER_SIZE);
const _: () = assert!(CHECKSUM + 16 == CHECKSUM_BODY && CHECKSUM_BODY == SEALED_FROM);

/// A Challenge's verdict on the Hello (replication spec §8; 4 is ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    UnknownCommand = 1,
    ClusterMismatch = 2,
    DirectionalRule = 3,
    AuthModeMismatch = 4,
}

impl Status {
    fn from_u8(value: u8) -> Option<Status> {
        [
            Status::Ok,
            Status::UnknownCommand,
            Status::ClusterMismatch,
            Status::DirectionalRule,
            Status::AuthModeMismatch,
        ]
        .into_iter()
        .find(|s| *s as u8 == value)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::UnknownCommand => "unknown command",
            Status::ClusterMismatch => "cluster mismatch",
            Status::DirectionalRule => "directional rule (the dialer's id must be lower)",
            Status::AuthModeMismatch => "auth mode mismatch (cluster.auth differs)",
        })
    }
}

/// Why a handshake failed. Each refusal is its own variant so the log line
/// names it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HandshakeError {
    #[error("handshake frame has {len} bytes, not {HEADER_SIZE}")]
    Short { len: usize },
    #[error("handshake frame seal does not match its bytes")]
    BadSeal,
    #[error("unknown command {command} where {expected} was expected")]
    UnknownCommand { command: u8, expected: u8 },
    #[error("handshake frame byte {offset} must be zero or hold a known value")]
    Malformed { offset: usize },
    #[error("cluster mismatch: ours {ours:#034x}, the peer's {theirs:#034x}")]
    ClusterMismatch { ours: u128, theirs: u128 },
    #[error("directional rule: dialer {dialer} may not dial acceptor {acceptor} (lower id dials)")]
    Direction {
        dialer: ReplicaId,
        acceptor: ReplicaId,
    },
    #[error("auth mode mismatch: ours {ours}, the peer's {theirs} (cluster.auth must match)")]
    AuthModeMismatch { ours: AuthMode, theirs: AuthMode },
    #[error("MAC mismatch from replica {peer}: another cluster.auth shared secret")]
    MacMismatch { peer: ReplicaId },
    #[error("replica {actual} answered where replica {expected} was dialed")]
    WrongPeer {
        expected: ReplicaId,
        actual: ReplicaId,
    },
    #[error("replica {peer} refused the handshake: {status}")]
    Refused { peer: ReplicaId, status: Status },
}

/// Whether the handshake proves knowledge of the PSK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AuthMode {
    Plaintext = 0,
    Psk = 1,
}

impl std::fmt::Display for AuthMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AuthMode::Plaintext => "no auth",
            AuthMode::Psk => "PSK",
        })
    }
}

/// What both roles share: who we are, and how we authenticate.
#[derive(Debug, Clone)]
pub struct HandshakeConfig {
    pub cluster: u128,
    pub local: ReplicaId,
    /// `None` without `cluster.auth`.
    pub psk: Option<PskKeys>,
    pub channel: ChannelBinding,
}

impl HandshakeConfig {
    fn mode(&self) -> AuthMode {
        if self.psk.is_some() {
            AuthMode::Psk
        } else {
            AuthMode::Plaintext
        }
    }
}

/// A handshake message's fields (the layout in the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fields {
    cluster: u128,
    command: u8,
    replica: ReplicaId,
    nonce: Nonce,
    mac: [u8; MAC_SIZE],
    status: u8,
    auth: u8,
}

impl Fields {
    fn encode(&self) -> HandshakeFrame {
        let mut h = [0u8; HEADER_SIZE];
        h[CHECKSUM_BODY..CHECKSUM_BODY + 16]
            .copy_from_slice(&u128::from(xxh3_64(&[])).to_le_bytes());
        h[CLUSTER..CLUSTER + 16].copy_from_slice(&self.cluster.to_le_bytes());
        h[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
        h[COMMAND_OFFSET] = self.command;
        h[REPLICA] = self.replica;
        h[NONCE..NONCE + NONCE_SIZE].copy_from_slice(&self.nonce);
        h[MAC..MAC + MAC_SIZE].copy_from_slice(&self.mac);
        h[STATUS] = self.status;
        h[AUTH] = self.auth;
        let seal = u128::from(xxh3_64(&h[SEALED_FROM..]));
        h[CHECKSUM..CHECKSUM + 16].copy_from_slice(&seal.to_le_bytes());
        h
    }

    /// Checks the seal, the command and the canonical form, then reads the
    /// fields. The cluster, ids and status are the caller's to judge.
    fn decode(bytes: &[u8], expected: u8) -> Result<Fields, HandshakeError> {
        let h: &HandshakeFrame = bytes
            .try_into()
            .map_err(|_| HandshakeError::Short { len: bytes.len() })?;
        let seal = u128::from(xxh3_64(&h[SEALED_FROM..]));
        if u128::from_le_bytes(h[CHECKSUM..CHECKSUM + 16].try_into().expect("16 bytes")) != seal {
            return Err(HandshakeError::BadSeal);
        }
        let command = h[COMMAND_OFFSET];
        if command != expected {
            return Err(HandshakeError::UnknownCommand { command, expected });
        }
        let fields = Fields {
            cluster: u128::from_le_bytes(h[CLUSTER..CLUSTER + 16].try_into().expect("16 bytes")),
            command,
            replica: h[REPLICA],
            nonce: h[NONCE..NONCE + NONCE_SIZE].try_into().expect("32 bytes"),
            mac: h[MAC..MAC + MAC_SIZE].try_into().expect("32 bytes"),
            status: h[STATUS],
            auth: h[AUTH],
        };
        // One encoding per message: anything the fields do not explain
        // (size, view, release, reserved bytes) must be as we would write it.
        let again = fields.encode();
        match (SEALED_FROM..HEADER_SIZE).find(|&i| again[i] != h[i]) {
            Some(offset) => Err(HandshakeError::Malformed { offset }),
            None => Ok(fields),
        }
    }

    fn auth_mode(&self) -> Result<AuthMode, HandshakeError> {
        match self.auth {
            0 => Ok(AuthMode::Plaintext),
            1 => Ok(AuthMode::Psk),
            _ => Err(HandshakeError::Malformed { offset: AUTH }),
        }
    }
}

/// The dialer after sending Hello, waiting for the Challenge.
#[derive(Debug)]
pub struct Dialer {
    config: HandshakeConfig,
    peer: ReplicaId,
    nonce_d: Nonce,
}

/// A dialer's successful end: the Finish to send (with auth) and the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialed {
    pub finish: Option<HandshakeFrame>,
    pub peer: ReplicaId,
}

impl Dialer {
    /// Starts dialing `peer`; returns the Hello to send. `nonce_d` must be
    /// fresh random bytes (ignored without auth).
    pub fn start(
        config: HandshakeConfig,
        peer: ReplicaId,
        nonce_d: Nonce,
    ) -> (Dialer, HandshakeFrame) {
        assert!(
            config.local < peer,
            "the lower id dials: {} -> {peer}",
            config.local
        );
        let nonce_d = if config.psk.is_some() {
            nonce_d
        } else {
            [0; NONCE_SIZE]
        };
        let hello = Fields {
            cluster: config.cluster,
            command: COMMAND_HELLO,
            replica: config.local,
            nonce: nonce_d,
            mac: [0; MAC_SIZE],
            status: 0,
            auth: config.mode() as u8,
        };
        let frame = hello.encode();
        (
            Dialer {
                config,
                peer,
                nonce_d,
            },
            frame,
        )
    }

    /// Judges the acceptor's Challenge.
    pub fn on_challenge(self, bytes: &[u8]) -> Result<Dialed, HandshakeError> {
        let c = Fields::decode(bytes, COMMAND_CHALLENGE)?;
        // A refusal first, so the log names the acceptor's reason even when
        // the roster sent us to the wrong node.
        let status =
            Status::from_u8(c.status).ok_or(HandshakeError::Malformed { offset: STATUS })?;
        if status != Status::Ok {
            return Err(HandshakeError::Refused {
                peer: self.peer,
                status,
            });
        }
        if c.replica != self.peer {
            return Err(HandshakeError::WrongPeer {
                expected: self.peer,
                actual: c.replica,
            });
        }
        if c.cluster != self.config.cluster {
            return Err(HandshakeError::ClusterMismatch {
                ours: self.config.cluster,
                theirs: c.cluster,
            });
        }
        let theirs = c.auth_mode()?;
        if theirs != self.config.mode() {
            return Err(HandshakeError::AuthModeMismatch {
                ours: self.config.mode(),
                theirs,
            });
        }
        let Some(keys) = &self.config.psk else {
            return Ok(Dialed {
                finish: None,
                peer: self.peer,
            });
        };
        let transcript = Transcript {
            config: &self.config,
            dialer: self.config.local,
            acceptor: self.peer,
            nonce_d: &self.nonce_d,
            nonce_a: &c.nonce,
        };
        if !keys.verifies(&transcript.message(DIRECTION_ACCEPTOR), &c.mac) {
            return Err(HandshakeError::MacMismatch { peer: self.peer });
        }
        let finish = Fields {
            cluster: self.config.cluster,
            command: COMMAND_FINISH,
            replica: self.config.local,
            nonce: [0; NONCE_SIZE],
            mac: transcript.sign(keys, DIRECTION_DIALER),
            status: 0,
            auth: 0,
        };
        Ok(Dialed {
            finish: Some(finish.encode()),
            peer: self.peer,
        })
    }
}

/// The acceptor, waiting for a Hello.
#[derive(Debug)]
pub struct Acceptor {
    config: HandshakeConfig,
    nonce_a: Nonce,
}

/// The acceptor's answer to a Hello: always a Challenge to send, then
/// either the next state or the refusal (close after sending).
#[derive(Debug)]
pub struct AcceptorStep {
    pub challenge: HandshakeFrame,
    pub next: Result<Accepted, HandshakeError>,
}

#[derive(Debug)]
pub enum Accepted {
    /// Without auth the link is up.
    Established(ReplicaId),
    /// With auth the dialer's Finish decides.
    AwaitFinish(Box<AwaitingFinish>),
}

impl Acceptor {
    /// `nonce_a` must be fresh random bytes (ignored without auth).
    pub fn new(config: HandshakeConfig, nonce_a: Nonce) -> Acceptor {
        let nonce_a = if config.psk.is_some() {
            nonce_a
        } else {
            [0; NONCE_SIZE]
        };
        Acceptor { config, nonce_a }
    }

    pub fn on_hello(self, bytes: &[u8]) -> AcceptorStep {
        match self.judge_hello(bytes) {
            Ok(hello) => self.admit(hello),
            Err((status, error)) => AcceptorStep {
                challenge: self.challenge(status, [0; MAC_SIZE]),
                next: Err(error),
            },
        }
    }

    /// The checks in the spec's order: command, cluster, direction; then
    /// ours, the auth mode.
    fn judge_hello(&self, bytes: &[u8]) -> Result<Fields, (Status, HandshakeError)> {
        let unknown = |e| (Status::UnknownCommand, e);
        let hello = Fields::decode(bytes, COMMAND_HELLO).map_err(unknown)?;
        let mode = hello.auth_mode().map_err(unknown)?;
        if hello.cluster != self.config.cluster {
            let e = HandshakeError::ClusterMismatch {
                ours: self.config.cluster,
                theirs: hello.cluster,
            };
            return Err((Status::ClusterMismatch, e));
        }
        if hello.replica >= self.config.local {
            let e = HandshakeError::Direction {
                dialer: hello.replica,
                acceptor: self.config.local,
            };
            return Err((Status::DirectionalRule, e));
        }
        if mode != self.config.mode() {
            let e = HandshakeError::AuthModeMismatch {
                ours: self.config.mode(),
                theirs: mode,
            };
            return Err((Status::AuthModeMismatch, e));
        }
        if mode == AuthMode::Plaintext && hello.nonce != [0; NONCE_SIZE] {
            return Err(unknown(HandshakeError::Malformed { offset: NONCE }));
        }
        Ok(hello)
    }

    fn admit(self, hello: Fields) -> AcceptorStep {
        let dialer = hello.replica;
        let Some(keys) = &self.config.psk else {
            let challenge = self.challenge(Status::Ok, [0; MAC_SIZE]);
            return AcceptorStep {
                challenge,
                next: Ok(Accepted::Established(dialer)),
            };
        };
        let transcript = Transcript {
            config: &self.config,
            dialer,
            acceptor: self.config.local,
            nonce_d: &hello.nonce,
            nonce_a: &self.nonce_a,
        };
        let mac_a = transcript.sign(keys, DIRECTION_ACCEPTOR);
        let expected = transcript.message(DIRECTION_DIALER);
        let challenge = self.challenge(Status::Ok, mac_a);
        let next = AwaitingFinish {
            keys: keys.clone(),
            cluster: self.config.cluster,
            dialer,
            expected,
        };
        AcceptorStep {
            challenge,
            next: Ok(Accepted::AwaitFinish(Box::new(next))),
        }
    }

    fn challenge(&self, status: Status, mac: [u8; MAC_SIZE]) -> HandshakeFrame {
        let ok = status == Status::Ok;
        Fields {
            cluster: self.config.cluster,
            command: COMMAND_CHALLENGE,
            replica: self.config.local,
            nonce: if ok { self.nonce_a } else { [0; NONCE_SIZE] },
            mac,
            status: status as u8,
            auth: self.config.mode() as u8,
        }
        .encode()
    }
}

/// An acceptor with auth that sent an Ok Challenge.
#[derive(Debug)]
pub struct AwaitingFinish {
    keys: PskKeys,
    cluster: u128,
    dialer: ReplicaId,
    /// The MAC message `mac_d` must sign.
    expected: [u8; MAC_MESSAGE_SIZE],
}

impl AwaitingFinish {
    /// Checks the dialer's Finish; the link is up with the returned peer.
    pub fn on_finish(self, bytes: &[u8]) -> Result<ReplicaId, HandshakeError> {
        let f = Fields::decode(bytes, COMMAND_FINISH)?;
        if f.cluster != self.cluster {
            return Err(HandshakeError::ClusterMismatch {
                ours: self.cluster,
                theirs: f.cluster,
            });
        }
        if f.replica != self.dialer {
            return Err(HandshakeError::WrongPeer {
                expected: self.dialer,
                actual: f.replica,
            });
        }
        if f.nonce != [0; NONCE_SIZE] || f.status != 0 || f.auth != 0 {
            return Err(HandshakeError::Malformed { offset: NONCE });
        }
        if !self.keys.verifies(&self.expected, &f.mac) {
            return Err(HandshakeError::MacMismatch { peer: self.dialer });
        }
        Ok(self.dialer)
    }
}
