//! The handshake stepped in memory: golden bytes of each message, both
//! roles against each other, and every refusal (replication spec §8).

use super::*;

const CLUSTER_ID: u128 = 0x0f0e_0d0c_0b0a_0908_0706_0504_0302_0100;
const SECRET_A: &[u8] = b"0123456789abcdef0123456789abcdef";
const SECRET_B: &[u8] = b"fedcba9876543210fedcba9876543210";
const NONCE_D: Nonce = [0xd1; 32];
const NONCE_A: Nonce = [0xa2; 32];

fn key(secret: &[u8]) -> MacKey {
    MacKey::derive(secret).expect("a 32-byte secret")
}

fn config(local: ReplicaId, current: Option<&[u8]>, previous: Option<&[u8]>) -> HandshakeConfig {
    HandshakeConfig {
        cluster: CLUSTER_ID,
        local,
        psk: current.map(|c| PskKeys {
            current: key(c),
            previous: previous.map(key),
        }),
        channel: ChannelBinding::Plaintext,
    }
}

fn plain(local: ReplicaId) -> HandshakeConfig {
    config(local, None, None)
}

fn psk(local: ReplicaId, secret: &[u8]) -> HandshakeConfig {
    config(local, Some(secret), None)
}

/// A handshake message built by hand from the documented layout.
fn golden(
    command: u8,
    replica: u8,
    nonce: &[u8; 32],
    mac: &[u8; 32],
    status: u8,
    auth: u8,
) -> [u8; 256] {
    let mut h = [0u8; 256];
    h[16..32].copy_from_slice(&u128::from(xxh3_64(&[])).to_le_bytes());
    h[32..48].copy_from_slice(&CLUSTER_ID.to_le_bytes());
    h[48..52].copy_from_slice(&256u32.to_le_bytes());
    h[60] = command;
    h[61] = replica;
    h[128..160].copy_from_slice(nonce);
    h[160..192].copy_from_slice(mac);
    h[192] = status;
    h[193] = auth;
    let seal = u128::from(xxh3_64(&h[16..]));
    h[0..16].copy_from_slice(&seal.to_le_bytes());
    h
}

