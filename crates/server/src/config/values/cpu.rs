//! `CpuAllocation` (`system.sharding.cpu_allocation`): how many shards run
//! and on which CPUs. Forms: `"all"`, an integer N, `"a..b"` (CPUs a..b-1),
//! `"numa:auto"` (every NUMA node, physical cores only) and
//! `"numa:nodes=0,1;cores=4;no_ht=true"`.
//!
//! Resolution into CPU ids is pure: the caller passes the process's allowed
//! CPU set and, when it could read one ([`NumaTopology::read`]), the NUMA
//! topology. Without topology the NUMA forms fall back to every allowed CPU.

use std::fmt;

use serde::{Serialize, Serializer};
use thiserror::Error;

use super::numa::{NumaNode, NumaTopology};
use super::{ConfigText, ParseValueError, TextVisitor};

const EXPECTED: &str = "\"all\", a shard count N >= 1, a CPU range \"a..b\" with a < b, \"numa:auto\" \
     or \"numa:nodes=0,1;cores=4;no_ht=true\"";
const NUMA_PREFIX: &str = "numa:";
const NUMA_AUTO: &str = "auto";

/// The shard layout requested by the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CpuAllocation {
    /// One shard per allowed CPU.
    All,
    /// N shards on the first N allowed CPUs.
    Count(usize),
    /// One shard per CPU in `start..end`.
    Range { start: usize, end: usize },
    /// Shards on the CPUs of chosen NUMA nodes.
    Numa(NumaAllocation),
}

/// The NUMA form of [`CpuAllocation`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NumaAllocation {
    /// Chosen node ids; `None` means every node.
    pub nodes: Option<Vec<usize>>,
    /// Physical cores used per node; 0 means all of them.
    pub cores_per_node: usize,
    /// Use one hardware thread per physical core.
    pub avoid_hyperthreads: bool,
}

impl NumaAllocation {
    /// `numa:auto`: every node, every physical core, no hyperthread siblings.
    pub const AUTO: Self = Self {
        nodes: None,
        cores_per_node: 0,
        avoid_hyperthreads: true,
    };
}

/// Why a CPU allocation cannot be satisfied on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CpuAllocationError {
    #[error(
        "system.sharding.cpu_allocation asks for {requested} shards but only {available} CPUs are available"
    )]
    TooManyShards { requested: usize, available: usize },
    #[error(
        "system.sharding.cpu_allocation uses CPU {cpu}, which is not in this process's allowed CPU set {allowed:?}"
    )]
    CpuNotAllowed { cpu: usize, allowed: Vec<usize> },
    #[error(
        "system.sharding.cpu_allocation names NUMA node {node}, which does not exist (nodes: {present:?})"
    )]
    UnknownNumaNode { node: usize, present: Vec<usize> },
    #[error("system.sharding.cpu_allocation {allocation} selects no CPU")]
    NoCpus { allocation: String },
}

impl CpuAllocation {
    /// The CPU id of every shard, in shard order. `allowed` is the process's
    /// CPU set; membership is enforced only when `pin` is set, because an
    /// unpinned shard merely uses the id as a label.
    pub fn resolve(
        &self,
        allowed: &[usize],
        topology: Option<&NumaTopology>,
        pin: bool,
    ) -> Result<Vec<usize>, CpuAllocationError> {
        let mut allowed_sorted = allowed.to_vec();
        allowed_sorted.sort_unstable();
        allowed_sorted.dedup();
        let cpus = match self {
            Self::All => allowed_sorted.clone(),
            Self::Count(count) => {
                if *count > allowed_sorted.len() {
                    return Err(CpuAllocationError::TooManyShards {
                        requested: *count,
                        available: allowed_sorted.len(),
                    });
                }
                allowed_sorted[..*count].to_vec()
            }
            Self::Range { start, end } => {
                let cpus: Vec<usize> = (*start..*end).collect();
                if let Some(cpu) = cpus.iter().find(|cpu| pin && !allowed_sorted.contains(cpu)) {
                    return Err(CpuAllocationError::CpuNotAllowed {
                        cpu: *cpu,
                        allowed: allowed_sorted,
                    });
                }
                cpus
            }
            Self::Numa(numa) => match topology {
                Some(topology) => resolve_numa(numa, topology, &allowed_sorted)?,
                None => allowed_sorted.clone(),
            },
        };
        if cpus.is_empty() {
            return Err(CpuAllocationError::NoCpus {
                allocation: self.to_string(),
            });
        }
        Ok(cpus)
    }
}

