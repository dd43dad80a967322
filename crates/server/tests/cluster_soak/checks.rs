//! The soak's final checks, once the producer stopped and the cluster is
//! whole: every node serves each partition alike and as `check_log` wants
//! it, holds the last acknowledged offset store of each partition (or a
//! later one whose outcome is unknown), and lists every acknowledged
//! stream and none never created. Each check is retried until it holds or
//! its deadline passes, so a node still catching up is waited for.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::Soak;
use super::load::{Ledger, Outcome, PARTITIONS, Sent, stream_name};
use super::probes::Log;
use crate::harness::cluster::NODES;

const FINAL_TIMEOUT: Duration = Duration::from_secs(120);

/// What the final checks covered.
pub struct Figures {
    messages_acked: usize,
    messages_unknown: usize,
    unknown_present: usize,
    stores_acked: usize,
    stores: usize,
    streams_acked: usize,
    streams: usize,
    failures: BTreeMap<String, u64>,
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "messages: {} acknowledged, each found once and in order on {NODES} nodes, \
             {} of {} unknown present; offset stores: {} acknowledged of {}, the last \
             held on {NODES} nodes; streams: {} acknowledged of {}, each on {NODES} nodes; \
             failed requests: {:?}",
            self.messages_acked,
            self.unknown_present,
            self.messages_unknown,
            self.stores_acked,
            self.stores,
            self.streams_acked,
            self.streams,
            self.failures
        )
    }
}

impl Soak {
    pub fn verify(&mut self) -> Figures {
        let ledger = self.ledger().clone();
        self.converge("final: one leader", FINAL_TIMEOUT, |soak| {
            let targets = soak.targets();
            soak.runtime
                .block_on(soak.sessions.agree_on_leader(&targets))
        });
        let mut unknown_present = 0;
        self.converge("final: every node's messages", FINAL_TIMEOUT, |soak| {
            unknown_present = soak.check_messages(&ledger)?;
            Ok(())
        });
        self.converge("final: every node's offsets", FINAL_TIMEOUT, |soak| {
            soak.check_offsets(&ledger)
        });
        self.converge("final: every node's streams", FINAL_TIMEOUT, |soak| {
            soak.check_streams(&ledger)
        });
        let acked = |outcomes: &mut dyn Iterator<Item = Outcome>| {
            outcomes.filter(|o| *o == Outcome::Acked).count()
        };
        let messages = || ledger.messages.iter().flatten().map(|s| s.outcome);
        let stores = || ledger.stores.iter().flatten().map(|s| s.1);
        Figures {
            messages_acked: acked(&mut messages()),
            messages_unknown: messages().count() - acked(&mut messages()),
            unknown_present,
            stores_acked: acked(&mut stores()),
            stores: stores().count(),
            streams_acked: acked(&mut ledger.streams.iter().copied()),
            streams: ledger.streams.len(),
            failures: ledger.failures.clone(),
        }
    }