/// The MAC of the documented 132-byte message, built by hand.
fn golden_mac(secret: &[u8], dialer: u8, acceptor: u8, direction: u8) -> [u8; 32] {
    let mut m = Vec::new();
    m.extend_from_slice(b"iggy-replica-mac");
    m.extend_from_slice(&CLUSTER_ID.to_le_bytes());
    m.extend_from_slice(&[dialer, acceptor]);
    m.extend_from_slice(&NONCE_D);
    m.extend_from_slice(&NONCE_A);
    m.push(0);
    m.extend_from_slice(&[0; 32]);
    m.push(direction);
    assert_eq!(m.len(), 132);
    let key = blake3::derive_key("iggy-server 2026-12 replica link handshake PSK", secret);
    *blake3::keyed_hash(&key, &m).as_bytes()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn given_psk_when_both_roles_step_should_match_golden_bytes_and_agree() {
    let (dialer, hello) = Dialer::start(psk(0, SECRET_A), 2, NONCE_D);
    assert_eq!(hello, golden(14, 0, &NONCE_D, &[0; 32], 0, 1));

    let step = Acceptor::new(psk(2, SECRET_A), NONCE_A).on_hello(&hello);
    let mac_a = golden_mac(SECRET_A, 0, 2, 2);
    assert_eq!(step.challenge, golden(15, 2, &NONCE_A, &mac_a, 0, 1));
    let Ok(Accepted::AwaitFinish(awaiting)) = step.next else {
        panic!("the acceptor waits for Finish: {:?}", step.next);
    };

    let dialed = dialer
        .on_challenge(&step.challenge)
        .expect("mac_a verifies");
    let mac_d = golden_mac(SECRET_A, 0, 2, 1);
    let finish = dialed.finish.expect("auth sends Finish");
    assert_eq!(finish, golden(16, 0, &[0; 32], &mac_d, 0, 0));
    assert_eq!(awaiting.on_finish(&finish), Ok(0));
}

#[test]
fn given_the_golden_transcript_should_pin_the_key_derivation_and_macs() {
    // Pinned so a change of context string, tag or field order shows.
    assert_eq!(hex(&golden_mac(SECRET_A, 0, 2, 2)), PINNED_MAC_A);
    assert_eq!(hex(&golden_mac(SECRET_A, 0, 2, 1)), PINNED_MAC_D);
    let hello = golden(14, 0, &NONCE_D, &[0; 32], 0, 1);
    assert_eq!(hex(&hello[..16]), PINNED_HELLO_SEAL);
}

const PINNED_MAC_A: &str = "c629aab60251341f0e3ca6de9353fad852264cd8b53fc6c2e0f6a1ba74bce6c8";
const PINNED_MAC_D: &str = "9b40bcd3a837117f33c3b0c2e06db8170bb909117c49a0ed364e25e53d620c49";
/// XXH3-64 seal, zero-extended to 16 bytes.
const PINNED_HELLO_SEAL: &str = "a01ab5841d6d1a7a0000000000000000";

#[test]
fn given_no_auth_when_both_roles_step_should_be_up_after_the_challenge() {
    let (dialer, hello) = Dialer::start(plain(1), 2, NONCE_D);
    assert_eq!(hello, golden(14, 1, &[0; 32], &[0; 32], 0, 0));
    let step = Acceptor::new(plain(2), NONCE_A).on_hello(&hello);
    assert_eq!(step.challenge, golden(15, 2, &[0; 32], &[0; 32], 0, 0));
    assert!(matches!(step.next, Ok(Accepted::Established(1))));
    assert_eq!(
        dialer.on_challenge(&step.challenge),
        Ok(Dialed {
            finish: None,
            peer: 2
        })
    );
}

/// The acceptor's refusal: its error, and what the dialer makes of the
/// Challenge it receives.
fn refused(
    dialer: HandshakeConfig,
    acceptor: HandshakeConfig,
    peer: ReplicaId,
) -> (HandshakeError, Result<Dialed, HandshakeError>) {
    let (d, hello) = Dialer::start(dialer, peer, NONCE_D);
    refused_hello(d, &hello, acceptor)
}

fn refused_hello(
    d: Dialer,
    hello: &[u8],
    acceptor: HandshakeConfig,
) -> (HandshakeError, Result<Dialed, HandshakeError>) {
    let step = Acceptor::new(acceptor, NONCE_A).on_hello(hello);
    let error = step.next.expect_err("refused");
    (error, d.on_challenge(&step.challenge))
}

#[test]
fn given_another_cluster_when_hello_arrives_should_refuse_with_cluster_mismatch() {
    let mut other = plain(2);
    other.cluster = 7;
    let (error, dialer) = refused(plain(0), other, 2);
    assert_eq!(
        error,
        HandshakeError::ClusterMismatch {
            ours: 7,
            theirs: CLUSTER_ID
        }
    );
    assert_eq!(
        dialer,
        Err(HandshakeError::Refused {
            peer: 2,
            status: Status::ClusterMismatch
        })
    );
}

#[test]
fn given_a_higher_dialer_when_hello_arrives_should_refuse_with_the_directional_rule() {
    // A dialer that believes it is 0 dialing 2, received by replica 0.
    let (error, dialer) = refused(plain(0), plain(0), 2);
    assert_eq!(
        error,
        HandshakeError::Direction {
            dialer: 0,
            acceptor: 0
        }
    );
    assert_eq!(
        dialer,
        Err(HandshakeError::Refused {
            peer: 2,
            status: Status::DirectionalRule
        })
    );
    let (d, _) = Dialer::start(plain(1), 2, NONCE_D);
    let hello_from_2 = golden(14, 2, &[0; 32], &[0; 32], 0, 0);
    let step = Acceptor::new(plain(1), NONCE_A).on_hello(&hello_from_2);
    assert_eq!(
        step.next.expect_err("refused"),
        HandshakeError::Direction {
            dialer: 2,
            acceptor: 1
        }
    );
    assert_eq!(step.challenge[192], Status::DirectionalRule as u8);
    let _ = d;
}

#[test]
fn given_a_frame_that_is_not_hello_when_it_arrives_should_refuse_as_unknown_command() {
    let (d, _) = Dialer::start(plain(0), 1, NONCE_D);
    let finish = golden(16, 0, &[0; 32], &[0; 32], 0, 0);
    let (error, dialer) = refused_hello(d, &finish, plain(1));
    assert_eq!(
        error,
        HandshakeError::UnknownCommand {
            command: 16,
            expected: 14
        }
    );
    assert_eq!(
        dialer,
        Err(HandshakeError::Refused {
            peer: 1,
            status: Status::UnknownCommand
        })
    );
}

#[test]
fn given_a_corrupt_hello_when_it_arrives_should_refuse_for_its_seal() {
    let (d, mut hello) = Dialer::start(plain(0), 1, NONCE_D);
    hello[200] ^= 1;
    let (error, dialer) = refused_hello(d, &hello, plain(1));
    assert_eq!(error, HandshakeError::BadSeal);
    assert_eq!(
        dialer,
        Err(HandshakeError::Refused {
            peer: 1,
            status: Status::UnknownCommand
        })
    );
}

#[test]
fn given_a_sealed_hello_with_reserved_bytes_set_should_refuse_it_as_malformed() {
    let mut hello = golden(14, 0, &[0; 32], &[0; 32], 0, 0);
    hello[220] = 1;
    let seal = u128::from(xxh3_64(&hello[16..]));
    hello[0..16].copy_from_slice(&seal.to_le_bytes());
    let step = Acceptor::new(plain(1), NONCE_A).on_hello(&hello);
    assert_eq!(
        step.next.expect_err("refused"),
        HandshakeError::Malformed { offset: 220 }
    );
}

#[test]
fn given_auth_on_one_side_only_should_refuse_with_auth_mode_mismatch() {
    let (error, dialer) = refused(plain(0), psk(1, SECRET_A), 1);
    assert_eq!(
        error,
        HandshakeError::AuthModeMismatch {
            ours: AuthMode::Psk,
            theirs: AuthMode::Plaintext
        }
    );
    assert_eq!(
        dialer,
        Err(HandshakeError::Refused {
            peer: 1,
            status: Status::AuthModeMismatch
        })
    );
}

#[test]
fn given_another_psk_when_the_challenge_arrives_should_fail_with_mac_mismatch() {
    let (dialer, hello) = Dialer::start(psk(0, SECRET_A), 1, NONCE_D);
    let step = Acceptor::new(psk(1, SECRET_B), NONCE_A).on_hello(&hello);
    assert!(step.next.is_ok(), "the acceptor cannot tell before Finish");
    assert_eq!(
        dialer.on_challenge(&step.challenge),
        Err(HandshakeError::MacMismatch { peer: 1 })
    );
}

#[test]
fn given_a_forged_finish_when_it_arrives_should_fail_with_mac_mismatch() {
    let (_, hello) = Dialer::start(psk(0, SECRET_A), 1, NONCE_D);
    let step = Acceptor::new(psk(1, SECRET_A), NONCE_A).on_hello(&hello);
    let Ok(Accepted::AwaitFinish(awaiting)) = step.next else {
        panic!("awaits Finish")
    };
    // A Finish signed under another key (the dialer never saw ours).
    let forged = golden(16, 0, &[0; 32], &golden_mac(SECRET_B, 0, 1, 1), 0, 0);
    assert_eq!(
        awaiting.on_finish(&forged),
        Err(HandshakeError::MacMismatch { peer: 0 })
    );
}

#[test]
fn given_a_reflected_challenge_mac_as_finish_should_fail_with_mac_mismatch() {
    let (_, hello) = Dialer::start(psk(0, SECRET_A), 1, NONCE_D);
    let step = Acceptor::new(psk(1, SECRET_A), NONCE_A).on_hello(&hello);
    let Ok(Accepted::AwaitFinish(awaiting)) = step.next else {
        panic!("awaits Finish")
    };
    let mac_a: [u8; 32] = step.challenge[160..192].try_into().expect("32 bytes");
    let reflected = golden(16, 0, &[0; 32], &mac_a, 0, 0);
    assert_eq!(
        awaiting.on_finish(&reflected),
        Err(HandshakeError::MacMismatch { peer: 0 })
    );
}

fn handshake_succeeds(dialer: HandshakeConfig, acceptor: HandshakeConfig) -> bool {
    let peer = acceptor.local;
    let (d, hello) = Dialer::start(dialer, peer, NONCE_D);
    let step = Acceptor::new(acceptor, NONCE_A).on_hello(&hello);
    let Ok(Accepted::AwaitFinish(awaiting)) = step.next else {
        return false;
    };
    let Ok(dialed) = d.on_challenge(&step.challenge) else {
        return false;
    };
    awaiting
        .on_finish(&dialed.finish.expect("auth sends Finish"))
        .is_ok()
}

#[test]
fn given_a_rolling_rotation_when_neighbouring_steps_meet_should_admit_each_other() {
    let (old, new) = (SECRET_A, SECRET_B);
    let steps = [
        config(0, Some(old), None),
        config(0, Some(old), Some(new)),
        config(0, Some(new), Some(old)),
        config(0, Some(new), None),
    ];
    let at = |c: &HandshakeConfig, local| HandshakeConfig { local, ..c.clone() };
    for pair in steps.windows(2) {
        assert!(handshake_succeeds(at(&pair[0], 0), at(&pair[1], 1)));
        assert!(handshake_succeeds(at(&pair[1], 0), at(&pair[0], 1)));
    }
    // Only the current key signs: a node that finished the roll no longer
    // admits one that never started it.
    assert!(!handshake_succeeds(at(&steps[0], 0), at(&steps[3], 1)));
    assert!(!handshake_succeeds(at(&steps[3], 0), at(&steps[0], 1)));
}

#[test]
fn given_tls_binding_when_signing_should_cover_mode_and_exporter() {
    let tls = |exporter| HandshakeConfig {
        channel: ChannelBinding::Tls { exporter },
        ..psk(0, SECRET_A)
    };
    let at1 = |c: HandshakeConfig| HandshakeConfig { local: 1, ..c };
    assert!(handshake_succeeds(tls([5; 32]), at1(tls([5; 32]))));
    assert!(!handshake_succeeds(tls([5; 32]), at1(tls([6; 32]))));
    assert!(!handshake_succeeds(tls([0; 32]), at1(psk(1, SECRET_A))));
}

#[test]
fn given_a_short_secret_should_derive_no_key() {
    assert!(MacKey::derive(&SECRET_A[..31]).is_none());
    assert_eq!(format!("{:?}", key(SECRET_A)), "MacKey(******)");
}