fn resolve_numa(
    numa: &NumaAllocation,
    topology: &NumaTopology,
    allowed: &[usize],
) -> Result<Vec<usize>, CpuAllocationError> {
    let present: Vec<usize> = topology.nodes.iter().map(|node| node.id).collect();
    let chosen: Vec<&NumaNode> = match &numa.nodes {
        None => topology.nodes.iter().collect(),
        Some(ids) => ids
            .iter()
            .map(|id| {
                topology
                    .nodes
                    .iter()
                    .find(|node| node.id == *id)
                    .ok_or_else(|| CpuAllocationError::UnknownNumaNode {
                        node: *id,
                        present: present.clone(),
                    })
            })
            .collect::<Result<_, _>>()?,
    };
    let mut cpus = Vec::new();
    for node in chosen {
        let usable_cores = node.cores.iter().map(|threads| {
            threads
                .iter()
                .copied()
                .filter(|cpu| allowed.contains(cpu))
                .collect::<Vec<usize>>()
        });
        let usable_cores = usable_cores.filter(|threads| !threads.is_empty());
        let core_limit = if numa.cores_per_node == 0 {
            usize::MAX
        } else {
            numa.cores_per_node
        };
        for threads in usable_cores.take(core_limit) {
            let thread_count = if numa.avoid_hyperthreads {
                1
            } else {
                threads.len()
            };
            cpus.extend_from_slice(&threads[..thread_count]);
        }
    }
    Ok(cpus)
}

impl ConfigText for CpuAllocation {
    const EXPECTED: &'static str = EXPECTED;

    fn from_text(text: &str) -> Result<Self, ParseValueError> {
        let trimmed = text.trim();
        let error = |reason: &str| ParseValueError::new(text, reason, EXPECTED);
        if trimmed.eq_ignore_ascii_case("all") {
            return Ok(Self::All);
        }
        if let Some(spec) = trimmed.strip_prefix(NUMA_PREFIX) {
            return parse_numa(spec.trim())
                .map(Self::Numa)
                .map_err(|reason| error(&reason));
        }
        if let Some((start, end)) = trimmed.split_once("..") {
            let start: usize = start
                .trim()
                .parse()
                .map_err(|_| error("malformed range start"))?;
            let end: usize = end
                .trim()
                .parse()
                .map_err(|_| error("malformed range end"))?;
            if start >= end {
                return Err(error("the range start must be below its end"));
            }
            return Ok(Self::Range { start, end });
        }
        let count: i64 = trimmed
            .parse()
            .map_err(|_| error("unrecognised CPU allocation"))?;
        Self::from_integer(count).map_err(|inner| error(&inner.reason))
    }

    fn from_integer(value: i64) -> Result<Self, ParseValueError> {
        match usize::try_from(value) {
            Ok(count) if count >= 1 => Ok(Self::Count(count)),
            _ => Err(ParseValueError::new(
                &value.to_string(),
                "the shard count must be at least 1",
                EXPECTED,
            )),
        }
    }
}

fn parse_numa(spec: &str) -> Result<NumaAllocation, String> {
    if spec.eq_ignore_ascii_case(NUMA_AUTO) {
        return Ok(NumaAllocation::AUTO);
    }
    let mut numa = NumaAllocation {
        nodes: None,
        cores_per_node: 0,
        avoid_hyperthreads: false,
    };
    for part in spec
        .split(';')
        .map(str::trim)
        .filter(|part| !part.is_empty())
    {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("NUMA option {part:?} is not key=value"))?;
        let value = value.trim();
        match key.trim() {
            "nodes" => {
                let ids = value
                    .split(',')
                    .map(|id| id.trim().parse::<usize>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|_| format!("malformed NUMA node list {value:?}"))?;
                numa.nodes = Some(ids);
            }
            "cores" => {
                numa.cores_per_node = value
                    .parse()
                    .map_err(|_| format!("malformed core count {value:?}"))?;
            }
            "no_ht" => {
                numa.avoid_hyperthreads = value
                    .parse()
                    .map_err(|_| format!("malformed no_ht flag {value:?}"))?;
            }
            other => {
                return Err(format!(
                    "unknown NUMA option {other:?} (nodes, cores, no_ht)"
                ));
            }
        }
    }
    Ok(numa)
}