    /// How many unknown messages are present, once every node serves each
    /// partition alike and as `check_log` wants it (a log that breaks its
    /// rules fails the test at once: waiting cannot mend it).
    fn check_messages(&mut self, ledger: &Ledger) -> Result<usize, String> {
        let mut unknown_present = 0;
        for partition in 0..PARTITIONS {
            let mut first: Option<(usize, Log)> = None;
            for target in self.targets() {
                let session = self.sessions.log_from(target, partition, 0);
                let log = self.runtime.block_on(session)?;
                let on = format!("node {}, partition {partition}", target.index);
                let present = match check_log(&log, partition, ledger) {
                    Ok(present) => present,
                    Err(LogFault::Behind(reason)) => return Err(format!("{on}: {reason}")),
                    Err(LogFault::Broken(reason)) => self.fail(&format!("{on}: {reason}")),
                };
                match &first {
                    None => {
                        unknown_present += present;
                        first = Some((target.index, log));
                    }
                    Some((other, theirs)) if *theirs != log => {
                        let (node, ours, theirs) = (target.index, log.len(), theirs.len());
                        return Err(format!(
                            "partition {partition}: node {node} serves {ours} messages, \
                             node {other} {theirs}, not the same"
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(unknown_present)
    }

    /// Whether every node holds, for each partition, the last acknowledged
    /// store of the consumer, or one issued after it whose outcome is
    /// unknown.
    fn check_offsets(&mut self, ledger: &Ledger) -> Result<(), String> {
        for partition in 0..PARTITIONS {
            let stores = &ledger.stores[partition as usize];
            let last_acked = stores.iter().rposition(|s| s.1 == Outcome::Acked);
            let mut allowed = vec![last_acked.map(|i| stores[i].0)];
            let later = &stores[last_acked.map_or(0, |i| i + 1)..];
            allowed.extend(later.iter().map(|s| Some(s.0)));
            let mut held = Vec::new();
            for target in self.targets() {
                let stored = self.sessions.stored_offset(target, partition);
                held.push(self.runtime.block_on(stored)?);
            }
            if held.iter().any(|h| !allowed.contains(h)) || held.windows(2).any(|w| w[0] != w[1]) {
                let recent = &stores[stores.len().saturating_sub(6)..];
                return Err(format!(
                    "partition {partition}: the nodes hold {held:?}, allowed {allowed:?} \
                     (the last stores: {recent:?})"
                ));
            }
        }
        Ok(())
    }

    /// Whether every node lists every acknowledged stream and nothing never
    /// created, all alike.
    fn check_streams(&mut self, ledger: &Ledger) -> Result<(), String> {
        let named = |only: Option<Outcome>| -> BTreeSet<String> {
            let streams = ledger.streams.iter().enumerate();
            let wanted = streams.filter(|(_, o)| only.is_none_or(|only| **o == only));
            wanted.map(|(i, _)| stream_name(i)).collect()
        };
        let acked = named(Some(Outcome::Acked));
        let mut possible = named(None);
        possible.insert("orders".to_owned());
        let mut lists = Vec::new();
        for target in self.targets() {
            let names = self.runtime.block_on(self.sessions.stream_names(target))?;
            if let Some(missing) = acked.difference(&names).next() {
                return Err(format!("node {} lacks stream {missing}", target.index));
            }
            if let Some(extra) = names.difference(&possible).next() {
                return Err(format!(
                    "node {} lists {extra}, never created",
                    target.index
                ));
            }
            lists.push(names);
        }
        if lists.windows(2).any(|w| w[0] != w[1]) {
            return Err(format!("the nodes list different streams: {lists:?}"));
        }
        Ok(())
    }
}

/// What is wrong with a node's log: it may still be catching up, or it
/// serves something no later commit can take back.
enum LogFault {
    Behind(String),
    Broken(String),
}

/// Checks one node's log of `partition` against what was sent to it:
/// offsets run 0, 1, 2, ...; each payload was sent to this partition and
/// appears once; every acknowledged one appears, in the order they were
/// acknowledged (their sequence order: the producer waits for each answer).
/// Returns how many unknown ones are present.
fn check_log(log: &[(u64, Vec<u8>)], partition: u32, ledger: &Ledger) -> Result<usize, LogFault> {
    let sent: &[Sent] = &ledger.messages[partition as usize];
    let prefix = format!("p{partition}-");
    let mut seen_at: Vec<Option<u64>> = vec![None; sent.len()];
    let mut last_acked: Option<usize> = None;
    for (position, (offset, bytes)) in log.iter().enumerate() {
        if *offset != position as u64 {
            let broken = format!("offset {offset} at position {position}");
            return Err(LogFault::Broken(broken));
        }
        let text = String::from_utf8_lossy(bytes);
        let seq = text
            .strip_prefix(&prefix)
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&seq| seq < sent.len())
            .ok_or_else(|| {
                LogFault::Broken(format!("offset {offset} holds {text:?}, never sent here"))
            })?;
        if let Some(first) = seen_at[seq].replace(*offset) {
            let message = ledger.describe(partition, seq);
            let broken = format!("{message} appears twice, at offsets {first} and {offset}");
            return Err(LogFault::Broken(broken));
        }
        if sent[seq].outcome == Outcome::Acked {
            if let Some(last) = last_acked.filter(|&last| last > seq) {
                return Err(LogFault::Broken(format!(
                    "{} at offset {offset} follows {}, acknowledged after it",
                    ledger.describe(partition, seq),
                    ledger.describe(partition, last)
                )));
            }
            last_acked = Some(seq);
        }
    }
    let acked = |seq: &usize| sent[*seq].outcome == Outcome::Acked;
    let mut missing = (0..sent.len())
        .filter(acked)
        .filter(|&seq| seen_at[seq].is_none());
    if let Some(first) = missing.next() {
        return Err(LogFault::Behind(format!(
            "{} acknowledged messages missing, the first {} (of {} served)",
            1 + missing.count(),
            ledger.describe(partition, first),
            log.len()
        )));
    }
    let present = (0..sent.len()).filter(|&seq| !acked(&seq) && seen_at[seq].is_some());
    Ok(present.count())
}