impl fmt::Display for CpuAllocation {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::All => formatter.write_str("all"),
            Self::Count(count) => write!(formatter, "{count}"),
            Self::Range { start, end } => write!(formatter, "{start}..{end}"),
            Self::Numa(numa) if *numa == NumaAllocation::AUTO => {
                write!(formatter, "{NUMA_PREFIX}{NUMA_AUTO}")
            }
            Self::Numa(numa) => {
                formatter.write_str(NUMA_PREFIX)?;
                if let Some(nodes) = &numa.nodes {
                    let ids: Vec<String> = nodes.iter().map(usize::to_string).collect();
                    write!(formatter, "nodes={};", ids.join(","))?;
                }
                write!(
                    formatter,
                    "cores={};no_ht={}",
                    numa.cores_per_node, numa.avoid_hyperthreads
                )
            }
        }
    }
}

impl std::str::FromStr for CpuAllocation {
    type Err = ParseValueError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::from_text(text)
    }
}

/// A count is written as a TOML integer, every other form as a string.
impl Serialize for CpuAllocation {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Count(count) => serializer.serialize_u64(*count as u64),
            other => serializer.collect_str(other),
        }
    }
}

impl<'de> serde::Deserialize<'de> for CpuAllocation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextVisitor::<Self>::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> CpuAllocation {
        text.parse().expect(text)
    }

    #[test]
    fn given_allocation_forms_when_parsing_should_round_trip() {
        let cases = [
            ("all", CpuAllocation::All),
            ("4", CpuAllocation::Count(4)),
            ("5..8", CpuAllocation::Range { start: 5, end: 8 }),
            ("numa:auto", CpuAllocation::Numa(NumaAllocation::AUTO)),
            (
                "numa:nodes=0,1;cores=4;no_ht=true",
                CpuAllocation::Numa(NumaAllocation {
                    nodes: Some(vec![0, 1]),
                    cores_per_node: 4,
                    avoid_hyperthreads: true,
                }),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), expected);
            assert_eq!(expected.to_string(), text);
        }
        for text in [
            "0",
            "-2",
            "8..5",
            "3..3",
            "numa:nodes=x",
            "numa:speed=9",
            "some",
        ] {
            assert!(text.parse::<CpuAllocation>().is_err(), "{text}");
        }
    }

    #[test]
    fn given_allowed_cpus_when_resolving_should_honour_each_form() {
        let allowed = [3, 1, 0, 2];
        let resolve = |text: &str, pin: bool| parse(text).resolve(&allowed, None, pin);
        assert_eq!(resolve("all", true), Ok(vec![0, 1, 2, 3]));
        assert_eq!(resolve("2", true), Ok(vec![0, 1]));
        assert_eq!(resolve("1..3", true), Ok(vec![1, 2]));
        assert_eq!(resolve("numa:auto", true), Ok(vec![0, 1, 2, 3]));
        assert_eq!(
            resolve("5", true),
            Err(CpuAllocationError::TooManyShards {
                requested: 5,
                available: 4
            })
        );
        assert!(matches!(
            resolve("2..6", true),
            Err(CpuAllocationError::CpuNotAllowed { cpu: 4, .. })
        ));
        assert_eq!(resolve("2..6", false), Ok(vec![2, 3, 4, 5]));
    }

    #[test]
    fn given_numa_topology_when_resolving_should_pick_nodes_cores_and_threads() {
        let topology = NumaTopology {
            nodes: vec![
                NumaNode {
                    id: 0,
                    cores: vec![vec![0, 4], vec![1, 5]],
                },
                NumaNode {
                    id: 1,
                    cores: vec![vec![2, 6], vec![3, 7]],
                },
            ],
        };
        let allowed: Vec<usize> = (0..8).collect();
        let resolve = |text: &str| parse(text).resolve(&allowed, Some(&topology), true);
        assert_eq!(resolve("numa:auto"), Ok(vec![0, 1, 2, 3]));
        assert_eq!(resolve("numa:nodes=1;cores=1;no_ht=false"), Ok(vec![2, 6]));
        assert_eq!(resolve("numa:nodes=0;cores=0;no_ht=true"), Ok(vec![0, 1]));
        assert!(matches!(
            resolve("numa:nodes=3"),
            Err(CpuAllocationError::UnknownNumaNode { node: 3, .. })
        ));
    }
}
